"""Faults of the five-process topology beyond the targets' (issue 12): a stopped bridge."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.initiator.config import IO_TIMEOUT_DEFAULT
from apps.topology import Proc, Test as TopologyTest, build_parser, environment, prepare, start, topology
from tests import deadlines

pytestmark = pytest.mark.multiprocess

PROGRESS = "progress: "
CONTROL_TIMEOUT = 10.0  # what apps.topology.start gives every process
STOP_WAIT = 1.0
"""What the initiator gives the stop request once its IOs timed out (then it skips the shutdown)."""


def _ending() -> float:
    """How long the initiator may take to end once its IOs timed out (tests/deadlines.py): its IO
    deadline, the stop request's wait, its teardown."""
    return deadlines.bound(IO_TIMEOUT_DEFAULT, STOP_WAIT, starts=2)


@pytest.fixture
def mid_run(tmp_path: Path) -> Iterator[tuple[list[Proc], Proc, Proc]]:
    """The five processes in a long read throughput test, once the initiator reports progress."""
    args = build_parser().parse_args(["--block-count", "32", "--workdir", str(tmp_path)])
    env = environment()
    # The comch transport notices a silent peer by itself (its retry window, 4 s by default), which
    # wins over --io-timeout whenever a producer send was unacknowledged at the stop. This test is
    # about --io-timeout; the transport's own detection is tested in tests/comch.
    env["DOCA_PY_COMCH_RETRY_WINDOW"] = str(3 * _ending())
    plain, files = prepare(args, tmp_path, env)
    test = TopologyTest("long read", "read_throughput_test", 10_000_000)
    with topology(tmp_path, env) as topo:
        targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=PROGRESS)
        initiator.wait_marker(PROGRESS, deadlines.bound(CONTROL_TIMEOUT, 1.0, starts=5))
        yield targets, bridge, initiator


def test_a_stopped_bridge_makes_the_initiator_time_out(mid_run: tuple[list[Proc], Proc, Proc]) -> None:
    """SIGSTOP of the bridge mid-run: the initiator's IOs time out after ``--io-timeout`` (its
    default here) and it ends with status 1, a timeout message and no traceback, instead of
    waiting for ever. (How long it took is not asserted: the message names the deadline it
    applied, and the wait is a hang bound.)"""
    targets, bridge, initiator = mid_run
    bridge.popen.send_signal(signal.SIGSTOP)
    try:
        rc = initiator.popen.wait(_ending())
    finally:
        bridge.popen.send_signal(signal.SIGCONT)
        bridge.popen.kill()
    if initiator._pump is not None:
        initiator._pump.join(deadlines.bound(starts=1))
    text = "\n".join(initiator.lines)
    assert rc == 1, initiator.tail(40)
    assert f"IO(s) timed out: no response from the service within {IO_TIMEOUT_DEFAULT} s (--io-timeout)" in text, \
        initiator.tail(40)
    assert "The service does not answer; shutdown skipped" in text, initiator.tail(40)
    assert "| Test failed!!" in text and "Traceback" not in text, initiator.tail(40)
