"""Encode a corpus into resumable ``.npy`` shards with a trained encoder: ``seedr encode``, ``seedr.encode`` and
every dense retrieval of an experiment run this."""

from __future__ import annotations

import dataclasses
from itertools import islice
from pathlib import Path
from typing import Any

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.io import check_output
from seedr.modeling.folders import resolve_model_path
from seedr.pipeline.common import Source, input_paths, is_paths, length_of, locked, model_name
from seedr.pipeline.options import AT_LEAST_ONE, check_options, option


@dataclasses.dataclass(kw_only=True)
class EncodeConfig:
    """What ``encode`` runs with."""

    model: str = option(help="Encoder: a model folder, a seedr run folder, or 'minilm'.", positional=True)
    corpus: Source = option(
        help="Corpus in any format seedr reads (BEIR, seedr JSONL, MS MARCO TSV, articles, parquet, a Hugging Face "
             "save_to_disk folder ...): a file, a folder (of shards, or made by `seedr prepare`) or a quoted glob; "
             "repeatable. From Python also a list of paths, a datasets.Dataset or a list of dicts.",
        cli_type=list[Path], positional=True)
    out: Path = option(help="Folder for embeddings-*.npy, ids-*.txt and manifest.json.", positional=True)
    pooling: str | None = option(None, help="cls or mean (default: the model's own setting, else cls).")
    normalize: bool | None = option(
        None, help="L2-normalise vectors (default: the model's own setting, else no).",
        flag="--normalize/--no-normalize")
    max_length: int | None = option(None, help="Tokens per document (default: the model's, else 512).",
                                    bound=AT_LEAST_ONE)
    batch_size: int = option(ENCODE_BATCH_SIZE, help="Documents per forward pass.", bound=AT_LEAST_ONE)
    dtype: str = option("float32", help="Stored precision: float32 or float16.")
    compute_dtype: str = option(
        "auto", help="Precision of the forward pass: auto (bfloat16 autocast where the CPU or GPU computes bf16 "
                     "natively, else float32), float32, bfloat16 or float16. --compute-dtype float32 turns bf16 "
                     "off. Recorded with the embeddings; `seedr search` encodes queries the same way.")
    shard_size: int = option(50_000, help="Documents per shard (the unit of resumption).", bound=AT_LEAST_ONE)
    limit: int | None = option(None, help="Encode only the first N documents.", bound=AT_LEAST_ONE)
    title: str | None = option(
        None, help="How titles are encoded: pair ('title [SEP] text', DPR/ANCE), join ('title text' as one "
                   "segment, BEIR) or none (text only); default: the model folder's, else pair.")
    document_prefix: str = option("", help="Text put before every document.")
    long_documents: str | None = option(
        None, help="Cut documents longer than --max-length into passages: firstp or maxp.")
    device: str | None = option(None, help="cpu, cuda ... (default: cuda when available).")
    show_progress: bool = option(True, help="Show a progress bar with its ETA.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.model = model_name(self.model)
        self.out = Path(self.out)


@dataclasses.dataclass(frozen=True)
class Encoded:
    """An embeddings folder ``run`` wrote: whether it is whole (under several processes, only the last one
    to finish completes it), and which of the launcher's processes this is."""

    path: Path
    complete: bool
    process_index: int = 0
    num_processes: int = 1


def check_inputs(model: str | None, corpus: Source | None) -> None:
    """Refuse a model or corpus that is not there before torch is imported (seconds), by the rules they are
    read with (``resolve_model_path``, ``input_files``)."""
    from seedr.data.inputs import input_files

    if model is not None:
        resolve_model_path(model)
    if corpus is not None and is_paths(corpus):
        input_files(corpus, "corpus")


def complete(out: Path) -> bool:
    """Whether ``out`` is a whole embeddings folder (``run`` writes its manifest last)."""
    from seedr.retrieval.embeddings import MANIFEST

    return (out / MANIFEST).is_file()


def vectors(out: Path) -> tuple[list[str], Any]:
    """The document ids and vectors (N, H) of the embeddings folder ``out`` that ``run`` wrote."""
    from seedr.retrieval.embeddings import load_embeddings

    return load_embeddings(out)


def text_encoder(config: EncodeConfig, device: Any = None, query_prefix: str = "") -> Any:
    """The ``seedr.retrieval.encode.TextEncoder`` that ``config`` describes, on ``device`` (default:
    ``config.device``); an option left unset is the model folder's own (``model_defaults``). ``query_prefix``
    (``seedr search``'s): for an encoder of queries too (ReQA's, whose candidates are encoded in memory)."""
    from seedr.retrieval.encode import TextEncoder

    return TextEncoder(config.model, pooling=config.pooling, normalize=config.normalize, max_length=config.max_length,
                       device=device or config.device, dtype=config.compute_dtype, query_prefix=query_prefix,
                       document_prefix=config.document_prefix, title=config.title)


def run(config: EncodeConfig) -> Encoded:
    """Encode every document of ``config.corpus`` into ``config.out``; calling it again resumes.

    Documents are encoded as the model was trained (its folder records pooling, normalisation, length and
    how titles enter: by default ``title [SEP] text`` as a text pair). Under ``torchrun`` / ``accelerate
    launch`` each process encodes its own shards."""
    with locked(config.out):
        check_output(config.out, "embeddings", replaces=False, inputs=input_paths(config.corpus, config.model))
        check_inputs(config.model, config.corpus)

        from accelerate import PartialState

        from seedr.data.corpus import count_documents, read_corpus
        from seedr.retrieval.encode import encode_corpus_to_shards
        from seedr.retrieval.long_documents import long_document_passages

        state = PartialState(cpu=config.device == "cpu")  # the launcher's process group; one process without one
        encoder = text_encoder(config, state.device if config.device in (None, "cuda") else config.device)
        documents: Any = read_corpus(config.corpus)
        # for the progress bar's ETA (None when the format cannot tell cheaply)
        total = count_documents(config.corpus) if is_paths(config.corpus) else length_of(config.corpus)
        if config.limit is not None:
            documents = islice(documents, config.limit)
            total = min(config.limit, total) if total is not None else None
        extra = {}
        if config.long_documents is not None:
            total = None  # passages, not documents
            documents = long_document_passages(documents, encoder.tokenizer, config.long_documents,
                                               encoder.max_length)
            extra = {"long_documents": config.long_documents}
        target = encode_corpus_to_shards(encoder, documents, config.out, shard_size=config.shard_size,
                                         dtype=config.dtype, batch_size=config.batch_size, extra_settings=extra,
                                         total=total, show_progress=config.show_progress and state.is_local_main_process,
                                         rank=state.process_index, world_size=state.num_processes)
    # No barrier: a process whose shards were done before a resume would wait, perhaps past the process
    # group's timeout, for the others; the last process to finish writes the manifest instead.
    return Encoded(target, complete(target), state.process_index, state.num_processes)


__all__ = ["EncodeConfig", "Encoded", "check_inputs", "complete", "run", "text_encoder", "vectors"]
