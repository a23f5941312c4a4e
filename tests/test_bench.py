"""The benchmarks of ``bench/`` (``make bench``) run end to end at a tiny size and write well-formed
results. No timing is asserted: at this size the numbers mean nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
SECTIONS = ["pretrain", "finetune", "encode", "ceiling", "search", "memory", "int8", "index_scale", "help"]


def test_every_benchmark_runs_at_tiny_size_and_writes_well_formed_results(tmp_path: Path, shared_data: Path) -> None:
    out = tmp_path / "results"
    result = subprocess.run([sys.executable, "bench/run.py", "--size", "tiny", "--threads", "1", "--out", str(out)],
                            cwd=REPOSITORY, capture_output=True, text=True, check=False,
                            env={**os.environ, "SEEDR_SHARED_DATA": str(shared_data)})
    assert result.returncode == 0, result.stderr[-4000:]

    payload = json.loads((out / "results.json").read_text())
    markdown = (out / "results.md").read_text()
    environment = payload["environment"]
    assert environment["cpu"] and environment["date"] and environment["threads"] == 1
    for library in ("torch", "transformers", "sentence-transformers", "faiss-cpu", "bm25s"):
        assert environment["versions"][library] != "not installed"
        assert f"{library} {environment['versions'][library]}" in markdown
    assert f"(`lscpu` model name): {environment['cpu']}" in markdown
    assert payload["command"].startswith("python bench/run.py --size tiny")

    sections = {section["key"]: section for section in payload["sections"]}
    assert list(sections) == SECTIONS
    for section in sections.values():
        assert section["setup"] and section["tables"] and section["seconds"] > 0
        assert f"## {section['title']}" in markdown
        for table in section["tables"]:
            assert table["rows"]
            for row in table["rows"]:
                assert len(row) == len(table["columns"])
                assert "| " + " | ".join(row) + " |" in markdown  # the Markdown is generated from the JSON
        for goal in section["goals"]:
            assert goal["status"] == {True: "met", False: "MISSED", None: "not measured"}[goal["met"]]
            assert f"| {section['title']} | {goal['goal']} | {goal['measured']} | {goal['status']} |" in markdown
    # every goal of the issue has its row
    assert len(sections["pretrain"]["goals"]) == 3
    assert len(sections["ceiling"]["goals"]) == 3 and len(sections["encode"]["goals"]) == 2  # float32 and bf16
    profiles = sections["ceiling"]["data"]["profile_seconds"]  # one profiled training step per precision
    assert set(profiles) == {"float32", "bf16"}
    assert all(profile["matrix products"] > 0 and sum(profile.values()) > 0 for profile in profiles.values())
    assert len(sections["finetune"]["goals"]) == len(sections["search"]["goals"]) == len(sections["int8"]["goals"]) == 1
    assert len(sections["memory"]["goals"]) == 1 and len(sections["index_scale"]["goals"]) == 2

    # what the numbers stand on: the systems compared and real data
    rates = sections["pretrain"]["data"]["tiny"]["tokens_per_second"]
    assert {"HF loop", "HF Trainer", "seedr mlm", "seedr seed (span 2)", "seedr seed (span all)",
            "seedr cpdae"} <= set(rates)
    assert all(rate > 0 for rate in rates.values())
    assert set(sections["pretrain"]["data"]["decoder"]) == {"banded", "dense"}
    assert sections["encode"]["data"]["float32_max_difference"] <= 1e-4  # outputs checked equal
    assert sections["encode"]["data"]["tokens_per_passage"] > 50  # 100-word wiki passages
    int8 = sections["int8"]["data"]
    assert set(int8["passages_per_second"]) == {"seedr", "int8"} and int8["cosine_min"] > 0.9  # the same vectors
    dense = sections["search"]["data"]["dense"]
    assert dense[0]["index"] == "Flat" and dense[0]["recall_vs_flat"] == 1.0
    assert all(0 <= row["recall_vs_flat"] <= 1 for row in dense)
    assert [row[0] for row in sections["memory"]["data"]["projection_rows"]] == [
        "MS MARCO passages", "DPR Wikipedia (psgs_w100)"]
    assert "PROJECTION" in markdown
    scale = sections["index_scale"]["data"]
    assert scale["count"] == 24 and set(scale["build"]) == {"Flat", "HNSW32", "IVF2,Flat", "IVF2,PQ8x4np"}
    assert scale["search"][0] == {"setting": "Flat", "queries_per_second": scale["search"][0]["queries_per_second"],
                                  "recall_vs_flat": 1.0}
    assert scale["memory_mapped"]["same_results"]  # memory-mapped search finds what the loaded index finds


def test_profiled_operators_are_grouped_by_kind(monkeypatch) -> None:
    """The ceiling's profile names where a step's time goes: each operator falls in the kind it is."""
    monkeypatch.syspath_prepend(str(REPOSITORY / "bench"))
    from bench_ceiling import operator_kind

    assert {name: operator_kind(name) for name in ("aten::mm", "aten::addmm", "aten::bmm")} == dict.fromkeys(
        ("aten::mm", "aten::addmm", "aten::bmm"), "matrix products")
    assert operator_kind("aten::bernoulli_") == operator_kind("aten::native_dropout") == \
        "dropout's random masks (bernoulli)"
    assert operator_kind("aten::_fused_adamw_") == operator_kind("Optimizer.step#AdamW.step") == "optimizer (AdamW)"
    assert operator_kind("aten::add") == operator_kind("aten::gelu") == "element-wise (GELU, add, ...)"
    assert operator_kind("aten::_to_copy") == "casts and copies"
    assert operator_kind("aten::view") == "other"
