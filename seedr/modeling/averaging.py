"""Weight averaging of fine-tuned encoders: one encoder whose every weight is a weighted mean of the same
weight in several models of one architecture, so it costs nothing at inference.

Three uses of the same operation, all of models that share their initialisation:

- a *uniform soup* of runs fine-tuned with different seeds or settings (Wortsman et al., 2022, "Model
  soups: averaging weights of multiple fine-tuned models improves accuracy without increasing inference
  time", §3, Eq. 1: θ = Σ_i θ_i / k);
- the *latest checkpoints of one run* (Kaddour, 2022, "Stop wasting my time! Saving days of ImageNet and
  BERT training with latest weight averaging", LAWA; stochastic weight averaging, Izmailov et al., 2018,
  with a constant learning rate as seedr's fine-tuning recipe has): ``checkpoint_encoders``;
- a fine-tuned model and the model it started from (WiSE-FT, Wortsman et al., 2022, "Robust fine-tuning
  of zero-shot models", Eq. 1: θ = (1 − α)·θ_zero-shot + α·θ_fine-tuned), which keeps some of the
  original model's generality.

The first model is the template: its folder (tokenizer, sentence-transformers modules, seedr's dual-encoder
settings, a separate document tower) is copied and only its weights are replaced, so the averaged encoder
loads, pools and scores as the first model does; ``seedr_average.json`` records the members, their
fingerprints and the weights. Every ``*.safetensors`` file of the template is averaged with the file at
the same place in every other member: their floating-point weights must have the same names and shapes,
and their vocabularies must agree (an average of models with different vocabularies or shapes is not a
model). Integer buffers (BERT's ``position_ids``) are taken from the template. seedr's placeholder BERT
pooler (``seedr.modeling.encoder.add_placeholder_pooler``, a constant) is not asked of every member: one
saved before placeholders existed counts as holding the template's, and an average of such members gets
its own, so that encoders saved before and after average alike and the average loads silently.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from seedr.io import DataError, atomic_directory, check_output, output_lock
from seedr.io.run_folders import PRODUCT, list_checkpoints
from seedr.modeling.encoder import (
    PLACEHOLDER_POOLER,
    POOLER_KEYS,
    add_placeholder_pooler,
    load_tokenizer,
    model_fingerprint,
    resolve_model_path,
)
from seedr.modeling.model_card import portable_name, write_model_card

#: The record of an averaged encoder: its members (paths and fingerprints) and their weights.
AVERAGE_RECORD = "seedr_average.json"


def checkpoint_encoders(run_dir: str | os.PathLike, newest: int) -> list[Path]:
    """The encoders of the ``newest`` newest checkpoints of a fine-tuning or pre-training run, oldest
    first (LAWA's latest checkpoints). A ``DataError`` when the run kept fewer: a run keeps
    ``train.keep_checkpoints`` of them, written every ``train.save_every`` steps and at its end."""

    if newest < 1:
        raise ValueError(f"checkpoints to average must be at least 1, got {newest}")
    kept = [folder / PRODUCT for _, folder in list_checkpoints(run_dir) if (folder / PRODUCT).is_dir()]
    if len(kept) < newest:
        raise DataError(run_dir, f"{len(kept)} checkpoint(s) with an encoder kept, {newest} asked for: train "
                                 f"with train.keep_checkpoints ≥ {newest} and train.save_every below the run's "
                                 "steps (a checkpoint is written every save_every steps and at the end)")
    return kept[-newest:]


def _normalised(weights: Sequence[float] | None, count: int) -> list[float]:
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count:
        raise ValueError(f"{len(weights)} weights for {count} models: give one per model, in their order")
    if any(weight < 0 for weight in weights) or sum(weights) <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {list(weights)}")
    return [weight / sum(weights) for weight in weights]


def _check_vocabularies(members: Sequence[Path]) -> None:
    vocabulary = load_tokenizer(members[0]).get_vocab()
    for member in members[1:]:
        if load_tokenizer(member).get_vocab() != vocabulary:
            raise DataError(member, f"its vocabulary differs from {members[0]}'s: weights of models with "
                                    "different vocabularies cannot be averaged")


def _placeholder(weights) -> set[str]:
    """The names of seedr's placeholder pooler in an open safetensors file (none when it has none)."""

    return set(POOLER_KEYS) if PLACEHOLDER_POOLER in (weights.metadata() or {}) else set()


def _average_file(files: Sequence[Path], weights: Sequence[float], out: Path) -> int:
    """Write to ``out`` the weighted mean of the floating-point tensors of ``files``; returns their count.
    A member without the template's placeholder pooler counts as holding it, a member's own placeholder
    is not asked of the template (see the module docstring)."""
    with safe_open(str(files[0]), framework="pt") as template:
        metadata = template.metadata()
        tensors = {name: template.get_tensor(name) for name in template.keys()}  # noqa: SIM118
        placeholder = _placeholder(template)
    averaged = {name: tensor.double() * weights[0] for name, tensor in tensors.items() if tensor.is_floating_point()}
    for file, weight in zip(files[1:], weights[1:]):
        with safe_open(str(file), framework="pt") as member:
            names = set(member.keys()) - (_placeholder(member) - placeholder)  # noqa: SIM118
            missing = sorted(set(averaged) - names - placeholder)
            extra = sorted(name for name in names - set(tensors) if member.get_slice(name).get_dtype()
                           .startswith(("F", "BF")))
            if missing or extra:
                which = f"lacks {', '.join(missing[:4])}" if missing else f"has {', '.join(extra[:4])} besides"
                raise DataError(file, f"{which} the weights of {files[0]}: only models of one architecture can "
                                      "be averaged")
            for name in averaged:
                tensor = member.get_tensor(name) if name in names else tensors[name]
                if tensor.shape != tensors[name].shape:
                    raise DataError(file, f"weight {name} has shape {tuple(tensor.shape)}, "
                                          f"{tuple(tensors[name].shape)} in {files[0]}: only models of one "
                                          "architecture can be averaged")
                averaged[name] += tensor.double() * weight
    result = {name: averaged[name].to(tensor.dtype) if name in averaged else tensor
              for name, tensor in tensors.items()}
    save_file(result, str(out), metadata=metadata)
    return len(averaged)


def average_encoders(models: Sequence[str | os.PathLike], out: str | os.PathLike,
                     weights: Sequence[float] | None = None, overwrite: bool = False) -> dict[str, object]:
    """Write to ``out`` the encoder whose weights are the weighted mean of ``models``' (see the module
    docstring); returns its record (``AVERAGE_RECORD``).

    Args:
        models: model folders, seedr run folders (their ``encoder/``) or built-in names (``minilm``), two
            or more; the first is the template whose folder is copied.
        out: the averaged encoder's folder (replaced only once complete; locked while it is written,
            ``seedr.io.output_lock``), apart from every model: neither one of them, inside one, nor
            holding one (``seedr.io.check_output``).
        weights: one per model, normalised to sum to 1; default equal (a uniform soup).
        overwrite: replace an averaged encoder already at ``out`` (anything else there is refused).
    """

    if len(models) < 2:
        raise ValueError(f"averaging needs two or more models, got {len(models)}")
    members = [resolve_model_path(model) for model in models]
    shares = _normalised(weights, len(members))
    # every name the template's copy brings, so that --overwrite never deletes a file a user put there
    writes = [path.name for path in members[0].iterdir()] + [AVERAGE_RECORD, "README.md"]
    check_output(out, "averaged encoder", overwrite=overwrite, inputs=members, inside_inputs=False, writes=writes)
    _check_vocabularies(members)
    files = sorted(path.relative_to(members[0]) for path in members[0].rglob("*.safetensors"))
    if not files:
        raise DataError(members[0], "holds no weights (model.safetensors)")
    for member in members[1:]:
        for file in files:
            if not (member / file).is_file():
                raise DataError(member / file, f"missing: {members[0]} has it, and only models of one "
                                               "architecture (towers and projection alike) can be averaged")
    record = {"method": "weighted mean of every floating-point weight (model soup / LAWA / WiSE-FT)",
              "members": [{"model": str(model), "path": str(path), "fingerprint": model_fingerprint(path),
                           "weight": share} for model, path, share in zip(models, members, shares)]}
    with output_lock(out), atomic_directory(out) as folder:
        shutil.copytree(members[0], folder, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(AVERAGE_RECORD, "README.md", ".gitattributes"))
        record["weights_averaged"] = sum(_average_file([member / file for member in members], shares, folder / file)
                                         for file in files)
        for weights in files:  # a BERT whose members all predate placeholders (a document tower too)
            if (folder / weights.parent / "config.json").exists():
                add_placeholder_pooler(folder / weights.parent)
        (folder / AVERAGE_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        card = write_model_card(folder)  # named after ``out``, not the temporary it is written in
        lines = [f"- `{portable_name(member['model'])}` × {member['weight']:.3g}"
                 for member in record["members"]]
        card.write_text(card.read_text() + "\n\n## Weight averaging\n\nEvery weight is the weighted mean of the "
                        f"same weight in these models (`{AVERAGE_RECORD}`):\n\n" + "\n".join(lines) + "\n")
    return record


__all__ = ["AVERAGE_RECORD", "average_encoders", "checkpoint_encoders"]
