"""The CPU a result was computed on, read from ``/proc/cpuinfo`` without torch: a run's record
(``seedr.provenance``) and an experiment's report name it, since timings on the two CPUs of this project (an
AMD EPYC with AVX2 alone, an Intel Xeon with AVX512-BF16 and AMX) differ threefold and bf16 is native on one
only (``seedr.hardware``)."""

from __future__ import annotations

import platform
from pathlib import Path

#: The CPU flags (``/proc/cpuinfo``) that decide how fast a CPU trains, under the names ``lscpu`` shows
#: them and the names a report gives them: float32 runs on AVX2 or AVX-512, bf16 natively only on the last
#: two.
VECTOR_EXTENSIONS = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_bf16": "AVX512-BF16",
                     "amx_bf16": "AMX-BF16"}


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, object]:
    """The CPU's model name and its vector extensions among ``VECTOR_EXTENSIONS``, read from
    ``/proc/cpuinfo`` (Linux; elsewhere the model as ``platform`` gives it and no extensions): timings on
    the two CPUs of this project (an AMD EPYC with AVX2 alone, an Intel Xeon with AVX512-BF16 and AMX)
    differ threefold, so a report says which one it ran on."""
    model, flags = platform.processor() or platform.machine(), set()
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    return {"model": model, "extensions": [name for flag, name in VECTOR_EXTENSIONS.items() if flag in flags]}


__all__ = ["VECTOR_EXTENSIONS", "cpu_description"]
