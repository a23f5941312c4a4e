"""Fuzzing every reader and loader (issue 46): random and adversarial bytes, not only damaged real files.

``test_malformed_input`` damages real files at random (truncated, bytes changed, lines dropped or doubled, a
field of another type, compressed then cut, a folder for a file); its samples, readers and damage are
reused here, and extended with what an adversary or a careless tool writes: random bytes, a byte-order
mark, NUL bytes, nesting past Python's recursion limit (JSON and YAML), numbers past what floats and
Python's integer conversion hold, code-running payloads (YAML Python tags, a model folder whose
``auto_map`` names a Python file beside it), compression under upper-case suffixes — fed to the readers of
corpora, queries, qrels and TREC runs, run records, experiment files, recipes, and model folders'
``config.json``, ``tokenizer.json`` and ``tokenizer_config.json``.

Each reader either reads the bytes or raises one of the errors the command line reports in one line
(``DataError``, ``ValueError``, ``FileNotFoundError``) with a one-line message; nothing is written (the
folder of its input and the working directory are as they were); and no code runs (every payload would
create a marker file). Bounded: 50 cases per reader, the whole file in well under a minute, the same cases
at every run (the ``repeatable`` profile of ``tests/conftest.py``), after the attacks that once broke a reader (``FOUND``);
the ``slow`` variant explores 500 fresh ones per reader.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from test_malformed_input import READERS, Sample, damage, samples, write_damaged  # noqa: F401 (samples: a fixture)

from seedr.config.loading import read_recipe
from seedr.data.corpus import read_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.runs import (
    check_run_queries,
    queries_record,
    read_run_record,
    read_trec_run,
    write_run_and_record,
)
from seedr.experiments.spec import experiment_path, load_experiment
from seedr.io import DataError
from seedr.modeling.encoder import load_tokenizer, resolve_model_path
from seedr.recipes import recipe_path
from seedr.retrieval.fusion import component_entry, fused_components

EXAMPLES = 50
#: Cases per reader of the ``slow`` exploring run, drawn afresh each time.
EXPLORING = 500
#: What the command line turns into one ``error:`` line (``seedr.stages.common.clear_errors``; a missing
#: model folder is reported the same way by the stages that load one).
ONE_LINE_ERRORS = (DataError, KeyError, ValueError, FileNotFoundError)  # KeyError: an unknown registry name

BOM = b"\xef\xbb\xbf"
#: Numbers no float or (by default) no Python integer conversion holds, and their spellings in JSON.
HUGE_NUMBERS = [b"1e999", b"-1e999", b"NaN", b"Infinity", b"-Infinity", b"9" * 5000, b"1" + b"0" * 400,
                b"18446744073709551616", b"-0", b"1e-999"]
#: Nesting depths past Python's recursion limit: just past it, and far past it (JSON; YAML, whose parser
#: recurses several frames a level, fails at a few hundred).
DEPTHS = [1_100, 200_000]
_COMPRESS = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}
#: The small files of a model folder that ``load_tokenizer`` and ``resolve_model_path`` read (no weights).
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def payloads(marker: Path) -> list[bytes]:
    """Lines that would create ``marker`` if anything ran them: YAML Python tags, a model configuration
    whose ``auto_map`` names the ``evil.py`` beside it, shell and Python spelled as data."""
    quoted = json.dumps(str(marker))
    return [
        f"!!python/object/apply:pathlib.Path.touch [{quoted}]\n".encode(),
        f"x: !!python/object/apply:os.system [{json.dumps(f'touch {marker}')}]\n".encode(),
        f"x: !!python/object/new:pathlib.Path [{quoted}]\n".encode(),
        b"x: !!python/name:os.system\n",
        json.dumps({"model_type": "evil", "auto_map": {"AutoConfig": "evil.EvilConfig",
                                                      "AutoModel": "evil.EvilModel"}}).encode() + b"\n",
        json.dumps({"tokenizer_class": "EvilTokenizer",
                    "auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}}).encode() + b"\n",
        json.dumps({"_id": f"$(touch {marker})", "text": f"__import__('pathlib').Path({quoted}).touch()"}).encode()
        + b"\n",
        f"$(touch {marker})\t`touch {marker}`\n".encode(),
    ]


def evil_module(marker: Path) -> str:
    """A model folder's own Python file: importing it creates ``marker``."""
    return (f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
            "from transformers import BertConfig, BertModel, BertTokenizerFast\n"
            "class EvilConfig(BertConfig):\n    model_type = 'evil'\n"
            "class EvilModel(BertModel):\n    config_class = EvilConfig\n"
            "class EvilTokenizer(BertTokenizerFast):\n    pass\n")


