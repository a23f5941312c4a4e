"""Weight averaging (``seedr average``, the experiments' ``average`` step): every floating-point weight of
the result is the weighted mean of the members' (model soups, LAWA, WiSE-FT), the folder loads in
sentence-transformers as its template, and models that cannot be averaged are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from seedr.cli import app
from seedr.experiments.steps import build_step
from seedr.io import DataError
from seedr.modeling.averaging import AVERAGE_RECORD, average_encoders, checkpoint_encoders
from seedr.modeling.encoder import load_tokenizer, save_encoder
from tests.helpers import tiny_bert

runner = CliRunner()


def saved_model(tokenizer, folder: Path, seed: int, **sizes) -> Path:
    torch.manual_seed(seed)
    save_encoder(tiny_bert(tokenizer, **sizes), tokenizer, folder, pooling="mean", similarity="cosine",
                 normalize=True)
    return folder


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_the_average_is_the_weighted_mean_of_every_weight_and_loads_as_its_template(tokenizer, tmp_path):
    from sentence_transformers import SentenceTransformer

    first, second = saved_model(tokenizer, tmp_path / "a", 0), saved_model(tokenizer, tmp_path / "b", 1)
    record = average_encoders([first, second], tmp_path / "soup", weights=[3, 1])
    a, b, soup = weights(first), weights(second), weights(tmp_path / "soup")
    assert set(soup) == set(a) and record["weights_averaged"] == len(a)
    for name, tensor in soup.items():
        assert tensor.dtype == a[name].dtype
        torch.testing.assert_close(tensor, 0.75 * a[name] + 0.25 * b[name], rtol=0, atol=1e-7)
    assert not torch.equal(soup["embeddings.word_embeddings.weight"], a["embeddings.word_embeddings.weight"])
    saved = json.loads((tmp_path / "soup" / AVERAGE_RECORD).read_text())
    assert [member["weight"] for member in saved["members"]] == [0.75, 0.25]
    assert all(len(member["fingerprint"]) == 64 for member in saved["members"])
    assert "## Weight averaging" in (tmp_path / "soup" / "README.md").read_text()
    model = SentenceTransformer(str(tmp_path / "soup"), device="cpu")  # pooling and Normalize of the template
    embedding = model.encode(["what causes tides?"], convert_to_tensor=True)
    assert embedding.shape == (1, 32)
    torch.testing.assert_close(embedding.norm(dim=-1), torch.ones(1))


def test_a_uniform_soup_of_three_and_the_shipped_minilm_as_a_member(tokenizer, minilm_path, tmp_path):
    members = [saved_model(tokenizer, tmp_path / f"m{seed}", seed) for seed in range(3)]
    average_encoders(members, tmp_path / "soup")
    expected = sum(weights(member)["encoder.layer.1.output.dense.weight"] for member in members) / 3
    torch.testing.assert_close(weights(tmp_path / "soup")["encoder.layer.1.output.dense.weight"], expected)
    # WiSE-FT with the model as shipped, which keeps BERT's position_ids buffer that seedr's saves leave out
    shipped = weights(minilm_path)
    average_encoders(["minilm", minilm_path], tmp_path / "wise", weights=[0.5, 0.5])
    wise = weights(tmp_path / "wise")
    torch.testing.assert_close(wise["pooler.dense.weight"], shipped["pooler.dense.weight"])
    assert torch.equal(wise["embeddings.position_ids"], shipped["embeddings.position_ids"])


def test_models_that_cannot_be_averaged_are_refused_by_name(tokenizer, tmp_path):
    first = saved_model(tokenizer, tmp_path / "a", 0)
    wider = saved_model(tokenizer, tmp_path / "wide", 1, hidden_size=64, intermediate_size=128)
    with pytest.raises(DataError, match="has shape .* only models of one architecture") as info:
        average_encoders([first, wider], tmp_path / "out")
    assert info.value.path == str(wider / "model.safetensors")
    deeper = saved_model(tokenizer, tmp_path / "deep", 1, num_hidden_layers=3)
    with pytest.raises(DataError, match="has encoder.layer.2"):
        average_encoders([first, deeper], tmp_path / "out")
    other = load_tokenizer(Path(__file__).parents[1] / "models" / "seedr-base")
    own_vocabulary = saved_model(other, tmp_path / "other", 2)
    with pytest.raises(DataError, match="vocabulary differs") as info:
        average_encoders([first, own_vocabulary], tmp_path / "out")
    assert info.value.path == str(own_vocabulary)
    with pytest.raises(ValueError, match="two or more"):
        average_encoders([first], tmp_path / "out")
    with pytest.raises(ValueError, match="2 weights for 3 models"):
        average_encoders([first, first, first], tmp_path / "out", weights=[1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        average_encoders([first, first], tmp_path / "out", weights=[1, -1])
    with pytest.raises(ValueError, match="an input of this command"):
        average_encoders([first, wider], first)
    assert not (tmp_path / "out").exists()  # nothing written by a refused average


def fake_run(tokenizer, folder: Path, steps: list[int]) -> Path:
    """A run folder as training leaves it: a checkpoint (position and encoder) per step, its product."""
    for seed, step in enumerate(steps):
        checkpoint = folder / "checkpoints" / f"step-{step}"
        saved_model(tokenizer, checkpoint / "encoder", seed)
        (checkpoint / "trainer_state.json").write_text(json.dumps({"step": step}))
    saved_model(tokenizer, folder / "encoder", len(steps) - 1)
    return folder


def test_the_latest_checkpoints_of_a_run_oldest_first(tokenizer, tmp_path):
    run = fake_run(tokenizer, tmp_path / "run", [10, 2, 30])
    assert checkpoint_encoders(run, 2) == [run / "checkpoints" / f"step-{step}" / "encoder" for step in (10, 30)]
    with pytest.raises(DataError, match="3 checkpoint.* kept, 4 asked for: train with train.keep_checkpoints ≥ 4"):
        checkpoint_encoders(run, 4)


def test_the_experiment_step_averages_the_previous_steps_checkpoints_then_the_others(tokenizer, tmp_path):
    run = fake_run(tokenizer, tmp_path / "run", [1, 2, 3])
    extra = saved_model(tokenizer, tmp_path / "extra", 7)
    step = build_step("average", {"checkpoints": 2, "others": [str(extra)], "weights": [1, 1, 2]}, "test")
    step = step.with_model(str(run / "encoder"))
    assert step.members() == [str(run / "checkpoints" / "step-2" / "encoder"),
                              str(run / "checkpoints" / "step-3" / "encoder"), str(extra)]
    step.run(tmp_path / "step")
    assert step.product(tmp_path / "step") == str(tmp_path / "step" / "encoder")
    assert step.history_dirs(tmp_path / "step") == []  # no training curve of its own in the report
    name = "encoder.layer.0.attention.self.key.weight"
    parts = [weights(Path(member))[name] for member in step.members()]
    torch.testing.assert_close(weights(tmp_path / "step" / "encoder")[name],
                               0.25 * parts[0] + 0.25 * parts[1] + 0.5 * parts[2])


@pytest.mark.parametrize(("settings", "message"), [
    ({}, "two or more models"),
    ({"checkpoints": 1}, "two or more models"),
    ({"checkpoints": 0, "others": ["minilm"]}, "at least 1"),
    ({"checkpoints": 3, "weights": [1, 1]}, "2 weights for 3 models"),
    ({"others": ["minilm"], "weight": [1, 1]}, "unknown option"),
])
def test_the_step_refuses_settings_that_average_nothing(settings, message):
    with pytest.raises(ValueError, match=message):
        build_step("average", settings, "file.yaml: conditions.x.steps[1]").validate()


def test_the_stage_averages_a_runs_checkpoints_and_says_what_it_wrote(tokenizer, tmp_path):
    run = fake_run(tokenizer, tmp_path / "run", [5, 10])
    result = runner.invoke(app, ["average", str(run), "--checkpoints", "2", "--out", str(tmp_path / "lawa")])
    assert result.exit_code == 0, result.output
    assert "of 2 models into" in result.output
    members = json.loads((tmp_path / "lawa" / AVERAGE_RECORD).read_text())["members"]
    assert [member["path"] for member in members] == [str(run / "checkpoints" / f"step-{step}" / "encoder")
                                                      for step in (5, 10)]
    bad = runner.invoke(app, ["average", str(run / "encoder"), "--checkpoints", "2", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 1 and "not a seedr run folder" in bad.output


def soup_file(tmp_path: Path, condition: str, before: str = "  plain@512:") -> Path:
    """averaging_and_length.yaml with one more condition, placed before ``before``."""
    from seedr.experiments.spec import experiments_dir

    text = (experiments_dir() / "averaging_and_length.yaml").read_text()
    assert before in text
    path = tmp_path / "experiments" / "soup.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text.replace(before, condition + before, 1))
    return path


def test_a_step_names_an_earlier_conditions_model_and_the_runner_resolves_it_to_its_folder(tmp_path):
    from rich.console import Console

    from seedr.experiments.runner import _plan, _Runner
    from seedr.experiments.spec import load_experiment

    soup = '  soup:\n    steps: [{finetune: {train.seed: 14}}, {average: {others: ["{conditions.plain}"]}}]\n'
    path = soup_file(tmp_path, soup)
    experiment = load_experiment(path, "cpu", ["data=../shared/data"])
    plan = _plan(experiment, _Runner(experiment, tmp_path / "runs", Console(quiet=True)))
    (finetune, plain_folder), = plan.chains["plain"]
    (seed_14, seed_14_folder), (average, _) = plan.chains["soup"]
    assert seed_14_folder != plain_folder
    assert average.with_model(None).config().others == [str(plain_folder / "encoder")]
    assert average.config().model == str(seed_14_folder / "encoder")
    assert plan.models["soup"].startswith(str(tmp_path / "runs" / "steps" / "average-"))


def test_a_condition_named_with_a_hyphen_is_resolved_too(tmp_path):
    """``{conditions.half-15}``: condition names are not variable names (``seed-2``, ``plain@512``)."""
    from rich.console import Console

    from seedr.experiments.runner import _plan, _Runner
    from seedr.experiments.spec import load_experiment

    conditions = ('  half-15:\n    steps: [{finetune: {train.seed: 15}}]\n'
                  '  soup:\n    steps: [{finetune: {train.seed: 14}}, {average: {others: ["{conditions.half-15}"]}}]\n')
    experiment = load_experiment(soup_file(tmp_path, conditions), "cpu", ["data=../shared/data"])
    plan = _plan(experiment, _Runner(experiment, tmp_path / "runs", Console(quiet=True)))
    (_, half_folder), = plan.chains["half-15"]
    (_, _), (average, _) = plan.chains["soup"]
    assert average.with_model(None).config().others == [str(half_folder / "encoder")]


@pytest.mark.parametrize(("condition", "before"), [
    ('  early:\n    steps: [{finetune: {}}, {average: {others: ["{conditions.plain}"]}}]\n', "  bm25: {retrieve"),
    ('  soup:\n    steps: [{finetune: {}}, {average: {others: ["{conditions.bm25}"]}}]\n', "  plain@512:"),
    ('  soup:\n    steps: [{finetune: {}}, {average: {others: ["{conditions.nope}"]}}]\n', "  plain@512:"),
])
def test_a_step_may_name_only_an_earlier_condition_that_produces_a_model(tmp_path, condition, before):
    from seedr.experiments.spec import load_experiment

    with pytest.raises(ValueError, match=r"soup\.yaml: conditions\.\w+\.steps\[1\]: \{conditions\.\w+\} is not a "
                                         "condition defined before"):
        load_experiment(soup_file(tmp_path, condition, before), "cpu")
