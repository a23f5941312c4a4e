"""Writing a plot: every figure seedr draws goes through ``save_plot``, so reports look alike and stay small."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from PIL import Image

from seedr.io import atomic_write

#: Resolution of every plot: legible in a browser and in a Markdown viewer at its natural size.
DPI = 110
#: Colours a plot keeps: line plots use a few, so a palette of 256 keeps them exact up to antialiasing's
#: blends, and makes the file about a third of matplotlib's RGBA output (recorded reports are tracked in git).
PALETTE_COLOURS = 256


def save_plot(figure: Any, path: str | os.PathLike) -> Path:
    """Save a matplotlib ``figure`` as a palette PNG at ``path``, atomically (a kill never leaves a half-drawn
    plot). seedr draws on plain ``matplotlib.figure.Figure`` objects, never through pyplot: no backend is
    chosen for the user's process, and no figure stays open in a global registry to be closed."""
    drawn = io.BytesIO()
    figure.savefig(drawn, format="png", dpi=DPI)
    drawn.seek(0)
    image = Image.open(drawn).convert("RGB").quantize(colors=PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT,
                                                      dither=Image.Dither.NONE)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as stream:
        image.save(stream, format="PNG", optimize=True)
    return path


__all__ = ["DPI", "PALETTE_COLOURS", "save_plot"]
