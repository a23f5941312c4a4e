"""``train.report_to``: Accelerate's experiment trackers receive what ``metrics.jsonl`` holds — every
logged step, the loss and each of its named parts — and the run's settings; TensorBoard's event files,
read back here, hold each step once after a resume. An unknown or uninstalled tracker is refused in
one line before anything runs. Tiny SEED-Encoder pre-trainings on real Wikipedia articles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import seedr
from seedr.cli import app
from seedr.config.settings import TrainConfig
from seedr.engine.run_metrics import check_trackers
from seedr.engine.trainer import Trainer

runner = CliRunner()

TINY = ["--size", "tiny", "--tokenizer", "minilm", "--set", "model.hidden_size=32",
        "--set", "model.num_attention_heads=2", "--set", "model.intermediate_size=64"]


def arguments(corpus: Path, out: Path, *extra: str) -> list[str]:
    """A 4-step SEED-Encoder pre-training (loss = mlm + weak_decoder), logged every step, to TensorBoard."""
    settings = {"data.max_documents": 20, "data.max_seq_length": 64, "train.max_steps": 4, "train.batch_size": 4,
                "train.global_batch_size": 4, "train.warmup_steps": 1, "train.log_every": 1, "train.save_every": 2,
                "train.report_to": "tensorboard"}
    return ["pretrain", "--config", "seed", "--corpus", str(corpus), "--out", str(out), *TINY,
            *[item for key, value in settings.items() for item in ("--set", f"{key}={value}")], *extra]


def scalars(out: Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of the TensorBoard event files the run wrote."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "trackers" / out.name)).Reload()
    return {tag: [(event.step, event.value) for event in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_tensorboard_receives_every_logged_step_and_loss_part(wiki_shard, tmp_path):
    out = tmp_path / "seed-tb"
    result = runner.invoke(app, arguments(wiki_shard, out), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines, logged = metrics(out), scalars(out)
    assert [line["step"] for line in lines] == [1, 2, 3, 4]
    assert {"loss", "mlm", "weak_decoder", "lr", "grad_norm", "epoch", "seconds"} <= set(logged)
    for tag in ("loss", "mlm", "weak_decoder", "lr", "grad_norm"):
        assert [step for step, _ in logged[tag]] == [1, 2, 3, 4], tag
        assert [value for _, value in logged[tag]] == pytest.approx([line[tag] for line in lines], rel=1e-6), tag
    # the run's settings, as values every tracker takes (None and lists as JSON text)
    (hparams,) = (out / "trackers" / out.name).glob("*/hparams.yml")
    recorded = yaml.safe_load(hparams.read_text())
    assert recorded["objective_name"] == "seed" and recorded["train.max_steps"] == 4
    assert recorded["train.report_to"] == '["tensorboard"]' and recorded["model.init"] == "null"


def test_a_resumed_run_s_events_hold_each_step_once(wiki_shard, tmp_path, monkeypatch):
    """Killed after logging step 3 (its last checkpoint: step 2), then resumed: metrics.jsonl drops step 3
    and logs it again, and so do the event files (TensorBoard's purge_step), not twice."""
    out = tmp_path / "seed-killed"
    write_metrics = Trainer._write_metrics

    def killed_after_step_3(trainer, line):
        write_metrics(trainer, line)
        if line["step"] == 3:
            raise KeyboardInterrupt("killed after logging step 3")

    with monkeypatch.context() as patch:
        patch.setattr(Trainer, "_write_metrics", killed_after_step_3)
        killed = runner.invoke(app, arguments(wiki_shard, out), catch_exceptions=False)
    assert killed.exit_code == 130  # the command line's answer to a KeyboardInterrupt (128 + SIGINT)
    assert [step for step, _ in scalars(out)["loss"]] == [1, 2, 3]
    result = runner.invoke(app, arguments(wiki_shard, out, "--resume"), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines, logged = metrics(out), scalars(out)
    assert [line["step"] for line in lines] == [1, 2, 3, 4]
    for tag in ("loss", "mlm", "weak_decoder"):
        assert [step for step, _ in logged[tag]] == [1, 2, 3, 4], tag
        assert [value for _, value in logged[tag]] == pytest.approx([line[tag] for line in lines], rel=1e-6), tag


@pytest.mark.parametrize(("tracker", "message"), [
    ("nonsense", "train.report_to: unknown tracker 'nonsense'; Accelerate's trackers: all, aim, tensorboard"),
    ("wandb", "train.report_to: the wandb tracker needs its package, which is not installed"),
])
def test_an_unknown_or_missing_tracker_is_one_line_before_anything_runs(tmp_path, tracker, message):
    import importlib.util

    if tracker == "wandb" and importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    out = tmp_path / "run"
    result = runner.invoke(app, ["pretrain", "--objective", "mlm", "--out", str(out), *TINY,
                                 "--set", f"train.report_to={tracker}"])
    assert result.exit_code == 1
    (error,) = [line for line in result.output.splitlines() if line.startswith("error: ")]  # one line
    assert message in error and "Traceback" not in result.output
    assert not out.exists()
    with pytest.raises(ValueError, match="train.report_to"):  # checked when settings resolve, for the API too
        seedr.resolve_settings("pretrain", "mlm", {"train.report_to": tracker})
    with pytest.raises(ValueError, match="train.report_to"):  # and by every run as it starts
        check_trackers(TrainConfig(report_to=tracker).report_to)


def test_report_to_takes_a_name_a_list_or_none():
    assert TrainConfig(report_to="tensorboard").report_to == ["tensorboard"]
    assert TrainConfig(report_to=["tensorboard"]).report_to == ["tensorboard"]
    assert TrainConfig(report_to="none").report_to is None and TrainConfig().report_to is None
    # who watches a run changes nothing it computes: an experiment step keeps its key
    assert TrainConfig(report_to="tensorboard").identity() == TrainConfig().identity()
