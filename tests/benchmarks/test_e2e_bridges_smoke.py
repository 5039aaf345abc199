"""Smoke test of ``benchmarks/e2e/run.py --bridge``: both bridges measured in one run.

A short run of each bridge as subprocesses; it checks that both were measured and compared,
never how fast they were. The table arithmetic is checked on made-up results.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.e2e import run as e2e
from tests import deadlines

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "e2e" / "run.py"


def _result(bridge: str, key: str, cpu: dict[str, float], ops: int = 1000, duration: float = 0.5) -> e2e.Result:
    return e2e.Result(e2e.SCENARIOS[key], duration, ops, duration, cpu, {k: 0.0 for k in cpu}, 0.5, 1000, "–",
                      bridge=bridge)


def test_bridge_tables_compare_each_process_and_the_ratio() -> None:
    gga = _result("gga-offload", "read-4k", {"data_1": 0.02, "data_2": 0.02, "data_p": 0.0, "bridge": 0.1,
                                             "initiator": 0.02})
    zc = _result("zero-copy", "read-4k", {"storage": 0.02, "bridge": 0.05, "initiator": 0.02}, duration=0.25)
    text = e2e.bridge_tables({"read-4k": gga}, {"read-4k": zc})
    rows = [ln for ln in text.splitlines() if ln.startswith("| read 4 KiB")]
    # Per process: µs of CPU per IO; a process the topology does not have is "–".
    assert rows[0] == "| read 4 KiB | GGA | 2 000 | 0.008 | 1 000 | 20 | 100 | 20 | 20 | 0 | – | 160 |"
    assert rows[1] == "| read 4 KiB | zero-copy | 4 000 | 0.015 | 1 000 | 20 | 50 | – | – | – | 20 | 90 |"
    # zero-copy ÷ GGA: IO/s, then CPU per IO of the initiator, the bridge, all targets, everything.
    assert rows[2] == "| read 4 KiB | 2.00 | 1.00 | 0.50 | 0.50 | 0.56 |"


def test_the_zero_copy_target_is_pinned_where_data_1_is() -> None:
    assert e2e.pins_for("zero-copy", {"data_1": 0, "data_2": 0, "data_p": 0, "bridge": 1, "initiator": 0}) == {
        "storage": 0, "bridge": 1, "initiator": 0}
    assert e2e.pins_for("zero-copy", {"data_1": 0, "storage": 1}) == {"storage": 1}
    pins = {"data_1": 1}
    assert e2e.pins_for("gga-offload", pins) is pins


def test_a_gga_only_scenario_is_not_run_with_the_zero_copy_bridge(capsys: pytest.CaptureFixture[str]) -> None:
    assert e2e.main(["--bridge", "zero-copy", "--scenario", "read-4k-recovery", "--scenario", "read-4k-degraded"]) == 2
    out = capsys.readouterr()
    assert "not run (no such scenario with the zero-copy bridge): read-4k-recovery, read-4k-degraded" in out.out
    assert "no scenario to run" in out.err


@pytest.mark.multiprocess
def test_run_measures_both_bridges() -> None:
    # the script's --timeout per run (five processes started and ended, two control time-outs that may
    # elapse: tests/deadlines.py), never under the 120 s of a quiet machine; two runs, one per bridge
    per_run = max(120.0, deadlines.bound(10.0, 10.0, starts=10))
    done = subprocess.run([sys.executable, str(RUN), "--bridge", "both", "--scenario", "read-4k",
                           "--operations", "1000", "--block-count", "16", "--no-ceiling", "--timeout", f"{per_run:.0f}"],
                          capture_output=True, text=True, timeout=2 * per_run + 60, cwd=ROOT)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    for bridge in ("GGA", "zero-copy"):
        rate = re.search(rf"\] read 4 KiB, {bridge} \(run 1\): ([\d ]+) IO/s", out)
        assert rate is not None, out
        assert int(rate.group(1).replace(" ", "")) > 0
    assert "GGA bridge:" in out and "zero-copy bridge:" in out
    cmp = out[out.index("Zero-copy vs GGA bridge"):]
    assert re.search(r"^\| read 4 KiB \| GGA \| ", cmp, re.M) and re.search(r"^\| read 4 KiB \| zero-copy \| ", cmp, re.M)
    # The IO/s ratio, then CPU ratios; a process whose CPU stayed under one clock tick (10 ms) in so short a
    # run has no ratio ("–").
    ratio = r"(?:[\d.]+|–)"
    assert re.search(rf"^\| read 4 KiB \| [\d.]+ \| {ratio} \| {ratio} \| {ratio} \| [\d.]+ \|$", cmp, re.M), cmp
