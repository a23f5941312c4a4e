"""The two-tower objectives (ICT/BFS/WLP and their mix) and the BoW-MLP baseline, with tiny models on
pairs drawn from real Wikipedia articles."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from helpers import tiny_bert

from seedr.data.articles import read_articles
from seedr.data.links import recover_title_links
from seedr.data.records import Article
from seedr.losses.base import in_batch_false_negatives
from seedr.losses.in_batch_softmax import in_batch_softmax
from seedr.modeling.bow_mlp import build_bow_mlp
from seedr.modeling.encoder import load_encoder
from seedr.objectives import OBJECTIVES
from seedr.objectives.ict.objective import ICTObjective
from seedr.objectives.ict_bfs_wlp.objective import ICTBFSWLPObjective
from seedr.objectives.pair_tasks import BFSPairs
from seedr.objectives.pair_tasks import ICTPairs
from seedr.objectives.pair_tasks import Pair
from seedr.objectives.pair_tasks import WLPPairs
from seedr.objectives.two_tower import PairData
from seedr.objectives.two_tower_options import PairConfig, TwoTowerConfig


@pytest.fixture(scope="module")
def articles(wiki_shard: Path) -> list[Article]:
    """The shard's first 60 articles, with links recovered from title mentions (for WLP)."""
    return recover_title_links(itertools.islice(read_articles(wiki_shard), 60))


@pytest.fixture(scope="module")
def ict_pairs(articles) -> list[Pair]:
    dataset = PairData([ICTPairs(articles, PairConfig())], seed=0).dataset(0)
    return [dataset[i] for i in range(8)]


def tower(tokenizer):
    """A tiny BERT without dropout, the same weights every time, long enough for the default documents."""
    torch.manual_seed(0)
    return tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=512, dropout=0.0)


def test_objectives_are_registered_as_pair_objectives():
    for name in ("ict", "bfs", "wlp", "ict_bfs_wlp"):
        assert OBJECTIVES.get(name).input_kind == "pairs"
    assert OBJECTIVES.get("ict_bfs_wlp").tasks == ("ict", "bfs", "wlp")


def test_collate_tokenises_queries_and_title_sep_documents(tokenizer, ict_pairs):
    objective = ICTObjective(tower(tokenizer), tokenizer, TwoTowerConfig(query_max_length=16,
                                                                        document_max_length=40))
    batch = objective.collate(ict_pairs)
    assert batch["query_input_ids"].shape[0] == 8 and batch["query_input_ids"].shape[1] <= 16
    assert batch["document_input_ids"].shape == (8, 40)  # paragraphs are longer than 40 tokens
    first = tokenizer.decode(batch["document_input_ids"][0], skip_special_tokens=False)
    assert first.startswith(f"[CLS] {ict_pairs[0].title.lower()} [SEP]")
    # the passage is segment B
    assert batch["document_token_type_ids"][0].max() == 1
    assert batch["document_keys"].unique().numel() == 8 and batch["task_ids"].eq(0).all()


def test_identical_documents_in_a_batch_are_not_negatives_of_each_other(tokenizer, ict_pairs):
    objective = ICTObjective(tower(tokenizer), tokenizer)
    batch = objective.collate([ict_pairs[0], ict_pairs[1], ict_pairs[0]])
    keys = batch["document_keys"]
    assert in_batch_false_negatives(keys[:, None], keys).tolist() == [[False, False, True],
                                                                     [False, False, False],
                                                                     [True, False, False]]


def test_in_batch_softmax_targets_the_diagonal():
    torch.manual_seed(0)
    queries, documents = torch.randn(5, 8), torch.randn(5, 8)
    losses, correct = in_batch_softmax(queries, documents)
    scores = queries @ documents.T  # (5, 5)
    assert torch.allclose(losses, -F.log_softmax(scores, dim=-1).diagonal())
    assert correct.tolist() == (scores.argmax(-1) == torch.arange(5)).tolist()
    # a column marked as a false negative leaves the row's denominator
    mask = torch.zeros(5, 5, dtype=torch.bool)
    mask[0, 3] = True
    masked, _ = in_batch_softmax(queries, documents, mask)
    expected = -F.log_softmax(scores[0, [0, 1, 2, 4]], dim=-1)[0]
    assert torch.isclose(masked[0], expected) and torch.allclose(masked[1:], losses[1:])


