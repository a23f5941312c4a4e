"""What every job of the GPU pack writes as it goes: ``results.json`` after each unit it finishes, so that a
lease cut short (the device's command limit, a lost machine) still returns the units it finished."""

from __future__ import annotations

import json
from pathlib import Path


def save_partial(out: Path, results: dict) -> None:
    """``out/results.json`` as it stands, replaced whole (written beside, then renamed, so a kill mid-write
    leaves the previous one): ``"complete": false`` unless ``results`` says otherwise (the job's end)."""
    out.mkdir(parents=True, exist_ok=True)
    partial = out / "results.json.part"
    partial.write_text(json.dumps({"complete": False, **results}, indent=2))
    partial.replace(out / "results.json")
