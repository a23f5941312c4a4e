"""seedr from Python: one function per stage, with the stage command's options as keyword arguments.

The command line is this API: ``seedr pretrain --config seed --model seedr-base --corpus docs.jsonl --out
runs/seed --set train.max_steps=20`` is ``seedr.pretrain("runs/seed", config="seed", model="seedr-base",
corpus="docs.jsonl", settings={"train.max_steps": 20})``. Each function returns an object that leads to the
next step: a ``TrainingRun`` (give it as ``model=``), ``Embeddings`` (give them to ``index``), an ``Index``
(``index.search("a question", k=10)`` returns ``Hit``s with ids, scores and texts), a ``SearchRun``
(give it to ``evaluate``) and an ``Evaluation`` (its table, as Markdown or as numbers).

Settings are a plain mapping of the recipe's keys, dotted or nested (``{"train.max_steps": 20}`` or
``{"train": {"max_steps": 20}}``): the stage's defaults, then the recipe (``config``), then the keyword
arguments, then ``settings``, each over the one before (``seedr.config.merge_settings``). ``resolve_settings``
shows the result without running anything (``seedr config`` on the command line).

Corpora and queries are paths (files, folders, quoted globs, as on the command line; parquet files and
Hugging Face ``save_to_disk`` folders too), Hugging Face ``datasets.Dataset`` objects, or lists of dicts
(corpus rows with ``_id``/``id``, ``title``, ``text``; query rows with ``_id``/``id`` and ``text``).

Heavy libraries (torch, transformers, faiss) are imported inside the functions, so that ``import seedr``
and every ``--help`` stay instant.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

#: A stage's settings: ``{"train.max_steps": 20}`` or ``{"train": {"max_steps": 20}}``.
Settings = Mapping[str, Any]
#: A corpus or queries: a path (file, folder, quoted glob), several paths, a ``datasets.Dataset`` or a list
#: of dicts.
Source = Any

#: The stages whose settings are a config (``resolve_settings``), with their config classes' modules.
CONFIG_STAGES = ("pretrain", "finetune")


def _is_paths(source: Source) -> bool:
    """Whether ``source`` names files (a path, or a list of paths) rather than holding rows in memory."""
    if isinstance(source, str | os.PathLike):
        return True
    return (isinstance(source, Sequence) and not isinstance(source, str | bytes) and len(source) > 0
            and all(isinstance(item, str | os.PathLike) for item in source))


def _paths(source: Source) -> list[str]:
    """A path or several as the strings a config holds."""
    return [os.fspath(source)] if isinstance(source, str | os.PathLike) else [os.fspath(item) for item in source]


def _model_name(model: str | os.PathLike | None) -> str | None:
    """A model as a config names it: a built-in name, a folder, or a ``TrainingRun`` (its folder)."""
    return None if model is None else os.fspath(model)


@contextmanager
def _locked(out: str | os.PathLike | None) -> Iterator[None]:
    """Hold ``seedr.data.io.output_lock`` on ``out`` for the whole call, so two runs, from Python or the
    shell, never write one output at once. Under a launcher (``torchrun``, ``accelerate launch``) only the
    main process (``RANK`` 0) holds it."""
    from seedr.data.io import output_lock

    main = os.environ.get("RANK", "0") == "0"
    with output_lock(out) if out is not None and main else nullcontext():
        yield


def resolve_settings(stage: str, config: str | os.PathLike | None = None, settings: Settings | None = None,
                     **options: Any) -> Any:
    """The resolved config of ``stage`` (``pretrain`` or ``finetune``): its defaults, then the recipe
    ``config`` (a name shipped with seedr, e.g. ``seed``, or a YAML file), then ``options`` (the stage's
    keyword arguments that are settings: ``model``, ``corpus``, ``objective`` ...), then ``settings``.
    Nothing runs; unknown keys raise ``ValueError`` listing the valid ones.

    Example:
        >>> seedr.resolve_settings("pretrain", config="seed", settings={"train.batch_size": 8}).train.global_batch_size
        256
    """
    from seedr.config import from_dict, merge_settings, read_recipe
    from seedr.recipes import recipe_path

    if stage not in CONFIG_STAGES:
        raise ValueError(f"no settings for stage {stage!r}; stages with settings: {', '.join(CONFIG_STAGES)}")
    given = _stage_options(stage, options)
    recipe = read_recipe(recipe_path(os.fspath(config), stage)) if config is not None else {}
    if stage == "finetune":
        from seedr.training.finetune import FinetuneConfig

        return from_dict(FinetuneConfig, merge_settings(recipe, given, dict(settings or {})))
    from seedr.objectives import OBJECTIVES
    from seedr.training.pretrain import PretrainConfig

    resolved = from_dict(PretrainConfig, merge_settings(recipe, given, dict(settings or {})))
    # every option of the objective, its defaults included, as the run records them
    objective = OBJECTIVES.get(resolved.objective_name)
    resolved.objective = dataclasses.asdict(from_dict(objective.config_class, resolved.objective, "objective"))
    return resolved


#: The keyword arguments of ``pretrain`` / ``finetune`` that are settings, and the key each sets.
_SETTING_OPTIONS = {
    "pretrain": {"objective": "objective_name", "model": "model.init", "size": "model.size",
                 "tokenizer": "model.tokenizer", "corpus": "data.corpus"},
    "finetune": {"model": "model", "train": "train_data", "negatives": "negatives", "loss": "loss",
                 "dev_qrels": "dev_qrels", "dev_queries": "dev_queries", "dev_corpus": "dev_corpus",
                 "dev_every": "dev_every", "rounds": "negative_options.rounds", "few_shot": "few_shot",
                 "seeds": "seeds"},
}


def _stage_options(stage: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The stage's keyword arguments as settings (``model`` → ``model.init`` when pre-training), those
    given only; paths and runs as the strings a config holds."""
    keys = _SETTING_OPTIONS[stage]
    unknown = sorted(set(options) - set(keys))
    if unknown:
        raise TypeError(f"{stage}: unknown option(s) {unknown}; options: {', '.join(keys)} (others go in settings)")
    given: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        if name == "corpus":
            value = _paths(value)
        elif name in ("model", "tokenizer", "train", "dev_qrels", "dev_queries", "dev_corpus"):
            value = _model_name(value)
        given[keys[name]] = value
    return given


