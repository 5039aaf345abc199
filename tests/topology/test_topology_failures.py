"""Faults of the five-process topology beyond the targets' (issue 12): a stopped bridge."""

from __future__ import annotations

import select
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
STOP_WAIT = CONTROL_TIMEOUT
"""What the initiator gives the stop request once its IOs timed out (its --control-timeout; then it skips
the shutdown)."""


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


TARGET_SILENCE = 3.0
"""``--control-timeout`` of the targets in the test below (seconds of silence they allow the bridge)."""


def test_a_stopped_bridge_is_noticed_by_the_targets_it_was_sending_io(tmp_path: Path) -> None:
    """Issue 35 item 19: a bridge stopped with SIGSTOP mid-run kept the targets waiting without bound. The
    targets it sent io to (data_1 and data_2 in a read run) end once it has been silent for their
    --control-timeout, with a message that says so; data_p, sent nothing in a read run, cannot tell an idle
    bridge from a stopped one (docs/storage-target.md, "A silent requester")."""
    args = build_parser().parse_args(["--block-count", "32", "--workdir", str(tmp_path)])
    env = environment()
    env["DOCA_PY_COMCH_RETRY_WINDOW"] = str(3 * _ending())  # the initiator's own ending is not the subject
    plain, files = prepare(args, tmp_path, env)
    silence = ("--control-timeout", f"{TARGET_SILENCE:g}")
    test = TopologyTest("long read", "read_throughput_test", 10_000_000,
                        target_args={role: silence for role in ("data_1", "data_2", "data_p")})
    with topology(tmp_path, env) as topo:
        targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=PROGRESS)
        initiator.wait_marker(PROGRESS, deadlines.bound(CONTROL_TIMEOUT, 1.0, starts=5))
        bridge.popen.send_signal(signal.SIGSTOP)
        try:
            rcs = [t.popen.wait(deadlines.bound(TARGET_SILENCE, starts=1)) for t in targets[:2]]
        finally:
            bridge.popen.send_signal(signal.SIGCONT)
            bridge.popen.kill()
        for t, rc in zip(targets[:2], rcs):
            if t._pump is not None:
                t._pump.join(deadlines.bound(starts=1))
            text = "\n".join(t.lines)
            assert rc == 1, t.tail(20)
            assert f"sent no io message for {TARGET_SILENCE:g} s (--control-timeout) since its last one, and no " \
                   "stop_storage_request, while the data path ran; ending the session" in text, t.tail(20)
            assert "| Operation count: " in text and "Traceback" not in text, t.tail(20)


# -- words: who stopped (issue 35 item 21) ---------------------------------------------------------------------
HOLD = 4.0
"""Seconds a process is kept stopped below: more than the deadline it would otherwise blame its peer for."""
TARGET_IO_TIMEOUT = 2


def test_a_resumed_bridge_does_not_blame_the_targets_for_its_own_stop(tmp_path: Path) -> None:
    """The bridge, stopped longer than its --target-io-timeout and resumed, found its requests to the targets
    past the deadline and took a target out ("did not answer an IO request within 2 s"), though the targets
    had answered them all while it was stopped. It now sees its own stop, says so and gives the requests the
    deadline again: no target is taken out and the run passes.

    To have requests in flight at the stop, the targets are stopped a moment first (well within the
    deadline), then the bridge; the targets resume and answer into the stopped bridge. Whether the old code
    blamed a target depended on where the stop caught the worker's loop (before its deadline check, or
    before its progress); that it sees its own stop does not."""
    args = build_parser().parse_args(["--block-count", "32", "--workdir", str(tmp_path)])
    env = environment()
    env["DOCA_PY_COMCH_RETRY_WINDOW"] = str(3 * HOLD)  # the transports' own patience is not the subject
    env["DOCA_PY_RDMA_RETRY_WINDOW"] = str(3 * HOLD)
    plain, files = prepare(args, tmp_path, env)
    test = TopologyTest("read", "read_throughput_test", 20_000,
                        bridge_args=("--target-io-timeout", str(TARGET_IO_TIMEOUT)))
    with topology(tmp_path, env) as topo:
        targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=PROGRESS)
        initiator.wait_marker(PROGRESS, deadlines.bound(CONTROL_TIMEOUT, 1.0, starts=5))
        for t in targets:
            t.popen.send_signal(signal.SIGSTOP)
        try:
            select.select([], [], [], TARGET_IO_TIMEOUT / 8)  # the bridge sends requests the targets hold
            bridge.popen.send_signal(signal.SIGSTOP)
        finally:
            for t in targets:
                t.popen.send_signal(signal.SIGCONT)
        try:
            select.select([], [], [], HOLD)  # the pause is the scenario, not a wait for the product
        finally:
            bridge.popen.send_signal(signal.SIGCONT)
        rc = initiator.popen.wait(deadlines.bound(CONTROL_TIMEOUT, starts=2, work=HOLD))
        assert topo.settle(deadlines.bound(CONTROL_TIMEOUT, starts=2))
        if bridge._pump is not None:
            bridge._pump.join(deadlines.bound(starts=1))
        text = "\n".join(bridge.lines)
        assert rc == 0, initiator.tail(20) + "\n" + bridge.tail(20)
        # It says it was stopped (with the requests it had in flight then, if any: the worker may have been
        # stopped between its check and its progress, or after its progress)
        assert "worker 0 (cpu 1): this process did not run for " in text, bridge.tail(20)
        assert "did not answer an IO request" not in text and "degraded mode" not in text, bridge.tail(20)
