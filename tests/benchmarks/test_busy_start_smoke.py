"""Smoke test of ``benchmarks/bench_busy_start.py``: a quiet and a busy row for the interpreter, each
with both measures, and no busy loop left behind (never how fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_busy_start.py"


def _burners() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "doca_py-busy-start" in line]


def test_busy_start_reports_quiet_and_busy_rows_and_stops_its_burners() -> None:
    before = _burners()
    done = subprocess.run([sys.executable, str(BENCH), "--only-this", "--burners", "1", "--closes", "5",
                           "--starts", "1"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:]]
    assert [r[2] for r in rows] == ["quiet", "busy"], done.stdout
    for r in rows:
        close_us, import_s = float(r[3]), float(r[5])
        assert close_us > 0 and import_s > 0 and r[4] == r[6] == "1.0×", done.stdout  # its own reference
    assert _burners() == before
