"""``run_scenario``'s extra initiator flags (``initiator_args``), as ``sweep.py`` uses them.

No process starts here: ``Topology.spawn`` is replaced by a recorder, so this checks the command
lines the benchmark would run.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from apps.topology import Topology
from benchmarks.e2e import run, sweep


def _spawned(monkeypatch: pytest.MonkeyPatch, topo: run.BenchTopology) -> dict[str, tuple[str, list[str]]]:
    """Spawn an initiator and a bridge the way ``apps.topology.start`` does; their (module, args)."""
    seen: dict[str, tuple[str, list[str]]] = {}

    def record(self: Topology, name: str, module: str, args: Any, marker: str | None = None, **kw: Any) -> Any:
        seen[name] = (module, list(args))
        return object()

    monkeypatch.setattr(Topology, "spawn", record)
    topo.spawn("initiator", "apps.initiator", ["--cpu", "0", "--test", "x"])
    topo.spawn("gga_offload", "apps.gga_offload", ["--cpu", "0"])
    return seen


def test_initiator_args_go_to_the_initiator_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    topo = run.BenchTopology(tmp_path, {}, {"initiator": 3}, set(), tmp_path,
                             initiator_args=("--transaction-count", "8"))
    seen = _spawned(monkeypatch, topo)
    assert seen["initiator"] == ("apps.initiator", ["--cpu", "3", "--test", "x", "--transaction-count", "8"])
    assert seen["gga_offload"] == ("apps.gga_offload", ["--cpu", "0"])


def test_initiator_args_stay_the_apps_own_under_a_wrapper(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Profiled: the wrapper's own arguments come first, the initiator's (with the extra flags) after its module.
    topo = run.BenchTopology(tmp_path, {}, {}, {"initiator"}, tmp_path, initiator_args=("--transaction-count", "8"))
    module, args = _spawned(monkeypatch, topo)["initiator"]
    assert module == "benchmarks.e2e.profiled"
    assert args == [str(tmp_path / "initiator.prof"), "apps.initiator", "--cpu", "0", "--test", "x",
                    "--transaction-count", "8"]


def test_no_initiator_args_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen = _spawned(monkeypatch, run.BenchTopology(tmp_path, {}, {}, set(), tmp_path))
    assert seen["initiator"] == ("apps.initiator", ["--cpu", "0", "--test", "x"])


def test_sweep_asks_for_its_in_flight_count(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run(*a: Any, **kw: Any) -> str:
        calls.append(kw)
        return "result"

    monkeypatch.setattr(run, "run_scenario", fake_run)
    args = argparse.Namespace(retries=0, operations=10, timeout=1.0)
    got = sweep._measure(run.SCENARIOS["read-4k"], 64, args, {}, tmp_path, tmp_path, {}, {})
    assert got == "result"
    assert calls == [{"initiator_args": ("--transaction-count", "64")}]


def test_a_profiled_process_gets_time_to_write_its_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Killed 5 s after the teardown's SIGINT, a profiled process could lose its profile while merging it."""
    graces: dict[str, float] = {}

    def record(self: Topology, name: str, module: str, args: Any, marker: str | None = None, **kw: Any) -> Any:
        graces[name] = kw.get("stop_grace", 5.0)
        return object()

    monkeypatch.setattr(Topology, "spawn", record)
    topo = run.BenchTopology(tmp_path, {}, {}, {"initiator"}, tmp_path)
    topo.spawn("initiator", "apps.initiator", ["--cpu", "0"])
    topo.spawn("gga_offload", "apps.gga_offload", ["--cpu", "0"])
    assert graces["initiator"] > 60 and graces["gga_offload"] == 5.0
