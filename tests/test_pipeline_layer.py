"""#64: one pipeline under both doors. The experiments reach the library's stage entry points (training,
retrieval, fusion, evaluation, averaging, diagnostics) through ``seedr.pipeline`` only, as the command line and
the Python API do, so that what an experiment records is what a user running the same stages gets."""

from __future__ import annotations

import ast
from pathlib import Path

import seedr

PACKAGE = Path(seedr.__file__).parent

#: The library's stage entry points: what a pipeline stage's run calls to do its job, by module.
ENTRY_POINTS = {
    "seedr.training.pretrain": {"pretrain"},
    "seedr.training.finetune": {"finetune"},
    "seedr.training.adapt": {"run_adapt"},
    "seedr.retrieval.encode": {"TextEncoder", "encode_corpus_to_shards"},
    "seedr.retrieval.faiss_index": {"DenseIndex"},
    "seedr.retrieval.search": {"search_text"},
    "seedr.retrieval.bm25": {"BM25Index"},
    "seedr.retrieval.embeddings": {"load_embeddings"},
    "seedr.retrieval.fusion": {"choose_fusion", "fuse", "write_fused_run"},
    "seedr.evaluation.compare": {"comparison_table"},
    "seedr.evaluation.development": {"development_task"},
    "seedr.modeling.averaging": {"average_encoders", "checkpoint_encoders"},
    "seedr.diagnostics.diagnose": {"diagnose", "write_diagnostics"},
    "seedr.negatives": {"ance_refresh"},
}


def entry_point_imports(root: Path) -> list[str]:
    """``path:line module.name`` of every import of an entry point under ``root``, at any depth."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in ENTRY_POINTS:
                found += [f"{path.relative_to(root.parent)}:{node.lineno} {node.module}.{alias.name}"
                          for alias in node.names if alias.name in ENTRY_POINTS[node.module]]
            elif isinstance(node, ast.Import):
                found += [f"{path.relative_to(root.parent)}:{node.lineno} {alias.name}" for alias in node.names
                          if alias.name in ENTRY_POINTS]
    return found


def test_the_experiments_reach_the_stages_through_the_pipeline():
    assert entry_point_imports(PACKAGE / "experiments") == []


def test_the_pipeline_is_where_the_entry_points_are_called():
    """The table names what the pipeline's runs really call (a renamed entry point would leave it checking
    nothing)."""
    called = {entry.split(" ")[1] for entry in entry_point_imports(PACKAGE / "pipeline")}
    expected = {f"{module}.{name}" for module, names in ENTRY_POINTS.items() for name in names}
    assert called >= expected, expected - called


def test_the_check_finds_an_entry_point_imported_inside_a_function(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "step.py").write_text(
        "def run():\n    from seedr.training.finetune import finetune\n    return finetune\n")
    assert entry_point_imports(tmp_path / "experiments") == ["experiments/step.py:2 seedr.training.finetune.finetune"]


def test_an_experiment_s_diagnose_step_is_seedr_diagnose(wiki_shard, tmp_path):
    from seedr.experiments.steps import build_step

    options = {"max_documents": 8, "lengths": [16], "pairs": 4, "word_texts": 0, "reliance_texts": 0, "seed": 3}
    step = build_step("diagnose", {"model": "minilm", "corpus": [str(wiki_shard)], **options}, "test")
    (tmp_path / "step").mkdir()
    metrics = step.run(tmp_path / "step")["metrics"]
    assert (tmp_path / "step" / "diagnostics.json").is_file() and metrics
    assert metrics == seedr.diagnose("minilm", tmp_path / "command", corpus=wiki_shard, **options).metrics
