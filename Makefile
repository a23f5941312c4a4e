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

test: $(VENV)/.installed
	$(PY) -m pytest

test-slow: $(VENV)/.installed
	$(PY) -m pytest -m slow

# Speed ratios, each measured within one run (see bench/*.py docstrings).
bench: $(VENV)/.installed
	for script in bench/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

.PHONY: install demo test test-slow bench