def _deep(depth: int, kind: str) -> bytes:
    """Arrays or objects ``depth`` deep, as JSON (and YAML's flow style) writes them."""
    return b"[" * depth + b"]" * depth if kind == "array" else b'{"a": ' * depth + b"1" + b"}" * depth


def _with_huge_number(line: bytes, number: bytes, at: int) -> bytes:
    """``line`` with one of its numbers or quoted strings (the ``at``-th, cyclically) replaced by ``number``."""
    spans = [match.span() for match in re.finditer(rb'\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"', line)]
    if not spans:
        return number + b"\n"
    start, end = spans[at % len(spans)]
    return line[:start] + number + line[end:]


@st.composite
def adversarial(draw, sample: Sample, marker: Path, compressible: bool) -> tuple[str, bytes | None]:
    """``(file name, bytes)``: ``sample`` attacked one way (``None``: a folder in place of the file)."""
    data, name = sample.data, sample.name
    lines = data.splitlines(keepends=True) or [b""]
    at = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["random", "truncate", "bom", "nul", "deep", "huge", "payload", "damage"]))
    if how == "random":
        data = draw(st.binary(max_size=1024))
    elif how == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "bom":
        lines[at] = BOM * draw(st.integers(1, 2)) + lines[at]  # the first line's is read past, later ones are data
        data = b"".join(lines)
    elif how == "nul":
        position = draw(st.integers(0, len(data)))
        data = data[:position] + b"\0" * draw(st.integers(1, 3)) + data[position:]
    elif how == "deep":
        lines[at] = _deep(draw(st.sampled_from(DEPTHS)), draw(st.sampled_from(["array", "object"]))) + b"\n"
        data = b"".join(lines)
    elif how == "huge":
        lines[at] = _with_huge_number(lines[at], draw(st.sampled_from(HUGE_NUMBERS)), draw(st.integers(0, 8)))
        data = b"".join(lines)
    elif how == "payload":
        lines.insert(at, draw(st.sampled_from(payloads(marker))))
        data = b"".join(lines[at:at + 1] if draw(st.booleans()) else lines)  # alone, or among the real lines
    else:
        name, data = draw(damage(sample))
    if compressible and data is not None and draw(st.integers(0, 3)) == 0:
        suffix = draw(st.sampled_from([".gz", ".xz", ".bz2", ".GZ", ".Xz"]))
        name, data = name + suffix, _COMPRESS[suffix.lower()](data)
    return name, data


def _replaced(old: bytes, new: bytes) -> Callable[[Sample], tuple[str, bytes]]:
    """An attack: the sample with ``old`` (which it holds) replaced by ``new``."""

    def attack(sample: Sample) -> tuple[str, bytes]:
        assert old in sample.data, (sample.name, old)
        return sample.name, sample.data.replace(old, new, 1)

    return attack


def _appended(line: bytes) -> Callable[[Sample], tuple[str, bytes]]:
    """An attack: the sample with ``line`` after its last line."""
    return lambda sample: (sample.name, sample.data.rstrip(b"\n") + b"\n" + line)


def _in_first_line(number: bytes) -> Callable[[Sample], tuple[str, bytes]]:
    """An attack: the sample with the second number or string of its first line (a JSON line's first value,
    after its key) replaced by ``number``."""

    def attack(sample: Sample) -> tuple[str, bytes]:
        first, _, rest = sample.data.partition(b"\n")
        return sample.name, _with_huge_number(first, number, 1) + b"\n" + rest

    return attack


