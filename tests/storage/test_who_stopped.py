"""Words that name who stopped (issue 35 item 21).

* A bridge whose initiator stopped answering (a comch send to it failed with ``IO_FAILED``: the transport's
  retry window ran out) says so; it used to say "the initiator closed the comch connection". It waits for
  its workers' word as long as they take (tests/storage/test_initiator_evidence.py: a real worker held
  back); should one never run, it says the cause is unknown rather than guess.
* A process that was itself stopped notices it (`apps.common.runtime.stall`): a loop that comes round far
  later than its interval did not run in between, and a message blaming a peer soon after says so.

The processes end to end: tests/storage_target/test_target_robustness.py (a target stopped longer than its
--control-timeout) and tests/topology/test_topology_failures.py (an initiator stopped longer than its
--io-timeout).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from apps.common.runtime import stall
from apps.storage.runtime.service_control import (
    INITIATOR_GONE_TEXT, INITIATOR_LOST_TEXT, INITIATOR_UNANSWERED_TEXT, BridgeControl, InitiatorGone,
)

from .. import deadlines


class _Clock:
    """``time.monotonic`` for `stall`, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.cpu = 5.0  # the process's CPU time

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(stall.time, "monotonic", c)
    monkeypatch.setattr(stall.time, "process_time", lambda: c.cpu)
    monkeypatch.setattr(stall, "_last", (0.0, float("-inf")))
    return c


def test_a_round_far_later_than_the_interval_is_a_stall_and_work_before_a_restart_is_not(clock: _Clock) -> None:
    loop = stall.LoopClock(0.1)
    clock.now += 0.1
    assert loop.tick() == 0.0
    clock.now += 1.9  # late under load, not stopped: below STALL_MIN
    assert loop.tick() == 0.0
    clock.now += 12.5  # stopped
    assert loop.tick() == 12.5
    assert stall.last_stall() == (12.5, clock.now)
    clock.now += 6.0
    clock.cpu += 5.5  # a long round of a busy process (it ran): not a stall
    assert loop.tick() == 0.0
    clock.now += 6.0
    clock.cpu += 1.0  # the machine gave it 1 s of CPU in 6: it did not run for 5
    assert loop.tick() == 5.0
    clock.now += 30.0  # the loop's own work (a request handled) ...
    loop.restart()     # ... before it waits again
    clock.now += 0.1
    assert loop.tick() == 0.0


def test_a_message_blaming_a_peer_soon_after_a_stall_says_so(clock: _Clock) -> None:
    assert stall.stall_note() == ""
    loop = stall.LoopClock(0.05)
    clock.now += 8.0
    loop.tick()
    clock.now += 1.5
    assert stall.stall_note() == "; note: this process did not run for 8.0 s (stopped, e.g. by SIGSTOP, suspended " \
                                 "or starved of CPU) until 1.5 s before, which may be why"
    clock.now += stall.RECENT
    assert stall.stall_note() == ""  # long ago: not the cause


@dataclass
class _Comch:
    unanswered: bool = False
    is_connected: bool = False

    def progress(self) -> bool:
        return False


@dataclass
class _Worker:
    """A worker whose every progress round since the drop has run (*behind*: it never runs again)."""
    initiator_unanswered: bool = False
    behind: bool = False
    name: str = "worker 0 (cpu 0)"

    def progress_mark(self) -> int:
        return 1

    def progressed_past(self, mark: int) -> bool:
        return not self.behind


@dataclass
class _Bridge(BridgeControl[Any]):
    comch: Any = field(default_factory=_Comch)
    workers: list[Any] = field(default_factory=list)
    abort: threading.Event = field(default_factory=threading.Event)
    # The evidence wait's safety net: it must not fire under load before the workers report.
    config: Any = field(default_factory=lambda: SimpleNamespace(control_timeout=deadlines.product_timeout(5.0)))


@pytest.mark.parametrize("how", ["data path send", "control send"])
def test_an_initiator_that_stopped_answering_is_not_said_to_have_closed(how: str) -> None:
    bridge = _Bridge()
    if how == "data path send":  # a worker's comch producer send failed with IO_FAILED
        bridge.workers = [_Worker(), _Worker(initiator_unanswered=True)]
    else:                        # the control channel's own send failed with IO_FAILED
        bridge.comch = _Comch(unanswered=True)
    with pytest.raises(InitiatorGone) as info:
        bridge._check_initiator()
    assert str(info.value) == INITIATOR_UNANSWERED_TEXT
    assert "closed" not in str(info.value) and info.value.unanswered


def test_an_initiator_that_closed_is_said_to_have_closed() -> None:
    bridge = _Bridge(workers=[_Worker()])
    with pytest.raises(InitiatorGone) as info:
        bridge._check_initiator()  # every worker ran since the drop and none had a send fail: it closed
    assert str(info.value).startswith(INITIATOR_GONE_TEXT) and not info.value.unanswered


def test_a_worker_that_never_reports_leaves_the_cause_unknown_not_guessed() -> None:
    bridge = _Bridge(workers=[_Worker(), _Worker(behind=True, name="worker 1 (cpu 3)")],
                     config=SimpleNamespace(control_timeout=0))  # the safety net fires at once
    with pytest.raises(InitiatorGone) as info:
        bridge._check_initiator()
    assert str(info.value) == (f"{INITIATOR_LOST_TEXT}; whether the initiator closed it or stopped answering is "
                               f"unknown: worker 1 (cpu 3) did not run its progress engine within 0 s "
                               f"(--control-timeout) to report its sends to the initiator")
    assert not info.value.unanswered