def test_loss_is_finite_named_and_reaches_the_encoder(tokenizer, ict_pairs):
    objective = ICTObjective(tower(tokenizer), tokenizer)
    output = objective(**objective.collate(ict_pairs))
    assert torch.isfinite(output.loss) and set(output.parts) == {"ict"}
    assert torch.isclose(output.parts["ict"], output.loss.detach())
    assert 0.0 <= float(output.metrics["accuracy"]) <= 1.0
    output.loss.backward()
    gradient = objective.encoder.embeddings.word_embeddings.weight.grad
    assert gradient is not None and gradient.abs().sum() > 0
    assert objective.encoder.encoder.layer[-1].output.dense.weight.grad.abs().sum() > 0


def test_loss_decreases_on_a_fixed_batch(tokenizer, ict_pairs):
    objective = ICTObjective(tower(tokenizer), tokenizer, TwoTowerConfig(document_max_length=64))
    batch = objective.collate(ict_pairs)
    optimizer = torch.optim.Adam(objective.parameters(), lr=3e-3)
    losses = []
    for _ in range(20):
        output = objective(**batch)
        optimizer.zero_grad()
        output.loss.backward()
        optimizer.step()
        losses.append(output.loss.item())
    assert losses[0] == pytest.approx(torch.log(torch.tensor(8.0)).item(), abs=0.3)  # near-uniform at start
    assert losses[-1] < 0.5 * losses[0]


def test_projection_sets_the_embedding_dimension(tokenizer, ict_pairs):
    objective = ICTObjective(tower(tokenizer), tokenizer, TwoTowerConfig(projection_dim=24))
    batch = objective.collate(ict_pairs)
    assert objective.embed_queries(batch["query_input_ids"], batch["query_attention_mask"]).shape == (8, 24)
    assert objective.embed_documents(batch["document_input_ids"], batch["document_attention_mask"],
                                     batch["document_token_type_ids"]).shape == (8, 24)
    assert objective.embedding_dim == 24
    plain = ICTObjective(tower(tokenizer), tokenizer)
    assert plain.projection is None and plain.embedding_dim == 32


def test_separate_towers_have_independent_parameters(tokenizer, ict_pairs):
    config = TwoTowerConfig(projection_dim=16, separate_towers=True)
    objective = ICTObjective(tower(tokenizer), tokenizer, config)
    query_parameters = [*objective.encoder.parameters(), *objective.projection.parameters()]
    document_parameters = [*objective.document_encoder.parameters(),
                           *objective.document_projection.parameters()]
    query_tensors = {p.data_ptr() for p in query_parameters}
    assert not query_tensors & {p.data_ptr() for p in document_parameters}
    batch = objective.collate(ict_pairs)
    queries_before = objective.embed_queries(batch["query_input_ids"], batch["query_attention_mask"]).detach()
    with torch.no_grad():  # changing the document tower leaves the query tower alone
        for parameter in document_parameters:
            parameter.add_(0.1)
    queries_after = objective.embed_queries(batch["query_input_ids"], batch["query_attention_mask"])
    assert torch.equal(queries_before, queries_after)
    objective(**batch).loss.backward()
    assert all(p.grad is not None for p in document_parameters)


def test_saved_encoder_reproduces_the_projected_query_embedding(tokenizer, ict_pairs, tmp_path):
    from sentence_transformers import SentenceTransformer

    objective = ICTObjective(tower(tokenizer), tokenizer,
                             TwoTowerConfig(projection_dim=16, separate_towers=True)).eval()
    objective.save_encoder(tmp_path / "encoder")
    queries = [pair.query for pair in ict_pairs[:3]]
    batch = objective.collate(ict_pairs[:3])
    with torch.no_grad():
        expected = objective.embed_queries(batch["query_input_ids"], batch["query_attention_mask"])
    loaded = SentenceTransformer(str(tmp_path / "encoder"), device="cpu")
    assert torch.allclose(loaded.encode(queries, convert_to_tensor=True), expected, atol=1e-5)
    # the document tower is saved beside, where fine-tuning (DualEncoder) looks for it
    settings = json.loads((tmp_path / "encoder" / "seedr_dual_encoder.json").read_text())
    assert settings["shared"] is False
    document_tower = load_encoder(tmp_path / "encoder" / "doc_encoder")
    assert torch.equal(document_tower.embeddings.word_embeddings.weight,
                       objective.document_encoder.embeddings.word_embeddings.weight)