_DEEP_YAML = _appended(_deep(DEPTHS[0], "array") + b"\n")
_UNCLOSED_QUOTE = _appended(b'broken: "a quoted string never closed\n')
_TOO_MANY_DIGITS = _in_first_line(b"9" * 5000)
#: Attacks this test found that broke a reader (each fixed since), by reader: tried first, at every run, as
#: explicit examples, so that a regression fails whatever the draw. ``retrieve: bm1e-999`` (a mistyped bm25)
#: was an AttributeError (tests/test_untrusted_experiments.py has its own test); a setting of hundreds of
#: digits overflowed float(); YAML nested past the stack was a RecursionError and PyYAML's messages spanned
#: lines ("while scanning a quoted scalar\n  in ..."); JSON integers of more digits than Python converts were
#: a bare ValueError; a model's dropout probability of hundreds of digits overflowed ``math.isfinite``.
FOUND: dict[str, list[Callable[[Sample], tuple[str, bytes]]]] = {
    "experiment": [_replaced(b"{retrieve: bm25}", b"{retrieve: bm1e-999}"),
                   _replaced(b"pretrain_steps: 80", b"pretrain_steps: 1" + b"0" * 400), _DEEP_YAML, _UNCLOSED_QUOTE],
    "recipe": [_DEEP_YAML, _UNCLOSED_QUOTE],
    "corpus": [_TOO_MANY_DIGITS],
    "queries": [_TOO_MANY_DIGITS],
    "run record": [_TOO_MANY_DIGITS],
    "model config.json": [_replaced(b'"attention_probs_dropout_prob": 0.1', b'"attention_probs_dropout_prob": 1'
                                    + b"0" * 400)],
}


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (``None``) under ``folder``, by relative name."""
    return {str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
            for path in sorted(folder.rglob("*"))}


# ------------------------------------------------------------------ the readers and what they read

@pytest.fixture(scope="module")
def marker(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("marker") / "code-ran"


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory, marker) -> Path:
    """A copy of MiniLM's configuration and tokenizer files (no weights), beside a Python file of its own."""
    folder = tmp_path_factory.mktemp("model") / "model"
    folder.mkdir()
    source = resolve_model_path("minilm")
    for name in MODEL_FILES:
        shutil.copy(source / name, folder / name)
    (folder / "evil.py").write_text(evil_module(marker))
    return folder


@pytest.fixture(scope="module")
def components(samples, tmp_path_factory) -> tuple[Path, Path]:  # noqa: F811 (the imported fixture)
    """Two runs a fused run's record names as its components (read, never written, by the loader)."""
    folder = tmp_path_factory.mktemp("components")
    return (write_damaged(folder, "a.trec", samples["run"].data),
            write_damaged(folder, "b.trec", samples["run"].data.replace(b" bm25\n", b" other\n")))


def _record_reader(queries: dict[str, str]) -> Callable[[Path], object]:
    """Every reader of a run's record (``<run>.json`` beside ``run.trec``)."""

    def read(path: Path) -> object:
        run = path.with_name(path.name.removesuffix(".json"))
        return read_run_record(run), check_run_queries(run, queries, "the queries"), fused_components(run)

    return read


@pytest.fixture(scope="module")
def targets(samples, model_folder, components, tmp_path_factory) -> dict[str, tuple[Sample, Callable, dict]]:  # noqa: F811
    """``{kind: (sample, reader, files)}``: the reader takes the path of the attacked sample, written among
    ``files`` (``{name: bytes}``: what else its folder holds)."""
    folder = tmp_path_factory.mktemp("records")
    corpus = [json.loads(line) for line in samples["corpus"].data.splitlines()]
    queries = {record["_id"]: record["text"] for record in map(json.loads, samples["queries"].data.splitlines())}
    qrels = [line.split(b"\t") for line in samples["qrels"].data.splitlines()[1:]]
    run_file = write_damaged(folder, "run.trec", samples["run"].data)
    run = read_trec_run(run_file)
    write_run_and_record(folder / "searched.trec", run, queries_record(queries, "queries", ["queries.jsonl"]))
    fused = {**queries_record(queries, "queries", ["queries.jsonl"]),
             "fusion": {"method": "rrf", "weights": [0.5, 0.5], "rrf_k": 60, "depth": 3,
                        "components": [component_entry(path, read_trec_run(path)) for path in components]}}
    write_run_and_record(folder / "fused.trec", run, fused)
    record_files = {"run.trec": (folder / "searched.trec").read_bytes()}
    model_files = {name: (model_folder / name).read_bytes() for name in (*MODEL_FILES, "evil.py")}

    def model(path: Path) -> object:
        return resolve_model_path(path.parent), load_tokenizer(path.parent)

    found = {kind: (samples[kind], reader, {}) for kind, reader in READERS.items()}
    found.update({
        "corpus tsv": (Sample("collection.tsv", "".join(f"{r['_id']}\t{r['text']}\n" for r in corpus).encode()),
                       lambda path: list(read_corpus(path)), {}),
        "queries tsv": (Sample("queries.tsv", "".join(f"{q}\t{t}\n" for q, t in queries.items()).encode()),
                        read_queries, {}),
        "qrels trec": (Sample("qrels.txt", b"".join(b"%s 0 %s %s\n" % tuple(line) for line in qrels)), read_qrels, {}),
        "run record": (Sample("run.trec.json", (folder / "searched.trec.json").read_bytes()),
                       _record_reader(queries), record_files),
        "fused run record": (Sample("run.trec.json", (folder / "fused.trec.json").read_bytes()),
                             _record_reader(queries), {"run.trec": (folder / "fused.trec").read_bytes()}),
        "experiment": (Sample("fuzz.yaml", experiment_path("demo").read_bytes()), load_experiment, {}),
        "recipe": (Sample("recipe.yaml", recipe_path("dpr", "finetune").read_bytes()), read_recipe, {}),
        **{f"model {name}": (Sample(name, model_files[name]), model,
                             {other: data for other, data in model_files.items() if other != name})
           for name in ("config.json", "tokenizer.json", "tokenizer_config.json")},
    })
    return found


