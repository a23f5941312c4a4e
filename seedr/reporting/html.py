"""A report's Markdown as one self-contained HTML page: tables, and every plot embedded as a base64
``data:`` URI, so the page opens anywhere — mailed, attached, offline — with no file beside it.

Markdown is rendered by ``markdown-it-py`` (CommonMark with tables); images that point outside the
report folder or to a missing file are an error rather than a broken page.
"""

from __future__ import annotations

import base64
import html
import mimetypes
from pathlib import Path

from markdown_it import MarkdownIt

from seedr.io import REPORT_PAGE_MARKER, DataError, atomic_write

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; }
td { text-align: right; } td:first-child { text-align: left; }
th { background: #f3f3f3; }
img { max-width: 100%; }
code { background: #f5f5f5; padding: 0 0.2rem; }
"""


def _data_uri(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def markdown_to_html(markdown: str, base: str | Path, title: str = "seedr report") -> str:
    """A whole HTML document of ``markdown``; images (relative to ``base``) are embedded."""
    base = Path(base).resolve()
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(markdown)
    for token in tokens:
        for child in token.children or []:
            if child.type != "image":
                continue
            source = str(child.attrGet("src") or "")
            image = (base / source).resolve()
            if "://" in source or not image.is_relative_to(base) or not image.is_file():
                raise DataError(base, f"image {source!r} is not a file inside the report folder")
            child.attrSet("src", _data_uri(image))
    body = parser.renderer.render(tokens, parser.options, {})
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{REPORT_PAGE_MARKER}\n"
            f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def write_html(markdown: str, path: str | Path, base: str | Path, title: str = "seedr report") -> Path:
    """Write ``markdown`` as a self-contained HTML page to ``path`` (atomically)."""
    with atomic_write(path) as stream:
        stream.write(markdown_to_html(markdown, base, title))
    return Path(path)


#: The Markdown report of a report folder (``seedr report``, an experiment's, a recorded one in docs/results).
REPORT_MARKDOWN = "report.md"


def is_report_folder(folder: str | Path) -> bool:
    """Whether ``folder`` is a written report (its ``report.md``) rather than a run folder to report on."""
    folder = Path(folder)
    return (folder / REPORT_MARKDOWN).is_file() and not (folder / "metrics.jsonl").exists()


def render_report_html(folder: str | Path, out_dir: str | Path) -> Path:
    """Re-render the self-contained HTML page of a written report folder (``report.md`` and the plots it
    links) into ``out_dir/report.html``: recorded reports keep Markdown, PNG and JSON only, and their page
    is made again on demand. The title is the report's first heading."""
    folder = Path(folder)
    markdown = (folder / REPORT_MARKDOWN).read_text(encoding="utf-8")
    title = next((line[2:].strip() for line in markdown.splitlines() if line.startswith("# ")), "seedr report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return write_html(markdown, out / "report.html", base=folder, title=title)


__all__ = ["REPORT_MARKDOWN", "is_report_folder", "markdown_to_html", "render_report_html", "write_html"]