def test_log_q_correction_cancels_within_a_task_and_weighs_tasks_by_size(tokenizer, articles):
    torch.manual_seed(0)
    queries, documents = torch.randn(6, 8), torch.randn(6, 8)
    plain, _ = in_batch_softmax(queries, documents)
    constant, _ = in_batch_softmax(queries, documents, document_log_q=torch.full((6,), -7.3))
    torch.testing.assert_close(constant, plain)  # one task: every pair equally likely, nothing changes
    log_q = torch.tensor([-1.0, -1.0, -2.5, -2.5, -4.0, -4.0])
    corrected, _ = in_batch_softmax(queries, documents, document_log_q=log_q)
    expected = -F.log_softmax(queries @ documents.T - log_q, dim=-1).diagonal()  # s(q, d′) − log Q(d′)
    torch.testing.assert_close(corrected, expected)
    # the mixture draws the task uniformly, then a unit of it: Q = 1 / (3 · units of the task)
    tasks = [builder(articles, PairConfig()) for builder in (ICTPairs, BFSPairs, WLPPairs)]
    assert len({len(task) for task in tasks}) == 3  # tasks of different sizes: the correction matters
    dataset = PairData(tasks, seed=1, pairs_per_epoch=30).dataset(0)
    size = {task.name: len(task) for task in tasks}
    for pair in (dataset[i] for i in range(30)):
        assert pair.log_q == pytest.approx(-math.log(3 * size[pair.task]))
    single = PairData(tasks[:1], seed=1).dataset(0)
    assert single[0].log_q == pytest.approx(-math.log(size["ict"]))
    pairs = [dataset[i] for i in range(6)]
    on = ICTBFSWLPObjective(tower(tokenizer), tokenizer, TwoTowerConfig(document_max_length=64))
    off = ICTBFSWLPObjective(tower(tokenizer), tokenizer, TwoTowerConfig(document_max_length=64,
                                                                          log_q_correction=False))
    assert "document_log_q" not in off.collate(pairs)
    assert not torch.isclose(on(**on.collate(pairs)).loss, off(**off.collate(pairs)).loss)


def test_mixture_reports_each_task(tokenizer, articles):
    tasks = [builder(articles, PairConfig()) for builder in (ICTPairs, BFSPairs, WLPPairs)]
    dataset = PairData(tasks, seed=1, pairs_per_epoch=12).dataset(0)
    pairs = [dataset[i] for i in range(12)]
    objective = ICTBFSWLPObjective(tower(tokenizer), tokenizer, TwoTowerConfig(document_max_length=64))
    batch = objective.collate(pairs)
    output = objective(**batch)
    assert set(output.parts) == {"ict", "bfs", "wlp"}
    assert torch.isclose(sum(output.parts.values()), output.loss.detach())
    # each part is that task's rows' share of the batch loss
    batch_losses, _ = in_batch_softmax(
        objective.embed_queries(batch["query_input_ids"], batch["query_attention_mask"]),
        objective.embed_documents(batch["document_input_ids"], batch["document_attention_mask"],
                                  batch["document_token_type_ids"]),
        in_batch_false_negatives(batch["document_keys"][:, None], batch["document_keys"]),
        document_log_q=batch["document_log_q"])
    for index, task in enumerate(objective.tasks):
        rows = [i for i, pair in enumerate(pairs) if pair.task == task]
        assert batch["task_ids"][rows].eq(index).all()
        assert torch.isclose(output.parts[task], batch_losses[rows].sum().detach() / len(pairs))
    with pytest.raises(ValueError, match="trains on"):
        ICTObjective(tower(tokenizer), tokenizer).collate(pairs)


def test_bow_mlp_embeds_the_bag_of_words_through_a_tanh_mlp(tokenizer, ict_pairs):
    torch.manual_seed(0)
    model = build_bow_mlp(tokenizer.vocab_size, embedding_dim=32, hidden_dim=16, output_dim=8,
                          ignored_token_ids=tokenizer.all_special_ids)
    encoded = tokenizer([pair.query for pair in ict_pairs], padding=True, return_tensors="pt")
    output = model(encoded["input_ids"], encoded["attention_mask"])
    assert output.pooler_output.shape == (8, 8) and output.last_hidden_state.shape == (8, 1, 8)
    # average of the word embeddings (special tokens and padding left out) → Linear → tanh → Linear
    ids = tokenizer(ict_pairs[0].query, add_special_tokens=False)["input_ids"]
    bag = model.embeddings.weight[ids].mean(0)  # (E,)
    expected = model.mlp[2](torch.tanh(model.mlp[0](bag)))
    assert torch.allclose(output.pooler_output[0], expected, atol=1e-6)
    output.pooler_output.sum().backward()
    assert model.embeddings.weight.grad[ids].abs().sum() > 0
    assert model.embeddings.weight.grad[tokenizer.cls_token_id].abs().sum() == 0


def test_bow_mlp_default_size_is_the_papers():
    with torch.device("meta"):
        model = build_bow_mlp(30522)  # BERT's vocabulary
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(128e6, rel=0.01)  # "128M"
    assert model.config.hidden_size == 512