@dataclasses.dataclass(frozen=True)
class TrainingRun:
    """A finished (or resumed) ``pretrain`` / ``finetune`` run folder.

    Give it as ``model=`` to the next stage: a run folder stands for its encoder.

    Attributes:
        path: the run folder (``config.yaml``, ``metrics.jsonl``, ``checkpoints/``, ``encoder/``).
        summary: what the run returned: the last logged metrics (pre-training) or the fine-tuning summary
            (steps, last loss, dev metrics).
    """

    path: Path
    summary: dict[str, Any]

    @property
    def encoder(self) -> Path:
        """The product: a Hugging Face + sentence-transformers folder."""
        return self.path / "encoder"

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def pretrain(out: str | os.PathLike, *, config: str | os.PathLike | None = None, objective: str | None = None,
             model: str | os.PathLike | None = None, size: str | None = None,
             tokenizer: str | os.PathLike | None = None, corpus: Source | None = None,
             settings: Settings | None = None, resume: bool = False) -> TrainingRun:
    """Pre-train an encoder with one objective (``seedr pretrain``); the encoder lands in ``out/encoder``.

    Args:
        out: the run folder.
        config: a recipe shipped with seedr (``seed``, ``cpdae``, ``mlm``, ``ict_bfs_wlp`` ...) or a YAML file.
        objective: the objective's name (default: the recipe's, else ``mlm``).
        model: continue from a model: a built-in name (``seedr-base``, ``minilm``), a Hugging Face folder or
            a run (a ``TrainingRun`` or its folder).
        size: from scratch instead: ``tiny``, ``mini``, ``small``, ``medium`` or ``base`` (needs ``tokenizer``).
        tokenizer: tokenizer folder for from-scratch pre-training.
        corpus: the text: paths, a ``datasets.Dataset`` or a list of dicts (rows held in memory are written
            to ``out/inputs/corpus.jsonl`` first: the token shards are keyed on files).
        settings: any recipe key, e.g. ``{"train.max_steps": 20, "data.max_seq_length": 128}``.
        resume: continue from the newest checkpoint in ``out``.

    Example:
        >>> run = seedr.pretrain("runs/seed", config="seed", model="seedr-base", corpus="my-docs.jsonl",
        ...                      settings={"train.max_steps": 20, "train.global_batch_size": 8})
        >>> run.encoder
        PosixPath('runs/seed/encoder')
    """
    from seedr.config import record_run
    from seedr.data.corpus import materialize_corpus
    from seedr.training.pretrain import pretrain as run_pretraining
    from seedr.training.trainer import check_run_folder

    if model is not None and size is not None:
        raise ValueError("model (continue from a checkpoint) and size (from scratch) exclude each other")
    out = Path(out)
    in_memory = corpus is not None and not _is_paths(corpus)
    resolved = resolve_settings("pretrain", config, settings, objective=objective, model=model, size=size,
                                tokenizer=tokenizer, corpus=None if in_memory else corpus)
    with _locked(out):
        check_run_folder(out, resume)  # before anything is loaded or tokenised
        if in_memory:
            record_run(out, resolved, resolved.train.seed)  # marks the folder as a run before its inputs go in
            written = out / "inputs" / "corpus.jsonl"  # kept with the run: what it trained on
            if not written.exists():  # a resumed run trains on the rows it was started with
                written.parent.mkdir(parents=True, exist_ok=True)
                materialize_corpus(corpus, written)
            resolved.data.corpus = [str(written)]
        return TrainingRun(out, run_pretraining(resolved, out, resume=resume))


