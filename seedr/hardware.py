"""What the machine computes natively, and the precision seedr runs in when asked for ``auto``.

bf16 is only a speed-up where the hardware computes it: a CUDA GPU that supports it, or a CPU with
AVX512-BF16 or AMX instructions. On a CPU with AVX2 alone oneDNN emulates it, and a bf16 matrix product
runs hundreds of times slower than the float32 one (a one-off check of 2048² products on a 2-core
AMD EPYC with AVX2: 0.28 against 95 GFLOP/s), so an experiment written for one machine in bf16 would not finish on the other. ``auto``
(training's ``train.mixed_precision``, encoding's ``compute_dtype``) picks bf16 where it is native and
float32 elsewhere; ``run.json`` records the CPU's model and vector extensions (``seedr.cpu.cpu_description``),
which say which.
"""

from __future__ import annotations

import functools
import time

import torch


def default_device() -> torch.device:
    """Where seedr computes when not told: a CUDA GPU when there is one (as Accelerate chooses for
    training), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@functools.cache
def _native_bf16(device_type: str) -> bool:
    if device_type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device_type != "cpu":
        return False
    # torch.cpu exposes these checks only as private functions; absent from a torch build = unsupported
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def native_bf16(device: str | torch.device) -> bool:
    """Does ``device`` compute bfloat16 natively: a CUDA GPU that supports it, or a CPU with AVX512-BF16
    or AMX instructions (where oneDNN runs bf16 matrix products in hardware; without them it emulates
    bf16, far more slowly than float32)?"""
    return _native_bf16(torch.device(device).type)


def default_compute_dtype(device: str | torch.device) -> str:
    """What ``compute_dtype: auto`` (``seedr encode --compute-dtype auto``) runs under: ``bfloat16``
    autocast where ``native_bf16``, else ``float32``. Vectors are stored in float32 either way, and bf16
    ones stay close to the float32 ones (``tests/test_retrieval_dense.py`` checks their cosine)."""
    return "bfloat16" if native_bf16(device) else "float32"


def encoding_dtype(value: str | torch.dtype | None, device: str | torch.device) -> str | torch.dtype:
    """What encoding's ``compute_dtype`` computes in: ``auto`` as ``default_compute_dtype(device)``, ``None``
    as float32, any other as given."""
    if value == "auto":
        return default_compute_dtype(device)
    return "float32" if value is None else value


def resolve_mixed_precision(value: str, device: str | torch.device) -> str:
    """``train.mixed_precision`` as it will run: ``auto`` becomes ``bf16`` where ``native_bf16(device)``
    and ``no`` elsewhere; ``no``, ``bf16`` and ``fp16`` stand as given."""
    if value == "auto":
        return "bf16" if native_bf16(device) else "no"
    return value


#: ``train.mixed_precision`` as ``resolve_mixed_precision`` gives it, as the dtype it computes in.
PRECISION_DTYPES = {"no": "float32", "bf16": "bfloat16", "fp16": "float16"}


def training_dtype(mixed_precision: str, device: str | torch.device) -> str:
    """The dtype training computes its matrix products in under ``train.mixed_precision``."""
    return PRECISION_DTYPES.get(resolve_mixed_precision(mixed_precision, device), "float32")


def matmul_rate(dtype: str, device: str | torch.device = "cpu", seconds: float = 0.1) -> float:
    """How many floating-point operations per second ``device`` reaches on square matrix products in
    ``dtype`` (512² on a CPU, 4096² on a GPU), timed for about ``seconds`` after one untimed product. It
    scales estimates of work that has not run yet (an experiment's ETA, ``seedr.experiments.eta``)
    to this machine: 2 cores with AVX2 and a GPU differ a thousandfold. A CPU that emulates bf16 takes
    about a second for one such product."""
    device = torch.device(device)
    size = 4096 if device.type == "cuda" else 512
    generator = torch.Generator().manual_seed(0)
    left = torch.randn(size, size, generator=generator).to(device=device, dtype=getattr(torch, dtype))
    right = torch.randn(size, size, generator=generator).to(device=device, dtype=getattr(torch, dtype))

    def product() -> None:
        torch.matmul(left, right)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    product()
    products, elapsed, started = 0, 0.0, time.perf_counter()
    while elapsed < seconds or products < 2:
        product()
        products, elapsed = products + 1, time.perf_counter() - started
    return 2.0 * size ** 3 * products / elapsed


__all__ = ["PRECISION_DTYPES", "default_compute_dtype", "default_device", "encoding_dtype", "matmul_rate",
           "native_bf16", "resolve_mixed_precision", "training_dtype"]