def test_bow_mlp_trains_as_a_tower_and_saves(tokenizer, ict_pairs, tmp_path):
    model = build_bow_mlp(tokenizer.vocab_size, embedding_dim=32, hidden_dim=16, output_dim=8,
                          ignored_token_ids=tokenizer.all_special_ids)
    objective = ICTObjective(model, tokenizer)
    batch = objective.collate(ict_pairs)
    output = objective(**batch)
    assert torch.isfinite(output.loss)
    output.loss.backward()
    assert model.embeddings.weight.grad.abs().sum() > 0
    objective.save_encoder(tmp_path / "bow")
    reloaded = load_encoder(tmp_path / "bow").eval()
    ids, mask = batch["query_input_ids"], batch["query_attention_mask"]
    with torch.no_grad():
        assert torch.allclose(reloaded(ids, mask).pooler_output, objective.embed_queries(ids, mask))


def test_mixture_trains_in_the_shared_trainer_and_writes_its_encoder(tokenizer, wiki_shard, tmp_path):
    from sentence_transformers import SentenceTransformer

    from seedr.config.settings import TrainConfig
    from seedr.engine.trainer import Trainer
    from seedr.objectives.two_tower import pair_data_for

    config = TwoTowerConfig(document_max_length=64, projection_dim=16, pairs=PairConfig(max_articles=60))
    objective = ICTBFSWLPObjective(tower(tokenizer), tokenizer, config)
    data = pair_data_for("ict_bfs_wlp", wiki_shard, seed=3, config=config.pairs)
    trainer = Trainer(objective, data, objective.collate, TrainConfig(max_steps=4, batch_size=8, log_every=2),
                      tmp_path, lambda model, directory: model.save_encoder(directory))
    logged = trainer.train()
    assert {"loss", "ict", "bfs", "wlp"} <= set(logged)
    assert logged["ict"] + logged["bfs"] + logged["wlp"] == pytest.approx(logged["loss"], rel=1e-5)
    encoder = SentenceTransformer(str(tmp_path / "encoder"), device="cpu")
    assert encoder.encode(["Anarchism is a political philosophy."]).shape == (1, 16)


def test_each_task_logs_its_own_in_batch_accuracy(tokenizer):
    """ICT+BFS+WLP logs ``accuracy/ict`` etc.: the share of that task's queries whose own document ranks
    first, computed here from embeddings whose argmax is known (0 for a task absent from the batch)."""
    objective = ICTBFSWLPObjective(tower(tokenizer), tokenizer, TwoTowerConfig(log_q_correction=False))
    documents = torch.eye(6)
    queries = documents.clone()
    queries[1] = documents[2]  # query 1 (ict) ranks document 2 first: wrong
    queries[3] = documents[0]  # query 3 (bfs) too
    task_ids = torch.tensor([0, 0, 1, 1, 1, 0])  # ict: rows 0, 1, 5; bfs: rows 2, 3, 4; no wlp
    output = objective.loss_from_embeddings(queries * 10, documents, task_ids)
    assert float(output.metrics["accuracy"]) == pytest.approx(4 / 6)
    assert float(output.metrics["accuracy/ict"]) == pytest.approx(2 / 3)
    assert float(output.metrics["accuracy/bfs"]) == pytest.approx(2 / 3)
    assert float(output.metrics["accuracy/wlp"]) == 0.0


@pytest.mark.parametrize("separate", [False, True])
def test_a_checkpoint_with_the_former_weight_names_loads_into_the_towers(tokenizer, separate):
    """Runs trained before the objective wrapped a ``DualEncoder`` named the towers' weights ``encoder.``,
    ``projection.``, ``document_encoder.`` and ``document_projection.``: they still resume."""
    config = TwoTowerConfig(projection_dim=8, separate_towers=separate)
    torch.manual_seed(0)
    trained = ICTObjective(tower(tokenizer), tokenizer, config)
    former_names = {"towers.query_encoder.": "encoder.", "towers.query_projection.": "projection.",
                    "towers.document_encoder.": "document_encoder.",
                    "towers.document_projection.": "document_projection."}
    state = {}
    for name, tensor in trained.state_dict().items():
        new = next(prefix for prefix in former_names if name.startswith(prefix))
        state[former_names[new] + name[len(new):]] = tensor
    assert not any(name.startswith("towers.") for name in state)  # the checkpoint as it was written

    resumed = ICTObjective(tower(tokenizer), tokenizer, config)
    with torch.no_grad():  # nothing left of the same initialisation: every value must come from the checkpoint
        for parameter in resumed.parameters():
            parameter.zero_()
    resumed.load_state_dict(state)  # strict: every tensor found its new name
    for (name, expected), (other, loaded) in zip(trained.state_dict().items(), resumed.state_dict().items()):
        assert name == other and torch.equal(expected, loaded), name
