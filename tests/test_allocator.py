"""The allocator policy of the ``seedr`` command (``seedr/allocator.py``): freed memory is reused
without page faults, and the user can opt out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only")

# allocate, write and free a 64 MiB tensor over and over, as training steps do with their logits, and
# print the process's minor page faults over the last 10 times: glibc needs a few rounds before the
# aligned blocks torch asks for fit into the freed ones
_LOOP = """
import resource, sys, torch
from seedr.allocator import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "policy" else False
for _ in range(20):
    torch.empty(16 * 2**20, dtype=torch.float32).fill_(1.0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    torch.empty(16 * 2**20, dtype=torch.float32).fill_(1.0)
print(int(applied), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
_PAGES = 64 * 2**20 // 4096  # pages of one block


def _faults(mode: str, **environment: str) -> tuple[bool, int]:
    env = {key: value for key, value in os.environ.items() if key not in ("LD_PRELOAD", "GLIBC_TUNABLES")}
    env.update(environment, OMP_NUM_THREADS="1")
    output = subprocess.run([sys.executable, "-c", _LOOP, mode], env=env, capture_output=True, text=True,
                            check=True).stdout.split()
    return output[0] == "1", int(output[1])


def test_freed_large_blocks_are_reused_without_page_faults():
    applied, with_policy = _faults("policy")
    _, without = _faults("platform")
    assert applied
    assert without > 9 * _PAGES  # glibc maps and faults every 64 MiB block anew
    assert with_policy < _PAGES // 10  # freed blocks are reused


def test_the_policy_can_be_declined():
    applied, faults = _faults("policy", SEEDR_KEEP_FREED_MEMORY="0")
    assert not applied and faults > 9 * _PAGES
    applied, _ = _faults("policy", GLIBC_TUNABLES="glibc.malloc.mmap_max=0")
    assert not applied  # the user's own allocator settings are left alone


def test_the_console_command_applies_it(monkeypatch):
    from importlib.metadata import entry_points

    import seedr.cli as cli

    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append("applied"))
    monkeypatch.setattr(cli, "plain_progress", lambda: calls.append("progress lines"))  # tests/test_progress.py
    monkeypatch.setattr(sys, "argv", ["seedr", "--version"])
    with pytest.raises(SystemExit):
        cli.run()
    assert calls == ["applied", "progress lines"]
    # the installed `seedr` script and `python -m seedr` both enter through run()
    assert [entry.value for entry in entry_points(group="console_scripts", name="seedr")] == ["seedr.cli:run"]
    version = subprocess.run([sys.executable, "-m", "seedr", "--version"], capture_output=True, text=True,
                             check=True).stdout
    assert version.startswith("seedr ")