def finetune(out: str | os.PathLike, *, model: str | os.PathLike | None = None,
             train: str | os.PathLike | None = None, negatives: str | None = None, loss: str | None = None,
             config: str | os.PathLike | None = None, settings: Settings | None = None,
             dev_qrels: str | os.PathLike | None = None, dev_queries: str | os.PathLike | None = None,
             dev_corpus: str | os.PathLike | None = None, dev_every: int | None = None, rounds: int | None = None,
             few_shot: float | None = None, seeds: Sequence[int] | None = None, resume: bool = False) -> TrainingRun:
    """Fine-tune an encoder into a dense retriever (``seedr finetune``); the encoder lands in ``out/encoder``.

    Args:
        out: the run folder.
        model: the encoder to start from: a built-in name (``seedr-base``, ``minilm``), a folder or a
            ``TrainingRun`` (default: ``minilm``).
        train: training data: a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/train.tsv``) or a DPR
            retriever JSON file.
        negatives: ``bm25``, ``in_batch``, ``static`` or ``ance`` (default: ``bm25``).
        loss: ``triplet``, ``nll`` or ``in_batch_softmax`` (default: ``triplet``).
        config: a recipe shipped with seedr (``dpr``, ``ance``, ``seed_siamese_bm25`` ...) or a YAML file.
        settings: any recipe key, e.g. ``{"train.max_steps": 200, "query_max_length": 32}``.
        dev_qrels, dev_queries, dev_corpus: development data, evaluated during training.
        dev_every: steps between development evaluations (0: before and after training only).
        rounds: static negatives: mine → fine-tune rounds.
        few_shot: train on this many sampled queries (≥ 1) or this share of them (< 1).
        seeds: few-shot: one run per seed.
        resume: continue the run in ``out`` from its newest checkpoint.

    Example:
        >>> retriever = seedr.finetune("runs/ft", model=run, train="scifact", loss="nll",
        ...                            settings={"train.max_steps": 50})
    """
    from seedr.training.finetune import finetune as run_finetuning
    from seedr.training.trainer import check_run_folder

    out = Path(out)
    resolved = resolve_settings("finetune", config, settings, model=model, train=train, negatives=negatives,
                                loss=loss, dev_qrels=dev_qrels, dev_queries=dev_queries, dev_corpus=dev_corpus,
                                dev_every=dev_every, rounds=rounds, few_shot=few_shot,
                                seeds=list(seeds) if seeds is not None else None)
    if not resolved.train_data:
        raise ValueError("no training data: give train= (--train), or train_data in the recipe")
    with _locked(out):
        check_run_folder(out, resume)  # before anything is loaded or mined
        return TrainingRun(out, run_finetuning(resolved, out, resume=resume))


