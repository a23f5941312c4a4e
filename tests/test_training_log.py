"""``metrics.jsonl`` has one reader (``seedr.data.training_log.read_metrics``), used by the trainer, the
model card and reports alike: a killed run's torn last line is left out, damage elsewhere names its line."""

from __future__ import annotations

import pytest

from seedr.data.training_log import METRICS, read_metrics
from seedr.io import DataError
from seedr.modeling.model_card import model_card
from seedr.reporting.report import load_run

LOGGED = '{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.1, "dev/MRR@10": 0.3}\n'


def test_a_torn_last_line_is_left_out_by_every_reader(tmp_path):
    (tmp_path / METRICS).write_text(LOGGED + '{"step": 3, "lo')  # killed while writing step 3
    assert read_metrics(tmp_path) == read_metrics(tmp_path / METRICS) == [
        {"step": 1, "loss": 2.5}, {"step": 2, "loss": 2.1, "dev/MRR@10": 0.3}]
    assert [line["step"] for line in load_run(tmp_path).history] == [1, 2]
    assert "**Training steps**: 2" in model_card(tmp_path, run_dir=tmp_path).text


def test_a_damaged_line_before_the_last_names_its_line(tmp_path):
    (tmp_path / METRICS).write_text('{"step": 1, "lo\n' + LOGGED)
    with pytest.raises(DataError, match=r"line 1\b"):
        read_metrics(tmp_path)


def test_no_log_reads_as_none(tmp_path):
    assert read_metrics(tmp_path) == [] and load_run(tmp_path).history == []
