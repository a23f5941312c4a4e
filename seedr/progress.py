"""Progress bars when the output is not a terminal (a file, a cluster's log, ``nohup``).

tqdm redraws a bar in place with carriage returns: in a file every redraw lands on one ever-growing
line (a BM25 search of 1,800 questions over 658,860 passages wrote a 79 kB line), and transformers adds
its "Loading weights" bars. ``plain_progress`` makes every bar print a line of its own at a modest
interval instead (the ETA included), and turns the Hugging Face loading bars off. A terminal keeps
the live bars.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Any

#: Seconds between two progress lines of one bar (``SEEDR_PROGRESS_INTERVAL`` overrides it).
DEFAULT_INTERVAL = 30.0

_CURSOR_CONTROLS = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # tqdm's moves between nested bars


class LineProgress:
    """A text stream that writes each carriage-return redraw as a line of its own.

    tqdm writes ``"\\r" + bar`` (padded with spaces over the previous one), and a newline when a bar is
    closed; here each redraw becomes ``bar + "\\n"``, and the closing newline after it is dropped.
    Everything else passes through unchanged.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._after_redraw = False  # the last write was a redraw, already ended with its own newline

    def write(self, text: str) -> int:
        if "\r" not in text and not (text == "\n" and self._after_redraw):
            self._after_redraw = False
            return self.stream.write(text)
        if text == "\n":  # a bar's closing newline: its last redraw already ended its line
            self._after_redraw = False
            return len(text)
        head, *redraws = text.split("\r")
        if head:
            self.stream.write(head)
        for redraw in redraws:
            line = _CURSOR_CONTROLS.sub("", redraw).rstrip()
            if line:
                self.stream.write(line + "\n")
                self._after_redraw = True
        return len(text)

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding ... of the real stream
        return getattr(self.stream, name)


def plain_progress(stream: IO[str] | None = None) -> bool:
    """When ``stream`` (default: ``sys.stderr``, where the bars go) is not a terminal: progress lines at
    most every ``SEEDR_PROGRESS_INTERVAL`` seconds (default 30) with their ETA, as lines of their own,
    and no Hugging Face loading bars. Must run before tqdm is imported (it reads its defaults from the
    environment then). Returns whether it changed anything."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty() or isinstance(stream, LineProgress):
        return False
    interval = os.environ.get("SEEDR_PROGRESS_INTERVAL", str(DEFAULT_INTERVAL))
    os.environ.setdefault("TQDM_MININTERVAL", interval)
    os.environ.setdefault("TQDM_MAXINTERVAL", str(max(float(interval), 10.0) * 2))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' "Loading weights" bars too
    if stream is sys.stderr:
        sys.stderr = LineProgress(stream)  # type: ignore[assignment]
    return True


__all__ = ["DEFAULT_INTERVAL", "LineProgress", "plain_progress"]
