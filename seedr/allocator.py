"""Keep the memory torch frees on the CPU in the process, instead of handing it back to the kernel.

glibc serves every allocation over 32 MiB with its own ``mmap`` and unmaps it again on ``free``. A
training step allocates and frees the same large tensors at every step (the SEED decoder's logits at
every position, 32 × 128 × 8,000 values, and their gradients; CPDAE's bag-of-words distributions), so
every step page-faults and zeroes them afresh. On the 2-core CPU, SEED pre-training in
``seedr/experiments/from_scratch.yaml`` ran 100,000 minor page faults a second, 14% of its CPU time in the
kernel. With freed memory kept, 60 of its steps spent 5 s in the kernel instead of 17, with identical
losses and a peak resident memory of 3.9 GB instead of 3.2; in a whole run of the experiment SEED's
500 steps took 430 s against 521 before.

PyTorch's CPU performance guide gives the same reason for preloading jemalloc or tcmalloc; those need
``LD_PRELOAD`` and a library this project cannot install, while glibc's own ``mallopt(3)`` needs neither.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# mallopt(3) parameter numbers, from glibc's <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_MAX = -4

#: set to 0 to leave the C allocator as the platform configures it
OPT_OUT_VARIABLE = "SEEDR_KEEP_FREED_MEMORY"


def keep_freed_memory() -> bool:
    """Tell glibc's allocator to serve large blocks from the heap (no ``mmap``) and never to shrink the
    heap, so that memory freed by one training step is reused by the next without page faults.

    Applies to the calling process and the processes it forks; the resident size stays at the run's
    peak. Does nothing, and returns False, off Linux/glibc, when ``SEEDR_KEEP_FREED_MEMORY=0``, or when
    the user already chose an allocator policy (``LD_PRELOAD`` or ``GLIBC_TUNABLES`` set).
    """
    if (not sys.platform.startswith("linux") or os.environ.get(OPT_OUT_VARIABLE) == "0"
            or os.environ.get("LD_PRELOAD") or os.environ.get("GLIBC_TUNABLES")):
        return False
    library = ctypes.util.find_library("c")
    if library is None:
        return False
    libc = ctypes.CDLL(library)
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return False  # musl and other C libraries: mallopt is absent or a no-op
    settings = {_M_MMAP_MAX: 0,  # large blocks from the heap, where freed ones are reused
                _M_TRIM_THRESHOLD: -1,  # mallopt(3): -1 disables trimming, the heap's free top stays ours
                _M_TOP_PAD: 256 * 2**20}  # grow the heap in 256 MiB steps rather than per block
    return all(libc.mallopt(parameter, value) == 1 for parameter, value in settings.items())
