"""The lines a report opens with: the machine and the precision it computed in, and the code behind
its figures — what this run computed and what it reused, grouped by the code that computed it."""

from __future__ import annotations

import os
import platform
from typing import Any

import torch

from seedr.cpu import cpu_description
from seedr.experiments.spec import Experiment
from seedr.hardware import native_bf16


def machine() -> dict[str, Any]:
    """The machine a run was made on, for the report. Whether its CPU computes bf16 natively is recorded
    too: ``mixed_precision: auto`` trains in bf16 there and in float32 elsewhere, and on the 2-core CPUs
    of this project the same experiment's steps took 2.8× as long without it."""
    cpu = cpu_description()
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_model": cpu["model"], "cpu_extensions": cpu["extensions"], "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "cpu_native_bf16": native_bf16("cpu"),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def _cpu_text(machine_text: dict[str, Any]) -> str:
    """The CPU's model and vector extensions, e.g. "AMD EPYC 7B13 (AVX2)"; the processor field alone for
    runs recorded before these were."""
    if "cpu_model" not in machine_text:
        return machine_text["processor"]
    extensions = ", ".join(machine_text["cpu_extensions"]) or "no AVX2"
    return f"{machine_text['cpu_model']} ({extensions})"


def _bf16_text(machine_text: dict[str, Any]) -> str:
    """", CPU with native bf16 …" or ", CPU without native bf16 …", with what ``auto`` precision computes in
    there; nothing for runs recorded before it was."""
    if "cpu_native_bf16" not in machine_text:
        return ""
    native = machine_text["cpu_native_bf16"]
    return (f", CPU {'with' if native else 'without'} native bf16 (precision `auto` computes in "
            f"{'bf16' if native else 'float32'})")


def report_preamble(experiment: Experiment, results: dict[str, Any]) -> str:
    machine_text = results["machine"]
    lines = [experiment.description.strip(), "",
             f"- scale: **{experiment.scale}**; command: `{results['command']}`",
             f"- machine: {_cpu_text(machine_text)}, {machine_text['cpus']} CPUs, torch threads "
             f"{machine_text['torch_threads']}{_bf16_text(machine_text)}, GPU {machine_text['gpu'] or 'none'} "
             f"({machine_text['platform']})",
             f"- wall time of this run: {results['wall_seconds']:.0f} s; every step and retrieval of the "
             f"experiment, as each was timed when it ran (also those reused from earlier runs or shared with other "
             f"experiments): {results['compute_seconds']:.0f} s; started {results['started']}"]
    if experiment.skipped:
        lines.append(f"- not run at this scale (the file's `scales.{experiment.scale}.skip`): "
                     + ", ".join(f"`{name}`" for name in experiment.skipped))
    return "\n".join([*lines, *provenance_lines(results)])


def _code_label(code: dict[str, str] | None) -> str:
    return "an unrecorded code" if code is None else f"seedr {code['version']} source `{code['source']}`"


def provenance_lines(results: dict[str, Any]) -> list[str]:
    """The report's lines on the code behind its figures (``results.json``'s ``code`` and ``provenance``):
    the library this run ran, what it computed, and the steps and retrievals it reused from earlier runs,
    by folder, grouped by the code that computed them — each folder's step.json or settings.json records
    the fingerprint of the code it ran, which its key covers (``ExperimentStep.code``, ``retrieval_code``),
    so a figure computed by other code is never presented as this code's."""
    units = results["provenance"]
    computed = [unit for unit in units if not unit["reused"]]
    lines = [f"- code: {_code_label(results['code'])}; computed by this run: {_count(computed)}"]
    by_code: dict[str, list[str]] = {}
    for unit in units:
        if unit["reused"]:
            by_code.setdefault(_code_label(unit["code"]), []).append(f"`{unit['folder']}`")
    if by_code:
        reused = [unit for unit in units if unit["reused"]]
        lines.append(f"- reused from earlier runs: {_count(reused)}; "
                     + "; ".join(f"{len(folders)} computed by {label}: {', '.join(folders)}"
                                 for label, folders in by_code.items()))
    return lines


def _count(units: list[dict[str, Any]]) -> str:
    steps = sum(unit["folder"].startswith("steps/") for unit in units)
    retrievals = len(units) - steps
    return (f"{steps} step{'s' * (steps != 1)} and {retrievals} "
            f"retrieval{'s' * (retrievals != 1)}")

__all__ = ["machine", "provenance_lines", "report_preamble"]
