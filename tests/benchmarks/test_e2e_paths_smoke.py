"""Smoke test of ``benchmarks/e2e/run.py --path``: the emulated and the native path (over libdoca) in one run,
the native one with its CPU split. It checks what was measured and compared, never how fast; the split's
arithmetic is checked on made-up results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.e2e import run as e2e
from tests import deadlines
from tests.libdoca.env import lib_dir

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "e2e" / "run.py"


def _result(path: str, cpu: float, split: dict[str, tuple[float, float]], ops: int = 1000) -> e2e.Result:
    procs = {k: cpu for k in e2e.PROCS}
    return e2e.Result(e2e.SCENARIOS["read-4k"], 0.5, ops, 0.5, procs, {k: 0.0 for k in procs}, 0.5, 1000, "–",
                      path=path, split=split)


def test_the_path_tables_set_the_native_split_beside_the_emulated_run() -> None:
    emulated = _result("emulated", 0.01, {})
    native = _result("native", 0.02, {k: (0.015, 0.005) for k in e2e.PROCS})
    text = e2e.path_tables({"read-4k": emulated}, {"read-4k": native})
    rows = [ln for ln in text.splitlines() if ln.startswith("| read 4 KiB")]
    # IO/s each, their ratio; µs CPU per IO of all processes: emulated, native, of it libdoca, of it the app.
    assert rows[0] == "| read 4 KiB | 2 000 | 2 000 | 1.00 | 50 | 100 | 75 | 25 |"
    assert rows[1] == "| read 4 KiB | 5 / 15 | 5 / 15 | 5 / 15 | 5 / 15 | 5 / 15 |"


def test_a_crossing_into_libdoca_is_measured_once_through_the_ledger(tmp_path: Path) -> None:
    lib_dir()  # skips without a C compiler
    first = e2e.crossing_seconds(tmp_path / "ledger", n=2000)
    assert first >= 0.0
    # The calls went through libdoca's timed slots: this process's ledger counted every one of them.
    assert e2e.ledger_sample(os.getpid(), tmp_path / "ledger")[2] >= 2000
    assert e2e.crossing_seconds(tmp_path / "other", n=10) == first  # measured once per run, then reused


@pytest.mark.multiprocess
def test_run_measures_both_paths() -> None:
    lib_dir()
    per_run = max(120.0, deadlines.bound(10.0, 10.0, starts=10))
    done = subprocess.run([sys.executable, str(RUN), "--path", "both", "--scenario", "read-4k", "--operations", "1000",
                           "--block-count", "16", "--no-ceiling", "--timeout", f"{per_run:.0f}"],
                          capture_output=True, text=True, timeout=2 * per_run + 120, cwd=ROOT)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(r"\] read 4 KiB, emulated path \(run 1\): [\d ]+ IO/s", out), out
    assert re.search(r"\] read 4 KiB, native path \(run 1\): [\d ]+ IO/s", out), out
    table = out[out.index("Emulated and native path"):]
    assert re.search(r"^\| read 4 KiB \| [\d ]+ \| [\d ]+ \| [\d.]+ \| \d+ \| \d+ \| \d+ \| \d+ \|$", table, re.M), table
    per_proc = table[table.index("Native path, µs CPU per IO"):]
    assert re.search(r"^\| read 4 KiB( \| \d+ / \d+){5} \|$", per_proc, re.M), per_proc