@dataclasses.dataclass(frozen=True)
class Embeddings:
    """An embeddings folder written by ``encode`` (``embeddings-*.npy``, ``ids-*.txt``, ``manifest.json``).

    Attributes:
        path: the folder.
        corpus: the corpus it encodes, when known (``index`` passes it on, so that hits carry their texts).
        complete: whether the folder is whole (under several processes, only the last one to finish
            completes it).
    """

    path: Path
    corpus: Source | None = None
    complete: bool = True

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def encode(model: str | os.PathLike, corpus: Source, out: str | os.PathLike, *, pooling: str | None = None,
           normalize: bool | None = None, max_length: int | None = None, batch_size: int = 64,
           dtype: str = "float32", compute_dtype: str = "auto", shard_size: int = 50_000, limit: int | None = None,
           title: str | None = None, document_prefix: str = "", long_documents: str | None = None,
           device: str | None = None, show_progress: bool = True) -> Embeddings:
    """Encode every document of ``corpus`` into ``out`` (``seedr encode``); calling it again resumes.

    Documents are encoded as the model was trained (its folder records pooling, normalisation, length and
    how titles enter: by default ``title [SEP] text`` as a text pair). Under ``torchrun`` / ``accelerate
    launch`` each process encodes its own shards.

    Example:
        >>> embeddings = seedr.encode(retriever, "scifact/corpus.jsonl", "runs/emb")
    """
    from itertools import islice

    from accelerate import PartialState

    from seedr.data.corpus import count_documents, read_corpus
    from seedr.data.io import check_output_folder
    from seedr.retrieval.embeddings import MANIFEST
    from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards, model_defaults
    from seedr.retrieval.long_documents import long_document_passages

    if limit is not None and limit < 0:
        raise ValueError(f"limit (--limit) must be at least 0, got {limit}")
    if shard_size < 1 or batch_size < 1:
        raise ValueError(f"shard_size and batch_size must be at least 1, got {shard_size} and {batch_size}")
    out, model = Path(out), _model_name(model)
    with _locked(out):
        check_output_folder(out, "embeddings", replaces=False)
        state = PartialState(cpu=device == "cpu")  # the launcher's process group; one process without one
        defaults = model_defaults(model)
        encoder = TextEncoder(model, pooling=pooling or defaults["pooling"],
                              normalize=defaults["normalize"] if normalize is None else normalize,
                              max_length=max_length or defaults["max_length"],
                              device=state.device if device in (None, "cuda") else device, dtype=compute_dtype,
                              document_prefix=document_prefix, title=title)
        documents = read_corpus(corpus)
        # for the progress bar's ETA (None when the format cannot tell cheaply)
        total = count_documents(corpus) if _is_paths(corpus) else _length(corpus)
        if limit is not None:
            documents = islice(documents, limit)
            total = min(limit, total) if total is not None else None
        extra = {}
        if long_documents is not None:
            total = None  # passages, not documents
            documents = long_document_passages(documents, encoder.tokenizer, long_documents, encoder.max_length)
            extra = {"long_documents": long_documents}
        target = encode_corpus_to_shards(encoder, documents, out, shard_size=shard_size, dtype=dtype,
                                         batch_size=batch_size, extra_settings=extra, total=total,
                                         show_progress=show_progress and state.is_local_main_process,
                                         rank=state.process_index, world_size=state.num_processes)
    # No barrier: a process whose shards were done before a resume would wait, perhaps past the process
    # group's timeout, for the others; the last process to finish writes the manifest instead.
    return Embeddings(target, corpus, complete=(target / MANIFEST).exists())


def _length(rows: Any) -> int | None:
    try:
        return len(rows)
    except TypeError:
        return None


@dataclasses.dataclass(frozen=True)
class Hit:
    """One retrieved document: its id, its score and, when the corpus is known, its title and text."""

    id: str
    score: float
    text: str | None = None
    title: str | None = None


class Index:
    """A faiss index folder (``index``, ``seedr index``) and the encoder its queries need.

    ``search`` encodes queries as the documents were (the model the index records, checked by
    fingerprint) and returns ``Hit``s; with the corpus known (given here, or passed on from ``encode``),
    hits carry their titles and texts.

    Example:
        >>> index = seedr.Index("runs/scifact-index", corpus="scifact/corpus.jsonl")
        >>> index.search("what causes tides?", k=3)[0]
        Hit(id='4983', score=93.1, text='...', title='...')
    """

    def __init__(self, path: str | os.PathLike, *, corpus: Source | None = None,
                 model: str | os.PathLike | None = None, mmap: bool = False, device: str | None = None) -> None:
        self.path = Path(path)
        self.corpus = corpus
        self.model = _model_name(model)
        self.mmap = mmap
        self.device = device

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r})"

    @functools.cached_property
    def searcher(self) -> Any:
        """The ``seedr.retrieval.faiss_index.DenseIndex``, read once."""
        from seedr.retrieval.faiss_index import DenseIndex

        return DenseIndex.load(self.path, mmap=self.mmap)

    @functools.cached_property
    def encoder(self) -> Any:
        """The query encoder (``seedr.retrieval.encode.TextEncoder``) the index records."""
        from seedr.retrieval.encode import TextEncoder

        recorded = self.searcher.config.get("encoder") or {}
        if self.model is None and "model" not in recorded:
            raise ValueError(f"{self.path} does not record its encoder: give model=")
        return TextEncoder.from_settings(recorded, self.model, device=self.device)

    @functools.cached_property
    def documents(self) -> Mapping[str, Any]:
        """The corpus by id (``{}`` when it is not known): read once, on the first search."""
        from seedr.data.corpus import load_corpus

        return load_corpus(self.corpus) if self.corpus is not None else {}

    def search(self, queries: str | Sequence[str] | Mapping[str, str], k: int = 10,
               batch_size: int = 64) -> list[Hit] | list[list[Hit]] | dict[str, list[Hit]]:
        """The top ``k`` documents of one query (a list of ``Hit``), of several (a list of lists, in order)
        or of ``{qid: text}`` (``{qid: hits}``), best first; ties broken by document id."""
        from seedr.retrieval.runs import rank_documents
        from seedr.retrieval.search import search_text

        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        given = {"0": queries} if isinstance(queries, str) else (
            dict(queries) if isinstance(queries, Mapping) else {str(i): text for i, text in enumerate(queries)})
        run = search_text(self.searcher, self.encoder, given, k, batch_size)
        hits = {qid: [self._hit(doc, score) for doc, score in rank_documents(run.get(qid, {}))] for qid in given}
        if isinstance(queries, str):
            return hits["0"]
        return hits if isinstance(queries, Mapping) else [hits[qid] for qid in given]

    def _hit(self, doc: str, score: float) -> Hit:
        document = self.documents.get(doc)
        if document is None:
            return Hit(doc, float(score))
        return Hit(doc, float(score), document.text, document.title)


