"""BERT's masked-language-model head, owned by the pre-training objective rather than the encoder.

Same computation and parameter names as ``transformers``' ``BertOnlyMLMHead`` (Devlin et al., 2019):
dense → activation (GELU) → LayerNorm → output projection tied to the encoder's word embeddings, plus
a per-token bias. The tied projection matrix is passed in at call time instead of being registered
here a second time, so the objective's state dict holds it once (under the encoder).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import PretrainedConfig
from transformers.activations import ACT2FN

#: Prefix of the MLM head in ``BertForMaskedLM`` / ``BertForPreTraining`` checkpoints.
CHECKPOINT_PREFIX = "cls.predictions."


class MaskedLMHead(nn.Module):
    """``hidden (N, H) → logits (N, V)``; build with the encoder's config."""

    def __init__(self, config: PretrainedConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACT2FN[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)  # HF name, so checkpoints map
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        # BERT's initialisation: N(0, initializer_range) weights, zero biases, unit LayerNorm.
        nn.init.normal_(self.dense.weight, std=config.initializer_range)
        nn.init.zeros_(self.dense.bias)

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        """``hidden`` (..., H) and the encoder's word-embedding matrix (V, H) → logits (..., V)."""
        transformed = self.LayerNorm(self.activation(self.dense(hidden)))  # (..., H)
        return nn.functional.linear(transformed, word_embeddings, self.bias)  # (..., V)

    def load_from_checkpoint(self, folder: str | os.PathLike) -> bool:
        """Copy the ``cls.predictions.*`` weights of a Hugging Face checkpoint folder into this head.

        Returns False (and leaves the head as initialised) when the folder's safetensors hold no
        MLM head, as in sentence-transformers checkpoints such as MiniLM.
        """
        mapping = {"transform.dense.weight": "dense.weight", "transform.dense.bias": "dense.bias",
                   "transform.LayerNorm.weight": "LayerNorm.weight", "transform.LayerNorm.bias": "LayerNorm.bias",
                   "transform.LayerNorm.gamma": "LayerNorm.weight", "transform.LayerNorm.beta": "LayerNorm.bias",
                   "bias": "bias", "decoder.bias": "bias"}  # the bias is tied to decoder.bias
        found: dict[str, torch.Tensor] = {}
        for file in _safetensors_files(Path(folder)):
            with safe_open(str(file), framework="pt") as tensors:
                for key in tensors.keys():  # noqa: SIM118 (safe_open is not a mapping)
                    name = key.removeprefix(CHECKPOINT_PREFIX)
                    if key.startswith(CHECKPOINT_PREFIX) and name in mapping:
                        found[mapping[name]] = tensors.get_tensor(key)
        if not found:
            return False
        missing = set(self.state_dict()) - set(found)
        if missing:
            raise ValueError(f"{folder}: its MLM head lacks {sorted(missing)}")
        self.load_state_dict(found)
        return True

    def save_to_checkpoint(self, folder: str | os.PathLike) -> None:
        """Add this head to the ``model.safetensors`` of a saved encoder folder under the names
        ``BertForMaskedLM`` gives it (``cls.predictions.transform.*`` and ``cls.predictions.bias``; the
        output projection is the tied word-embedding matrix, already there): ``BertForMaskedLM`` and
        ``load_from_checkpoint`` then load the head, while ``AutoModel`` reports the extra keys as
        unexpected and ignores them, as with Google's BERT checkpoints."""
        file = Path(folder) / "model.safetensors"
        if not file.exists():
            raise FileNotFoundError(f"{file}: the head is added to a single-file encoder checkpoint")
        with safe_open(str(file), framework="pt") as handle:
            metadata = handle.metadata() or {"format": "pt"}
        tensors = load_file(str(file))
        names = {"dense.weight": "transform.dense.weight", "dense.bias": "transform.dense.bias",
                 "LayerNorm.weight": "transform.LayerNorm.weight", "LayerNorm.bias": "transform.LayerNorm.bias",
                 "bias": "bias"}
        tensors.update({CHECKPOINT_PREFIX + names[name]: tensor.detach().cpu().contiguous().clone()
                        for name, tensor in self.state_dict().items()})
        save_file(tensors, str(file), metadata=metadata)


def _safetensors_files(folder: Path) -> list[Path]:
    """The weight files of a checkpoint folder: a sharded index's shards, or ``model.safetensors``."""
    index = folder / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [folder / shard for shard in shards]
    single = folder / "model.safetensors"
    return [single] if single.exists() else []
