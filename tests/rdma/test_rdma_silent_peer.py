"""A peer that stops answering (SIGSTOP): in-flight work fails after the retry window, as on RC hardware.

The child is ``python -m tests.rdma.peer``; the parent shortens its retry window with
``doca_py.emulated.rdma.configure`` (contexts started afterwards). ``same`` shares the host
identity with the child (one-sided access through shared memory), ``cross`` fakes another host
(everything over TCP). The only sleeps are the deliberate SIGSTOP durations; every wait is bounded.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import CtxState

from .helpers import rig, wait_for
from .test_rdma_multiprocess import Parent, Peer

pytestmark = pytest.mark.multiprocess


@contextmanager
def _window(**kw: float) -> Iterator[None]:
    from doca_py.emulated import rdma as emu

    emu.configure(**kw)
    try:
        yield
    finally:
        emu.configure(retry_window=0, rnr_timeout=0)


@contextmanager
def _pair(mode: str) -> Iterator[tuple[Parent, Peer]]:
    env = {"DOCA_PY_RDMA_HOST_ID": f"child-{uuid.uuid4()}"} if mode == "cross" else {}
    peer = Peer(env)
    try:
        with rig(128) as (dev, pe, inv):
            par = Parent(dev, pe, inv, peer)
            s = par.side
            wait_for(pe, lambda: ("established", s.conn) in s.events, "established")
            try:
                yield par, peer
            finally:
                par.close()
    finally:
        if peer.p.poll() is None:
            peer.p.send_signal(signal.SIGCONT)
        peer.kill()


def _sends(par: Parent, n: int) -> list[d.Task]:
    s = par.side
    assert s.conn is not None
    s.mem[:64] = b"y" * 64
    return [s.rdma.task_send_allocate_init(s.conn, par.inv.buf_get_by_data(s.mm, s.base, 64)) for _ in range(n)]


def _free(tasks: list[d.Task]) -> None:
    for t in tasks:
        t.free()


@pytest.mark.parametrize("mode", ["same", "cross"])
def test_stopped_peer_fails_in_flight_work_after_the_window(backend: str, mode: str) -> None:
    window = 0.6
    with _window(retry_window=window), _pair(mode) as (par, peer):
        s = par.side
        assert s.conn is not None
        peer.p.send_signal(signal.SIGSTOP)
        tasks = _sends(par, 4)
        if mode == "cross":  # one-sided work goes to the (stopped) owner too
            src = par.inv.buf_get_by_data(s.mm, s.base, 64)
            tasks.append(s.rdma.task_write_allocate_init(s.conn, src, par.inv.buf_get_by_addr(
                par.remote, par.rbase, 64)))
            tasks.append(s.rdma.task_read_allocate_init(s.conn, par.inv.buf_get_by_data(
                par.remote, par.rbase, 64), par.inv.buf_get_by_addr(s.mm, s.base + 8192, 64)))
        t0 = time.monotonic()
        for t in tasks:
            t.submit()
        wait_for(par.pe, lambda: len(s.done) >= len(tasks), "the in-flight tasks to fail", deadline=window + 8)
        took = time.monotonic() - t0
        assert {k for k, _ in s.done} == {"err"}
        assert {t.get_status() for t in tasks} == {e.ErrorCode.IO_FAILED}
        assert window * 0.9 <= took <= window + 5, took
        wait_for(par.pe, lambda: ("disconnection", s.conn) in s.events, "disconnection callback")
        assert s.rdma.get_state() in (CtxState.STOPPING, CtxState.IDLE)
        _free(tasks)
        wait_for(par.pe, lambda: s.rdma.get_state() == CtxState.IDLE, "IDLE")


@pytest.mark.parametrize("mode", ["same", "cross"])
def test_peer_stopped_shorter_than_the_window_is_no_failure(backend: str, mode: str) -> None:
    with _window(retry_window=2.0), _pair(mode) as (par, peer):
        s = par.side
        assert peer.ask("recv 4") == "posted"
        peer.p.send_signal(signal.SIGSTOP)
        tasks = _sends(par, 4)
        for t in tasks:
            t.submit()
        for _ in range(3):
            par.pe.progress()
        time.sleep(0.5)  # the deliberate stop
        peer.p.send_signal(signal.SIGCONT)
        wait_for(par.pe, lambda: len(s.done) >= 4, "the sends")
        assert [k for k, _ in s.done] == ["ok"] * 4
        for _ in range(4):
            assert peer.line().startswith("rcv SUCCESS ")
        assert not [ev for ev, _ in s.events if ev != "established"]
        _free(tasks)
        assert peer.ask("dump 0 1").startswith("dump")


@pytest.mark.parametrize("mode", ["same", "cross"])
def test_idle_connection_survives_a_stop_longer_than_the_window(backend: str, mode: str) -> None:
    window = 0.4
    with _window(retry_window=window), _pair(mode) as (par, peer):
        s = par.side
        peer.p.send_signal(signal.SIGSTOP)
        end = time.monotonic() + 3 * window  # the deliberate stop; nothing is in flight
        while time.monotonic() < end:
            par.pe.wait(end - time.monotonic())
        peer.p.send_signal(signal.SIGCONT)
        assert peer.ask("recv 1") == "posted"
        tasks = _sends(par, 1)
        tasks[0].submit()
        wait_for(par.pe, lambda: len(s.done) >= 1, "the send")
        assert s.done[0][0] == "ok"
        assert peer.line().startswith("rcv SUCCESS ")
        assert s.rdma.get_state() == CtxState.RUNNING
        assert not [ev for ev, _ in s.events if ev != "established"]
        _free(tasks)


def test_receiver_not_ready_is_not_silence(backend: str) -> None:
    """A live peer with no receive posted answers with RNR NAKs: the RNR window decides, not the retry window."""
    with _window(retry_window=0.4, rnr_timeout=1.5), _pair("same") as (par, peer):
        s = par.side
        peer.send("hang")  # alive, posts no receive
        tasks = _sends(par, 1)
        t0 = time.monotonic()
        tasks[0].submit()
        wait_for(par.pe, lambda: len(s.done) >= 1, "the send")
        assert tasks[0].get_status() == e.ErrorCode.TIME_OUT
        assert time.monotonic() - t0 >= 1.4
        _free(tasks)
