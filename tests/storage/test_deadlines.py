"""The rule behind every wait in the multi-process tests (tests/deadlines.py)."""

from __future__ import annotations

import pytest

from tests import deadlines


def test_work_left_follows_the_runs_own_rate() -> None:
    lines = ["$ python -m apps.initiator", "progress: 10.0% (1000/10000 transactions), 1.0k IOPS, 4.0MiB/s, elapsed 2.0s",
             "progress: 25.0% (2500/10000 transactions), 1.5k IOPS, 6.0MiB/s, elapsed 4.0s"]
    # the last line: 2,500 in 4 s, 7,500 left -> 12 s at that rate, times the slack
    assert deadlines.work_left(lines) == pytest.approx(deadlines.SLACK * 12.0)
    assert deadlines.work_left(["no progress yet"]) == 0.0


def test_a_bound_adds_the_products_time_outs_and_the_measured_process_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deadlines, "process_cost", lambda: 0.5)
    monkeypatch.setattr(deadlines, "load_growth", lambda: 1.0)
    assert deadlines.bound(5.0, 1.0) == 6.0
    assert deadlines.bound(5.0, starts=2, work=3.0) == pytest.approx(5.0 + deadlines.SLACK * 2 * 0.5 + 3.0)


def test_the_process_cost_is_measured_and_never_goes_down(monkeypatch: pytest.MonkeyPatch) -> None:
    costs = iter([2.0, 1.0])
    monkeypatch.setattr(deadlines, "_measure", lambda: next(costs))
    monkeypatch.setattr(deadlines, "_cost", 0.0)
    monkeypatch.setattr(deadlines, "_measured_at", float("-inf"))
    assert deadlines.process_cost() == 2.0
    assert deadlines.process_cost() == 2.0  # within a minute: not measured again
    monkeypatch.setattr(deadlines, "_measured_at", float("-inf"))
    assert deadlines.process_cost() == 2.0  # measured again (1.0): the larger one is kept


def test_process_starts_follow_the_load_up_from_when_the_cost_was_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = 2
    load = [1.0]
    monkeypatch.setattr(deadlines.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(deadlines.os, "getloadavg", lambda: (load[0], 0.0, 0.0))
    monkeypatch.setattr(deadlines, "_measure", lambda: 0.5)
    monkeypatch.setattr(deadlines, "_cost", 0.0)
    monkeypatch.setattr(deadlines, "_measured_at", float("-inf"))
    assert deadlines.processes(1) == deadlines.SLACK * 0.5  # measured now, on a quiet machine
    load[0] = 10.0  # five runnable per core: a start takes five times as long
    assert deadlines.load_growth() == 5.0
    assert deadlines.processes(1) == pytest.approx(deadlines.SLACK * 0.5 * 5.0)
    load[0] = 0.5  # quieter than when measured: never below the measured cost
    assert deadlines.processes(1) == deadlines.SLACK * 0.5


def test_fixed_bounds_stretch_by_the_interpreters_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deadlines, "INTERPRETER_FACTOR", 4.0)  # a free-threaded 3.13
    assert deadlines.hang(20.0) == 80.0
    monkeypatch.setattr(deadlines, "INTERPRETER_FACTOR", 1.0)  # a GIL build
    assert deadlines.hang(30.0) == 30.0
