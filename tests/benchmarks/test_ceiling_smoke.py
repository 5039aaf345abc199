"""Smoke test of ``benchmarks/e2e/ceiling.py``, the hand-written anchor of the data-path benchmarks.

It runs a short pipeline as a subprocess and checks that it worked (IOs done, bytes verified), never how
fast it was. A second test checks that its io message and compressed-block layouts are still the storage
apps' own (so the anchor keeps doing the real per-IO work).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
CEILING = ROOT / "benchmarks" / "e2e" / "ceiling.py"


def _load_ceiling() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_ceiling_under_test", CEILING)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod    # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    return mod


def test_ceiling_runs_and_verifies_the_bytes() -> None:
    done = subprocess.run([sys.executable, str(CEILING), "--operations", "2000", "--block-size", "4096"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rate = re.search(r"2000 IOs in [\d.]+ s: ([\d ]+) IO/s", done.stdout)
    assert rate is not None, done.stdout
    assert int(rate.group(1).replace(" ", "")) > 0
    checked = re.search(r"verified (\d+) IOs against the plain data: all equal", done.stdout)
    assert checked is not None, done.stdout
    assert int(checked.group(1)) > 0


def test_ceiling_json_result() -> None:
    done = subprocess.run([sys.executable, str(CEILING), "--operations", "500", "--block-size", "65536",
                           "--in-flight", "8", "--verify-every", "1", "--json"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(done.stdout.strip().splitlines()[-1])
    assert r["operations"] == 500 and r["iops"] > 0
    assert r["verified"] == 500 and r["mismatches"] == 0 and r["bad_responses"] == 0
    assert set(r["cpu_us_per_io"]) == {"data_1", "data_2", "data_p", "bridge", "initiator"}


def test_ceiling_layouts_are_the_storage_apps() -> None:
    ceiling = _load_ceiling()
    from apps.storage.wire import compressed_block, io_message
    from apps.topology import make_sample

    msg = io_message.IoMessage(1, 0x0102030405060708, 0, 4096, 12288, 40960)
    assert ceiling.MSG.pack(1, 0x0102030405060708, 0, 4096, 12288, 40960) == msg.pack()
    assert ceiling.MSG.size == io_message.IO_MESSAGE_SIZE
    for size in (4096, 65536):
        plain = make_sample(size * 2)[size:]
        assert ceiling.compressed_block(plain) == compressed_block.compress_block(plain)
