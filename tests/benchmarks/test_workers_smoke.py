"""Smoke test of ``benchmarks/bench_workers.py``: one and two worker threads on each backend complete
every task and report a row (never how fast)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_workers.py"


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="needs a C compiler")
def test_workers_benchmark_reports_both_backends() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--python", sys.executable, "--no-topology",
                           "--tasks", "640", "--repeats", "1"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "GIL" in line]
    assert {r.split("|")[2].strip() for r in rows} == {"emulated", "native"}, done.stdout
    assert not any("failed" in r for r in rows), done.stdout
