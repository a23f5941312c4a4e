"""What a report says about the CPU it ran on (``seedr.cpu.cpu_description``), and what a stage computes
in."""

from __future__ import annotations

import platform

from seedr.cpu import cpu_description
from seedr.experiments.record.results_markdown import machine_label
from seedr.hardware import (
    default_compute_dtype,
    encoding_dtype,
    matmul_rate,
    training_dtype,
)

AMD_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme sse sse2 avx avx2 fma bmi2
"""


def test_the_cpu_model_and_its_vector_extensions_come_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(AMD_AVX2 + AMD_AVX2.replace(": 0", ": 1"))
    assert cpu_description(cpuinfo) == {"model": "AMD EPYC 7B13", "extensions": ["AVX2"]}
    cpuinfo.write_text(AMD_AVX2.replace("AMD EPYC 7B13", "Intel(R) Xeon(R) Processor")
                       .replace("bmi2", "bmi2 avx512f avx512_bf16 amx_bf16 amx_tile"))
    assert cpu_description(cpuinfo) == {"model": "Intel(R) Xeon(R) Processor",
                                        "extensions": ["AVX2", "AVX-512", "AVX512-BF16", "AMX-BF16"]}


def test_without_cpuinfo_the_model_is_platforms_and_no_extension_is_claimed(tmp_path):
    assert cpu_description(tmp_path / "absent") == {"model": platform.processor() or platform.machine(),
                                                    "extensions": []}


def test_the_claims_table_names_what_decides_a_cpus_speed():
    intel = {"cpus": 2, "gpu": None, "cpu_extensions": ["AVX2", "AVX-512", "AVX512-BF16", "AMX-BF16"]}
    assert machine_label(intel) == "CPU: 2 cores (AVX512-BF16)"
    assert machine_label({"cpus": 2, "gpu": None, "cpu_extensions": ["AVX2"]}) == "CPU: 2 cores (AVX2)"
    # recorded before the extensions were: whether it computes bf16 natively, else the count alone
    assert machine_label({"cpus": 2, "gpu": None, "cpu_native_bf16": False}) == "CPU: 2 cores (no native bf16)"
    assert machine_label({"cpus": 2, "gpu": None}) == "CPU: 2 cores"
    assert machine_label({"cpus": 16, "gpu": "NVIDIA H200"}) == "GPU: NVIDIA H200"


def test_the_dtypes_stages_compute_in_and_the_matrix_product_rate():
    """``auto`` is bf16 where native, else float32, for encoding and training alike; no setting is float32."""
    native = default_compute_dtype("cpu")
    assert encoding_dtype("auto", "cpu") == native == training_dtype("auto", "cpu")
    assert encoding_dtype(None, "cpu") == "float32" == training_dtype("no", "cpu")
    assert encoding_dtype("float16", "cpu") == "float16" and training_dtype("bf16", "cpu") == "bfloat16"
    assert matmul_rate("float32", seconds=0.01) > 1e8  # any CPU multiplies faster than 0.1 GFLOP/s