def index(embeddings: str | os.PathLike, out: str | os.PathLike, *, factory: str = "Flat", metric: str = "ip",
          train_sample: int | None = None, seed: int = 0, gpu: bool = True, overwrite: bool = False,
          corpus: Source | None = None, show_progress: bool = True) -> Index:
    """Build a faiss index folder from an embeddings folder (``seedr index``) and return it, ready to search.

    ``factory`` is a faiss ``index_factory`` string (``Flat``, ``HNSW32``, ``IVF256,PQ16np`` ...);
    ``corpus`` (default: the one ``encode`` read, when ``embeddings`` comes from it) gives hits their texts.

    Example:
        >>> index = seedr.index(embeddings, "runs/index")
        >>> index.search("what causes tides?", k=10)
    """
    from seedr.data.io import check_output_folder
    from seedr.retrieval.embeddings import load_embeddings, read_manifest
    from seedr.retrieval.faiss_index import DenseIndex

    if train_sample is not None and train_sample < 1:
        raise ValueError(f"train_sample (--train-sample) must be at least 1, got {train_sample}")
    out = Path(out)
    with _locked(out):
        check_output_folder(out, "faiss index", replaces=True, overwrite=overwrite)
        manifest = read_manifest(embeddings)
        ids, vectors = load_embeddings(embeddings)
        built = DenseIndex.build(vectors, ids, factory=factory, metric=metric, train_sample=train_sample, seed=seed,
                                 encoder={**manifest["encoder"], **manifest["extra"]}, show_progress=show_progress,
                                 gpu=gpu)
        built.save(out)
    if corpus is None and isinstance(embeddings, Embeddings):
        corpus = embeddings.corpus
    return Index(out, corpus=corpus)


@dataclasses.dataclass(frozen=True)
class SearchRun:
    """A ranking of documents for queries (``search``): ``{qid: {doc: score}}``, and the TREC file it was
    written to, if any.

    Attributes:
        run: the ranking.
        queries: the queries it answers (``{qid: text}``).
        kind: ``queries``, ``questions`` (NQ-open / DPR QA) or ``reqa``.
        path: the TREC run file (with its record of the queries, ``<path>.json``), or None.
        tag: the run's name.
    """

    run: dict[str, dict[str, float]]
    queries: dict[str, str]
    kind: str
    path: Path | None
    tag: str

    def __fspath__(self) -> str:
        if self.path is None:
            raise TypeError("this run was not written to a file (search(out=None))")
        return os.fspath(self.path)


