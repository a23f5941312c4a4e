# The two set-up commands of the README: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q -c constraints.txt

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/seedr demo

# Two workers: the machines this runs on have two cores, and each test's torch runs one thread
# (tests/conftest.py), so the suite takes about 0.6 of its serial time. A file's tests stay on one worker,
# in order: some build on what an earlier test of their file wrote (tests/test_stage_parity.py).
test: $(VENV)/.installed
	$(PY) -m pytest -n 2 --dist loadfile

# The slow tier (not yet in .ci/run: DEVELOPERS.md says why): its tests one by one on two workers (none builds on what
# another wrote). SEEDR_TEST_SEED (CI sets it) makes what they draw at random the same every run: the exploring
# property tests' cases (hypothesis) and the moments kills land (tests/conftest.py).
test-slow: $(VENV)/.installed
	$(PY) -m pytest -m slow -n 2 --dist load $(if $(SEEDR_TEST_SEED),--hypothesis-seed=$(SEEDR_TEST_SEED))

# seedr against what users would otherwise run, each comparison within one run (bench/*.py docstrings);
# writes docs/bench/results.md and results.json (53 minutes on the 2-core AVX2 CPU, float32).
bench: $(VENV)/.installed
	$(PY) bench/run.py
	$(PY) bench/bench_significance.py --out docs/bench/significance.md

.PHONY: install demo test test-slow bench
