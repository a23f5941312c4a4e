"""`seedr search`: rank documents for queries — dense (faiss index + encoder) or BM25 — into a TREC run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, console, locks_output


@clear_errors
@locks_output("out")
def command(
    out: Annotated[Path, typer.Option("--out", help="TREC run file to write.")],
    queries: Annotated[list[Path] | None, typer.Option(
        "--queries", help="Queries: BEIR queries.jsonl or TSV (qid<TAB>text), or a BEIR / `seedr prepare` "
                          "folder holding queries.jsonl; repeatable, quoted globs too."
    )] = None,
    questions: Annotated[list[Path] | None, typer.Option(
        "--questions", help="Or questions of NQ-open / DPR QA JSONL files (repeatable, folders and quoted "
                            "globs too)."
    )] = None,
    reqa: Annotated[Path | None, typer.Option(
        "--reqa", help="Or ReQA: SQuAD JSON; its questions against its (sentence, paragraph) candidates."
    )] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Documents per query.")] = 100,
    index: Annotated[Path | None, typer.Option(
        "--index", help="Dense: index folder from `seedr index`."
    )] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Dense: query encoder (default: the one recorded in the index; another path must hold "
                        "the same weights, checked by fingerprint)."
    )] = None,
    max_length: Annotated[int | None, typer.Option(
        "--max-length", min=1, help="Dense: tokens per query (default: as the documents)."
    )] = None,
    query_prefix: Annotated[str | None, typer.Option(
        "--query-prefix", help="Dense: text put before every query."
    )] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Dense: queries per forward pass.")] = 64,
    nprobe: Annotated[int | None, typer.Option(
        "--nprobe", min=1, help="Dense IVF indexes: inverted lists visited."
    )] = None,
    ef_search: Annotated[int | None, typer.Option(
        "--ef-search", min=1, help="Dense HNSW indexes: search breadth."
    )] = None,
    device: Annotated[str | None, typer.Option("--device", help="Dense: cpu, cuda ...")] = None,
    mmap: Annotated[bool, typer.Option(
        "--mmap", help="Dense: memory-map the index instead of reading it (indexes larger than memory)."
    )] = False,
    bm25: Annotated[bool, typer.Option("--bm25", help="BM25 instead of a dense index.")] = False,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="BM25: corpus to index on the fly: a file, a folder (of shards, or made by "
                         "`seedr prepare`) or a quoted glob; repeatable."
    )] = None,
    bm25_index: Annotated[Path | None, typer.Option(
        "--bm25-index", help="BM25: a saved index folder (or where to save one built from --corpus)."
    )] = None,
    k1: Annotated[float, typer.Option("--k1", min=0, help="BM25 k1 (Anserini's default).")] = 0.9,
    b: Annotated[float, typer.Option("--b", min=0, max=1, help="BM25 b (Anserini's default).")] = 0.4,
    tag: Annotated[str | None, typer.Option(
        "--tag", help="Run tag, last column (default: bm25 or the index folder name, spaces as _)."
    )] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="BM25: replace --bm25-index when it already holds an index.")] = False,
) -> None:
    """Search a dense index or BM25 with a batch of queries and write the top k as a TREC run.

    Example: seedr search --index runs/scifact-index --queries scifact/queries.jsonl --out dense.trec
    """
    from seedr.data.corpus import count_documents, read_corpus
    from seedr.data.inputs import input_files
    from seedr.data.io import check_output_folder
    from seedr.data.queries import read_queries
    from seedr.evaluation.tasks import QaCoverageTask, ReqaTask
    from seedr.retrieval.bm25 import BM25Index
    from seedr.retrieval.encode import TextEncoder, model_defaults
    from seedr.retrieval.faiss_index import DenseIndex
    from seedr.retrieval.runs import run_tag, write_run_record, write_trec_run
    from seedr.retrieval.search import search_text

    sources = [source for source in (queries, questions, reqa) if source]
    if len(sources) != 1:
        raise ValueError("give exactly one of --queries, --questions, --reqa")
    dense = index is not None or (reqa is not None and model is not None)
    if bm25 == dense:
        raise ValueError("choose one way to search: --bm25, or a dense --index (--reqa: a dense --model)")
    if k < 1 or batch_size < 1:
        raise ValueError(f"--k and --batch-size must be at least 1, got {k} and {batch_size}")
    if bm25 and bm25_index is not None and (corpus is not None or reqa is not None):  # it will be written
        check_output_folder(bm25_index, "BM25 index", replaces=True, overwrite=overwrite)
    reqa_task = None  # the questions come from the evaluation task `seedr evaluate` scores them with
    if reqa is not None:
        reqa_task = ReqaTask(reqa)
        texts, kind, files = reqa_task.queries(), "reqa", [reqa]
    elif questions:
        texts = QaCoverageTask(questions).queries()
        kind, files = "questions", input_files(questions, "questions")
    else:
        texts = read_queries(queries)
        kind, files = "queries", input_files(queries, "queries")

    if bm25:
        if not corpus and reqa_task is None:
            if bm25_index is None:
                raise ValueError("BM25 needs --corpus (or --reqa) to index, or a saved --bm25-index")
            searcher = BM25Index.load(bm25_index)
        else:
            if reqa_task is not None:
                documents, total = reqa_task.documents(), len(reqa_task.candidates)
            else:
                documents, total = read_corpus(corpus), count_documents(corpus)
            searcher = BM25Index.build(documents, k1=k1, b=b, show_progress=True, total=total)
            if bm25_index is not None:
                searcher.save(bm25_index)
        run = searcher.search(texts, k=k, show_progress=True)
        tag = tag or "bm25"
    elif reqa_task is not None:  # dense ReQA: candidates are encoded as (sentence, paragraph) pairs
        defaults = model_defaults(model)
        encoder = TextEncoder(model, defaults["pooling"], defaults["normalize"],
                              max_length or defaults["max_length"], device=device,
                              query_prefix=query_prefix or "")
        searcher = reqa_task.index(encoder, batch_size, show_progress=True)
        run = search_text(searcher, encoder, texts, k, batch_size, show_progress=True)
        tag = tag or "reqa-dense"
    else:
        searcher = DenseIndex.load(index, mmap=mmap)
        parameters = {"nprobe": nprobe, "efSearch": ef_search}
        searcher.set_search_parameters(**{key: value for key, value in parameters.items() if value})
        recorded = searcher.config.get("encoder") or {}
        if model is None and "model" not in recorded:
            raise ValueError(f"{index} does not record its encoder: pass --model")
        encoder = TextEncoder.from_settings(recorded, model, max_length=max_length, query_prefix=query_prefix,
                                            device=device)
        run = search_text(searcher, encoder, texts, k, batch_size, show_progress=True)
        tag = tag or run_tag(index.resolve().name, "dense")  # a folder name may hold spaces
    lines = write_trec_run(out, run, tag=tag)
    record = write_run_record(out, texts, kind, files)  # lets `seedr evaluate` check the questions
    console.print(f"{len(run)} queries, {lines} lines written to [bold]{out}[/] (its queries: {record.name})")