def search(out: str | os.PathLike | None = None, *, queries: Source | Mapping[str, str] | None = None,
           questions: Source | None = None, reqa: str | os.PathLike | None = None, k: int = 100,
           index: str | os.PathLike | None = None, model: str | os.PathLike | None = None,
           max_length: int | None = None, query_prefix: str | None = None, batch_size: int = 64,
           nprobe: int | None = None, ef_search: int | None = None, device: str | None = None, mmap: bool = False,
           bm25: bool = False, corpus: Source | None = None, bm25_index: str | os.PathLike | None = None,
           k1: float = 0.9, b: float = 0.4, tag: str | None = None, overwrite: bool = False,
           show_progress: bool = True) -> SearchRun:
    """Rank documents for a batch of queries (``seedr search``): a dense ``index`` or ``bm25`` over a
    ``corpus``; the top ``k`` of each query, written as a TREC run to ``out`` when given.

    Exactly one of ``queries`` (BEIR queries.jsonl, TSV, parquet, a Dataset, a list of dicts or
    ``{qid: text}``), ``questions`` (NQ-open / DPR QA JSONL) or ``reqa`` (SQuAD JSON: its questions against its
    sentence candidates).

    Example:
        >>> bm25_run = seedr.search("runs/bm25.trec", bm25=True, corpus="scifact/corpus.jsonl",
        ...                         queries="scifact/queries.jsonl")
    """
    from seedr.data.corpus import count_documents, read_corpus
    from seedr.data.inputs import input_files
    from seedr.data.io import check_output_folder
    from seedr.data.queries import read_queries
    from seedr.evaluation.tasks import QaCoverageTask, ReqaTask
    from seedr.retrieval.bm25 import BM25Index
    from seedr.retrieval.encode import TextEncoder, model_defaults
    from seedr.retrieval.runs import queries_record, run_tag, write_run_and_record
    from seedr.retrieval.search import search_text

    sources = [source for source in (queries, questions, reqa) if source is not None]
    if len(sources) != 1:
        raise ValueError("give exactly one of queries (--queries), questions (--questions), reqa (--reqa)")
    model = _model_name(model)
    dense = index is not None or (reqa is not None and model is not None)
    if bm25 == dense:
        raise ValueError("choose one way to search: bm25 (--bm25), or a dense index (--index; reqa: a dense model)")
    if k < 1 or batch_size < 1:
        raise ValueError(f"k and batch_size must be at least 1, got {k} and {batch_size}")
    if bm25 and bm25_index is not None and (corpus is not None or reqa is not None):  # it will be written
        check_output_folder(bm25_index, "BM25 index", replaces=True, overwrite=overwrite)
    reqa_task = None  # the questions come from the evaluation task `seedr evaluate` scores them with
    if reqa is not None:
        reqa_task = ReqaTask(reqa)
        texts, kind, files = reqa_task.queries(), "reqa", [reqa]
    elif questions is not None:
        texts = QaCoverageTask(questions).queries()
        kind, files = "questions", input_files(questions, "questions")
    else:
        given_paths = _is_paths(queries)
        texts = {str(qid): str(text) for qid, text in queries.items()} if isinstance(queries, Mapping) \
            else read_queries(queries)
        kind, files = "queries", input_files(queries, "queries") if given_paths else []

    with _locked(out):
        if bm25:
            if corpus is None and reqa_task is None:
                if bm25_index is None:
                    raise ValueError("BM25 needs a corpus (--corpus, or --reqa) to index, or a saved bm25_index")
                searcher = BM25Index.load(bm25_index)
            else:
                if reqa_task is not None:
                    documents, total = reqa_task.documents(), len(reqa_task.candidates)
                else:
                    documents = read_corpus(corpus)
                    total = count_documents(corpus) if _is_paths(corpus) else _length(corpus)
                searcher = BM25Index.build(documents, k1=k1, b=b, show_progress=show_progress, total=total)
                if bm25_index is not None:
                    searcher.save(bm25_index)
            run = searcher.search(texts, k=k, show_progress=show_progress)
            tag = tag or "bm25"
        elif reqa_task is not None:  # dense ReQA: candidates are encoded as (sentence, paragraph) pairs
            defaults = model_defaults(model)
            encoder = TextEncoder(model, defaults["pooling"], defaults["normalize"],
                                  max_length or defaults["max_length"], device=device, query_prefix=query_prefix or "")
            searcher = reqa_task.index(encoder, batch_size, show_progress=show_progress)
            run = search_text(searcher, encoder, texts, k, batch_size, show_progress=show_progress)
            tag = tag or "reqa-dense"
        else:
            dense_index = Index(index, model=model, mmap=mmap, device=device)
            parameters = {"nprobe": nprobe, "efSearch": ef_search}
            dense_index.searcher.set_search_parameters(**{key: value for key, value in parameters.items() if value})
            encoder = dense_index.encoder
            if max_length is not None or query_prefix is not None:
                encoder = TextEncoder.from_settings(dense_index.searcher.config.get("encoder") or {}, model,
                                                    max_length=max_length, query_prefix=query_prefix, device=device)
            run = search_text(dense_index.searcher, encoder, texts, k, batch_size, show_progress=show_progress)
            tag = tag or run_tag(Path(index).resolve().name, "dense")  # a folder name may hold spaces
        path = None
        if out is not None:
            path = Path(out)
            # the record (the questions, for `seedr evaluate` to check) and the run, as one unit
            write_run_and_record(path, run, queries_record(texts, kind, files), tag)
    return SearchRun(run, texts, kind, path, tag)


