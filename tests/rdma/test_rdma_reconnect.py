"""Reconnecting after a failure (issue 35, item 10): a failed connection is released by ``disconnect``, and
``connect`` to a peer that went away since it exported succeeds, the loss showing through the connection.

One process, two contexts on one Pe; the two-process recipe under faults is ``examples/rdma_reconnect.py``
(``test_the_reconnect_example_survives_mixed_faults``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.rdma import RdmaConnection
from doca_py.testing import DocaPair, Knobs
from doca_py.types import CtxState

from .helpers import Side, close_side, connect_pair, make_side, rig, run, wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def env(backend: str) -> Iterator[tuple[d.Dev, d.Pe, d.BufInventory]]:
    with rig() as r:
        yield r


def _send(inv: d.BufInventory, s: Side, conn: RdmaConnection) -> d.Task:
    return s.rdma.task_send_allocate_init(conn, inv.buf_get_by_data(s.mm, s.base, 8))


def _says(backend: str, text: str) -> str | None:
    """*text* as the error's expected words on the emulated backend; natively DOCA's error names only the code."""
    return text if backend == "emulated" else None


def test_a_failed_connection_keeps_its_slot_until_it_is_disconnected(
        env: tuple[d.Dev, d.Pe, d.BufInventory], backend: str) -> None:
    dev, pe, _ = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    connect_pair(pe, a, b)
    assert a.conn is not None
    b.rdma.stop()  # the peer goes away: a's only connection fails under it
    wait_for(pe, lambda: ("disconnection", a.conn) in a.events, "a's disconnection callback")
    assert a.rdma.get_state() is CtxState.RUNNING  # nothing of a's was in flight
    with pytest.raises(e.DocaFull, match=_says(backend, r"disconnect\(\) releases")):
        a.rdma.export()  # the dead connection still holds the ctx's only slot, as in DOCA
    old = a.conn
    old.disconnect()  # what DOCA's samples do from the disconnection callback: frees the slot
    _, a.conn = a.rdma.export()
    with pytest.raises(e.DocaBadState, match=_says(backend, "already released")):
        old.disconnect()
    close_side(a)
    close_side(b)


def test_a_stop_releases_every_connection(env: tuple[d.Dev, d.Pe, d.BufInventory], backend: str) -> None:
    dev, pe, _ = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    connect_pair(pe, a, b)
    assert a.conn is not None
    a.rdma.stop()
    wait_for(pe, lambda: a.rdma.get_state() is CtxState.IDLE, "IDLE")
    with pytest.raises(e.DocaBadState, match=_says(backend, "ctx stopped since")):
        a.conn.disconnect()
    a.rdma.start()
    a.rdma.export()  # the restarted ctx has its slot back
    close_side(a)
    close_side(b)


def test_connect_to_a_peer_that_stopped_after_exporting_succeeds_and_the_connection_fails(
        env: tuple[d.Dev, d.Pe, d.BufInventory], backend: str) -> None:
    """doca_rdma_connect only moves the local QP: it cannot know the peer's ctx stopped. The emulator refused
    the connect (``DocaConnectionAborted``), which under faults made a reconnection fail intermittently, when
    the peer's own task failed between its export and our connect (``peer refused the connection
    (BAD_STATE)``, or ``cannot reach the peer`` once its listener had closed)."""
    dev, pe, inv = env
    peer = make_side(dev, pe)
    peer.rdma.start()
    blob, _ = peer.rdma.export()
    peer.rdma.stop()
    wait_for(pe, lambda: peer.rdma.get_state() is CtxState.IDLE, "IDLE")
    s = make_side(dev, pe)
    s.rdma.start()
    _, conn = s.rdma.export()
    s.rdma.connect(blob, conn)
    wait_for(pe, lambda: ("failure", conn) in s.events, "the failure callback")
    t = _send(inv, s, conn)
    assert run(pe, s, t) == ["err"] and t.get_status() is e.ErrorCode.CONNECTION_RESET
    assert backend != "emulated" or "is gone" in t.reason  # natively a task's status is all DOCA gives
    close_side(s)
    close_side(peer)


@pytest.mark.parametrize("gone", ["restarted", "released"])
def test_connect_to_a_connection_the_peer_no_longer_holds_fails_the_connection(
        env: tuple[d.Dev, d.Pe, d.BufInventory], gone: str) -> None:
    """The peer still runs but no longer holds the exported connection: it restarted since (its listener
    is new, its Unix socket path the same: the old blob reached it and was refused as forged) or it
    disconnected the connection."""
    dev, pe, inv = env
    peer = make_side(dev, pe)
    peer.rdma.start()
    blob, pconn = peer.rdma.export()
    if gone == "restarted":
        peer.rdma.stop()
        wait_for(pe, lambda: peer.rdma.get_state() is CtxState.IDLE, "IDLE")
        peer.rdma.start()
    else:
        pconn.disconnect()
    s = make_side(dev, pe)
    s.rdma.start()
    _, conn = s.rdma.export()
    s.rdma.connect(blob, conn)
    wait_for(pe, lambda: ("failure", conn) in s.events, "the failure callback")
    t = _send(inv, s, conn)
    assert run(pe, s, t) == ["err"] and t.get_status() is e.ErrorCode.CONNECTION_RESET
    close_side(s)
    close_side(peer)


def test_connect_after_the_peer_connected_and_left_succeeds(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    """The peer connected to our export, then its ctx stopped before we called connect: our connect used to
    say "already connected" (``BAD_STATE``); DOCA's local connect succeeds and the tasks report the loss."""
    dev, pe, inv = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    a.rdma.start()
    b.rdma.start()
    blob_a, ca = a.rdma.export()
    blob_b, cb = b.rdma.export()
    b.rdma.connect(blob_a, cb)
    b.rdma.stop()
    wait_for(pe, lambda: ("failure", ca) in a.events, "a's failure callback")
    a.rdma.connect(blob_b, ca)
    t = _send(inv, a, ca)
    assert run(pe, a, t) == ["err"] and t.get_status() is e.ErrorCode.CONNECTION_RESET
    close_side(a)
    close_side(b)


