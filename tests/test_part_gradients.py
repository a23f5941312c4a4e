"""Each loss part's gradient norm on the encoder (``seedr.engine.part_gradients``): its value, what
is left out, the trainer logging it every ``log_every`` steps, and the report drawing the parts together."""

from __future__ import annotations

import json
import math

import torch
from helpers import tiny_bert, wiki_token_ids
from test_trainer import TokenAutoencoder, run, shards  # noqa: F401  (the fixture)

from seedr.engine.part_gradients import encoder_parameters, gradient_shares, part_gradient_norms
from seedr.objectives.cpdae.objective import Cpdae
from seedr.objectives.cpdae.options import CpdaeConfig
from seedr.reporting.report import render_report


def test_norms_are_those_of_each_part_backpropagated_alone(tokenizer, wiki_shard):
    """In float64: float32 gradients of this tiny model differ by ~1e-4 between two backward passes."""
    torch.manual_seed(0)
    objective = Cpdae(tiny_bert(tokenizer), tokenizer, CpdaeConfig()).double()
    output = objective(**objective.collate(wiki_token_ids(wiki_shard, tokenizer, 6, 48)))
    norms = part_gradient_norms(objective, output.parts)
    assert set(norms) == {"grad_norm/mlm", "grad_norm/bow_bce", "grad_norm/js_contrastive"}
    assert all(parameter.grad is None for parameter in objective.parameters())  # .grad untouched
    for name, part in output.parts.items():
        objective.zero_grad()
        part.backward(retain_graph=True)
        expected = torch.cat([p.grad.flatten() for p in encoder_parameters(objective) if p.grad is not None]).norm()
        torch.testing.assert_close(norms[f"grad_norm/{name}"], expected, rtol=1e-9, atol=0.0)
    shares = gradient_shares({name: float(value) for name, value in norms.items()})
    assert set(shares) == {"mlm", "bow_bce", "js_contrastive"} and math.isclose(sum(shares.values()), 1.0)


def test_single_and_detached_parts_have_no_norms(tokenizer, wiki_shard):
    torch.manual_seed(0)
    objective = Cpdae(tiny_bert(tokenizer), tokenizer, CpdaeConfig())
    output = objective(**objective.collate(wiki_token_ids(wiki_shard, tokenizer, 4, 48)))
    assert part_gradient_norms(objective, {"mlm": output.parts["mlm"]}) == {}  # one part: the loss itself
    assert part_gradient_norms(objective, {name: part.detach() for name, part in output.parts.items()}) == {}


def test_trainer_logs_each_parts_norm_every_log_every_steps(tokenizer, shards, tmp_path):
    torch.manual_seed(0)
    objective = TokenAutoencoder(tiny_bert(tokenizer, max_position_embeddings=64), tokenizer)
    run(objective, shards, tmp_path, max_steps=5, log_every=2)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [2, 4, 5]
    for line in lines:
        assert line["grad_norm/token"] > 0 and line["grad_norm/bow"] > 0
        assert math.isfinite(line["grad_norm/token"]) and math.isfinite(line["grad_norm/bow"])


def test_report_draws_the_parts_norms_in_one_plot(tmp_path):
    folder = tmp_path / "cpdae"
    folder.mkdir()
    with open(folder / "metrics.jsonl", "w") as stream:
        for step in (10, 20):
            stream.write(json.dumps({"step": step, "loss": 3.0 / step, "grad_norm": 1.0, "grad_norm/mlm": 30.0,
                                     "grad_norm/bow_bce": 1700.0, "grad_norm/js_contrastive": 0.002}) + "\n")
    report = render_report([folder], tmp_path / "report")
    plots = sorted(path.name for path in (tmp_path / "report" / "plots").iterdir())
    assert plots == ["grad_norm.png", "grad_norm_parts.png", "loss.png"]
    assert "![grad_norm_parts](plots/grad_norm_parts.png)" in report.read_text()