@dataclasses.dataclass
class Evaluation:
    """Runs scored on one task (``evaluate``), with paired significance tests against the baseline.

    Attributes:
        mode: ``qrels``, ``qa`` (answer coverage) or ``reqa``.
        table: the comparison (``seedr.evaluation.compare.ComparisonTable``): each system's mean per metric,
            its difference to the baseline and the test's p-value.
        components: a fused run's tables against each run it was fused from.
        details: query counts, left-out metrics, questions.
        notes: what the evaluation had to say (metrics left out, runs without a record of their queries).
    """

    mode: str
    table: Any
    components: dict[str, dict[str, Any]]
    details: dict[str, Any]
    notes: list[str]
    runs: dict[str, str]

    @property
    def metrics(self) -> dict[str, dict[str, float]]:
        """``{system: {metric: mean}}``."""
        return {system: {metric: comparison.systems[system].mean
                         for metric, comparison in self.table.comparisons.items()}
                for system in self.table.systems}

    def to_markdown(self) -> str:
        return self.table.to_markdown()

    def __str__(self) -> str:
        return self.to_markdown()

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``seedr evaluate --json``."""
        result: dict[str, Any] = {"mode": self.mode, "runs": self.runs, **self.details}
        if len(self.table.systems) == 1:
            result["metrics"] = self.metrics[self.table.systems[0]]
        else:
            result["comparison"] = self.table.to_dict()
        if self.components:
            result["components"] = {name: {component: against.to_dict() for component, against in tables.items()}
                                    for name, tables in self.components.items()}
        return result


def evaluate(runs: Sequence[str | os.PathLike | SearchRun], *, qrels: str | os.PathLike | None = None,
             metrics: Sequence[str] | str | None = None, qa_answers: Source | None = None,
             corpus: Source | None = None, ks: Sequence[int] = (1, 5, 20, 100), qa_title: bool = False,
             reqa: str | os.PathLike | None = None, baseline: str | os.PathLike | SearchRun | None = None,
             test: str = "permutation", alpha: float = 0.05, resamples: int = 10_000,
             ignore_identical_ids: bool = False, components: bool = True, force: bool = False,
             show_progress: bool = True) -> Evaluation:
    """Score runs (``seedr evaluate``): IR metrics against ``qrels``, QA answer coverage (``qa_answers`` with
    the passage ``corpus``) or ``reqa``; with several runs, each is tested against the ``baseline`` (default:
    the first). Queries missing from a run score 0; ties are broken by document id; metrics deeper than the
    runs are left out, with a note.

    Example:
        >>> evaluation = seedr.evaluate([dense_run, bm25_run], qrels="scifact/qrels/test.tsv")
        >>> evaluation.metrics["bm25"]["nDCG@10"]
    """
    from seedr.data.io import DataError
    from seedr.evaluation import DEFAULT_METRICS
    from seedr.evaluation.compare import comparison_table
    from seedr.evaluation.metrics import run_depth
    from seedr.evaluation.qa_coverage import ranked_passages
    from seedr.evaluation.tasks import QaCoverageTask, QrelsTask, ReqaTask
    from seedr.retrieval.fusion import fused_components
    from seedr.retrieval.runs import check_run_queries, read_trec_run
    from seedr.retrieval.runs import ignore_identical_ids as drop_identical_ids

    given_modes = {"qrels": qrels, "qa": qa_answers, "reqa": reqa}
    modes = [mode for mode, source in given_modes.items() if source is not None]
    if len(modes) != 1:
        raise ValueError("give exactly one of qrels (--qrels), qa_answers (--qa-answers, with --corpus), reqa (--reqa)")
    if qa_answers is not None and corpus is None:
        raise ValueError("qa_answers (--qa-answers) needs corpus (--corpus), the passage corpus the runs rank")
    if not runs:
        raise ValueError("give at least one run to evaluate")
    notes: list[str] = []
    systems = [_System.of(run) for run in runs]
    if baseline is not None:
        first = _System.of(baseline)
        if first.key not in [system.key for system in systems]:
            systems = [first, *systems]
    given = len(systems)
    fused: dict[int, list[int]] = {}  # a fused run's position → its components' positions
    for position, system in enumerate(systems[:given] if components else []):
        if system.path is None:
            continue
        found, warnings = fused_components(system.path)
        notes.extend(f"warning: {warning}" for warning in warnings)
        for component in found:
            keys = [each.key for each in systems]
            if str(component.resolve()) not in keys:
                systems.append(_System.of(component))
                keys.append(str(component.resolve()))
            fused.setdefault(position, []).append(keys.index(str(component.resolve())))
    names = _names(systems)
    baseline_name = names[[system.key for system in systems].index(_System.of(baseline).key)] \
        if baseline is not None else names[0]
    loaded = {name: system.read(read_trec_run) for name, system in zip(names, systems)}
    for name, system in zip(names, systems):
        if not loaded[name]:  # zeros for every query would read as a result
            raise DataError(system.path or name, "the run ranks no documents (an empty run): nothing to evaluate")
    if ignore_identical_ids:
        loaded = {name: drop_identical_ids(run) for name, run in loaded.items()}

    details: dict[str, Any] = {}
    if reqa is not None:
        task: Any = ReqaTask(reqa)
    elif qa_answers is not None:
        cutoffs = [int(k) for k in ks]
        if not cutoffs or min(cutoffs) < 1:
            raise ValueError(f"ks (--ks): every k must be at least 1, got {list(ks)!r}")
        task = QaCoverageTask(qa_answers, [f"Top-{k}" for k in cutoffs], include_title=qa_title)
    else:
        chosen = DEFAULT_METRICS if metrics is None else (
            [name.strip() for name in metrics.split(",") if name.strip()] if isinstance(metrics, str) else list(metrics))
        task = QrelsTask(qrels, chosen)
    depth = min(run_depth(run) for run in loaded.values())
    too_deep = task.deeper_than(depth)
    if too_deep:  # Top-100 or R@1000 of a run 20 deep would be its value at 20
        notes.append(f"left out {', '.join(too_deep)}: the runs rank at most {depth} {task.ranked}, so these "
                     f"would equal their value at {depth} (search with a larger k, --k)")
        details["left_out"] = {"metrics": too_deep, "run_depth": depth}
        if len(too_deep) == len(task.metrics):
            raise ValueError(f"every metric asked for is deeper than the runs ({depth} {task.ranked})")
        task.metrics = [metric for metric in task.metrics if metric not in too_deep]
    if isinstance(task, QrelsTask):
        per_system = {name: task.per_query(run) for name, run in loaded.items()}
        details["queries"] = {name: task.query_counts(run) for name, run in loaded.items()}
        for name, counts in details["queries"].items():
            if counts["missing_from_run"] or counts["unjudged_in_run"]:
                notes.append(f"{name}: {counts['missing_from_run']} judged queries missing from the run (scored 0), "
                             f"{counts['unjudged_in_run']} unjudged queries ignored")
    else:  # QA and ReQA runs must have been searched with these questions
        asked = task.queries()
        source = ", ".join(map(str, _paths(qa_answers) if qa_answers is not None else [reqa]))
        for system in systems:
            warning = system.check_queries(asked, source, check_run_queries)
            if warning and not force:
                raise DataError(system.path, f"{warning.split(': ', 1)[-1]}: question ids are line numbers, so a run "
                                             "of other questions would be scored silently wrong; pass --force "
                                             "(force=True) to score it anyway (a run made by another tool)")
            if warning:
                notes.append(f"warning: {warning}")
        if isinstance(task, QaCoverageTask):
            task.passages = ranked_passages(loaded.values(), corpus, show_progress=show_progress)
        per_system = {name: task.per_query(run, show_progress=show_progress) for name, run in loaded.items()}
        details["questions"] = len(asked)

    table = comparison_table({name: per_system[name] for name in names[:given]}, baseline_name, test=test,
                             alpha=alpha, n_resamples=resamples, show_progress=show_progress)
    versus = {names[position]: {names[part]: comparison_table({names[part]: per_system[names[part]],
                                                               names[position]: per_system[names[position]]},
                                                              names[part], test=test, alpha=alpha,
                                                              n_resamples=resamples)
                                for part in parts}
              for position, parts in fused.items()}
    details["ignore_identical_ids"] = ignore_identical_ids
    return Evaluation(modes[0], table, versus, details, notes,
                      {name: system.label for name, system in zip(names, systems)})


@dataclasses.dataclass(frozen=True)
class _System:
    """A run given to ``evaluate``: a TREC file, or a ``SearchRun`` held in memory."""

    key: str
    label: str
    stem: str
    path: Path | None
    held: SearchRun | None

    @classmethod
    def of(cls, run: str | os.PathLike | SearchRun) -> _System:
        if isinstance(run, SearchRun) and run.path is None:
            return cls(f"<{run.tag}>", run.tag, run.tag, None, run)
        path = Path(os.fspath(run))
        return cls(str(path.resolve()), str(path), path.stem, path, run if isinstance(run, SearchRun) else None)

    def read(self, reader: Any) -> dict[str, dict[str, float]]:
        return self.held.run if self.held is not None else reader(self.path)

    def check_queries(self, asked: Mapping[str, str], source: str, check: Any) -> str | None:
        """A warning when the run does not record its questions; an error when it records others."""
        if self.path is not None:
            return check(self.path, asked, source)
        if self.held is not None and self.held.queries != dict(asked):
            raise ValueError(f"the run {self.label!r} was searched with other questions than {source}")
        return None


def _names(systems: Sequence[_System]) -> list[str]:
    """Short system names: file names without suffix, or whole labels when two would collide."""
    stems = [system.stem for system in systems]
    return stems if len(set(stems)) == len(stems) else [system.label for system in systems]


__all__ = ["Embeddings", "Evaluation", "Hit", "Index", "SearchRun", "TrainingRun", "encode", "evaluate", "finetune",
           "index", "pretrain", "resolve_settings", "search"]