def test_a_forged_key_is_still_refused_at_connect(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    """Only a peer that went away is reported later: a key the peer never issued is refused at once."""
    from doca_py.emulated import rdma as emu

    dev, pe, _ = env
    peer = make_side(dev, pe)
    peer.rdma.start()
    blob, _ = peer.rdma.export()
    forged = emu.decode_blob(blob)
    forged.key = bytes(16)
    s = make_side(dev, pe)
    s.rdma.start()
    _, conn = s.rdma.export()
    with pytest.raises(e.DocaConnectionAborted, match="CONNECTION_ABORTED"):
        s.rdma.connect(emu.encode_blob(forged), conn)
    close_side(s)
    close_side(peer)


# -- the recipe, two processes, under faults ------------------------------------------------------------------
SEEDS = (12, 40, 44)  # under FAULTS each reconnects several times; 40's host fails its first receive right
#                       after its first export (the peer's connect then raced its ctx's stop); 44 drops a stale
#                       message; 12 had the peer connect and leave before the local connect
FAULTS = "rdma_send=0.05,rdma_receive=0.05"


@pytest.mark.multiprocess
@pytest.mark.parametrize("seed", SEEDS)
def test_the_reconnect_example_survives_mixed_faults(doca_knobs: Knobs, backend: str, seed: int) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import rdma_reconnect
    finally:
        sys.path.remove(str(EXAMPLES))
    knobs = doca_knobs.replace(seed=seed, faults=FAULTS, shuffle=True)
    host, dpu = DocaPair(knobs).run(rdma_reconnect.host, rdma_reconnect.dpu, timeout=240, args=30)
    assert host["rounds"] == 30 and dpu["answered"] >= 30
    assert min(host["generation"], dpu["generation"]) >= 1, (host, dpu)  # both sides reconnected
    assert host["faults"] or dpu["faults"]
    assert host["refused"] == dpu["refused"] == [], (host["refused"], dpu["refused"])
