"""Low-level I/O shared by every layer: one error for bad input (``errors``), transparent compression and
line-numbered parsing (``reading``), atomic writes so that a failed run never leaves half-written output
(``writing``), whether a stage may write an output at all (``outputs``), the lock that keeps two runs
off one output (``locks``), a training run's folder (``run_folders``), and what a stopped command keeps
(``stops``)."""

from seedr.io.errors import (
    TOO_DEEP,
    DataError,
    disk_full,
    json_problem,
    no_space_left,
    require,
    require_file,
    unique_id,
)
from seedr.io.locks import LOCK_SUFFIX, lock_path, output_lock
from seedr.io.outputs import (
    EVALUATION_MARKDOWN_MARKER,
    OUTPUT_KINDS,
    OUTPUT_MARKERS,
    REPORT_MARKER,
    REPORT_PAGE_MARKER,
    check_output,
    foreign_files,
    output_kind,
)
from seedr.io.reading import (
    BOM,
    CORRUPT_STREAM_ERRORS,
    iter_jsonl,
    iter_lines,
    open_binary,
    parse_json,
    read_bytes,
    read_json,
    read_text,
)
from seedr.io.writing import (
    AtomicFiles,
    atomic_directory,
    atomic_files,
    atomic_write,
    json_text,
    process_alive,
    remove_stale_temporaries,
    write_jsonl,
)

__all__ = [
    "BOM",
    "CORRUPT_STREAM_ERRORS",
    "EVALUATION_MARKDOWN_MARKER",
    "LOCK_SUFFIX",
    "OUTPUT_KINDS",
    "OUTPUT_MARKERS",
    "REPORT_MARKER",
    "REPORT_PAGE_MARKER",
    "TOO_DEEP",
    "AtomicFiles",
    "DataError",
    "atomic_directory",
    "atomic_files",
    "atomic_write",
    "check_output",
    "disk_full",
    "foreign_files",
    "iter_jsonl",
    "iter_lines",
    "json_problem",
    "json_text",
    "lock_path",
    "no_space_left",
    "open_binary",
    "output_kind",
    "output_lock",
    "parse_json",
    "process_alive",
    "read_bytes",
    "read_json",
    "read_text",
    "remove_stale_temporaries",
    "require",
    "require_file",
    "unique_id",
    "write_jsonl",
]