#: Readers of files whose name is fixed (a record beside its run, a model folder's files, YAML read as
#: text): the attack never compresses them.
_FIXED_NAMES = ("run record", "fused run record", "experiment", "recipe", "model config.json", "model tokenizer.json",
                "model tokenizer_config.json")
KINDS = sorted([*READERS, "corpus tsv", "queries tsv", "qrels trec", *_FIXED_NAMES])


def _attack_reader(kind: str, targets: dict, marker: Path, examples: int, explore: bool) -> dict[str, int]:
    """Feed ``kind``'s reader the attacks of ``FOUND``, then ``examples`` drawn ones: the same at every run,
    or fresh ones (``explore``: the profiles of ``tests/conftest.py``); how many it read and refused."""
    sample, reader, neighbours = targets[kind]
    outcomes = {"read": 0, "refused": 0}

    # no shrinking: a failure is reported as found, so that a failing reader costs seconds, not minutes
    @settings(settings.get_profile("explore") if explore else None, max_examples=examples, deadline=None,
              database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(attack=adversarial(sample, marker, compressible=kind not in _FIXED_NAMES))
    def check(attack: tuple[str, bytes | None]) -> None:
        name, data = attack
        with tempfile.TemporaryDirectory() as root:
            root = Path(root)
            folder, cwd = root / "input", root / "cwd"
            folder.mkdir()
            cwd.mkdir()
            for other, content in neighbours.items():
                (folder / other).write_bytes(content)
            path = write_damaged(folder, name, data)
            before = _tree(root)
            here = os.getcwd()
            os.chdir(cwd)
            try:
                reader(path)
            except ONE_LINE_ERRORS as error:
                assert "\n" not in str(error).strip(), f"{kind}: {type(error).__name__} over several lines: {error}"
                outcomes["refused"] += 1
            else:
                outcomes["read"] += 1
            finally:
                os.chdir(here)
            assert _tree(root) == before, f"{kind}: the reader wrote beside its input or in the working directory"
            assert not marker.exists(), f"{kind}: code in the input ran"

    for found in FOUND.get(kind, []):
        check = example(attack=found(sample))(check)
    check()
    assert sum(outcomes.values()) >= examples // 2
    return outcomes


@pytest.mark.parametrize("kind", KINDS)
def test_a_reader_reads_attacked_bytes_or_refuses_them_in_one_line(kind, targets, marker, capsys):
    outcomes = _attack_reader(kind, targets, marker, EXAMPLES, explore=False)
    with capsys.disabled():
        print(f"\n{kind}: {outcomes['read']} attacked files read, {outcomes['refused']} refused in one line", end="")


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_reader_reads_attacked_bytes_or_refuses_them_in_one_line_exploring(kind, targets, marker, capsys):
    outcomes = _attack_reader(kind, targets, marker, EXPLORING, explore=True)
    with capsys.disabled():
        print(f"\n{kind}: {outcomes['read']} fresh attacked files read, {outcomes['refused']} refused in one line",
              end="")


def test_every_run_draws_the_same_attacks(targets, marker):
    """The default run is repeatable: two draws of the same test give the same attacks, so that a failure
    in CI is the change's, and happens again on the developer's machine."""
    sample = targets["corpus"][0]

    def draws() -> list:
        drawn = []

        @settings(max_examples=10, database=None, phases=[Phase.generate])
        @given(attack=adversarial(sample, marker, compressible=True))
        def record(attack) -> None:
            drawn.append(attack)

        record()
        return drawn

    assert draws() == draws()


def test_the_attacks_once_found_still_fit_their_samples(targets):
    """Every attack of ``FOUND`` fits its sample (the real file it damages is still the one it was found on)
    and changes it."""
    for kind, attacks in FOUND.items():
        sample = targets[kind][0]
        for attack in attacks:
            name, data = attack(sample)
            assert name == sample.name and data != sample.data, kind
