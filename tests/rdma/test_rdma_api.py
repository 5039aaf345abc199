"""Rdma configuration, capabilities, state rules, connection blobs and the RDMA-CM flow (one process)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.emulated import version as emu_version
from doca_py.rdma import Rdma, RdmaAddr, RdmaAddrType, RdmaConnection, RdmaTransportType
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState, MtuSize

from .helpers import PERMS, Side, close_side, connect_pair, listen, make_side, rig, run, wait_for


@pytest.fixture
def env(backend: str) -> Iterator[tuple[d.Dev, d.Pe, d.BufInventory]]:
    with rig() as r:
        yield r


def test_configuration_round_trips_and_is_idle_only(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    r = Rdma(dev)
    pe.connect_ctx(r)
    r.set_permissions(PERMS)
    r.set_max_num_connections(4)
    r.set_mtu(MtuSize.MTU_1K)
    r.set_recv_queue_size(100)
    r.set_send_queue_size(64)
    r.set_gid_index(0)
    r.set_max_send_buf_list_len(4)
    r.task_receive_set_dst_buf_list_len(2)
    r.set_rnr_retry_count(3)
    r.set_connection_request_timeout(1500)
    r.set_transport_type(RdmaTransportType.RC)
    assert r.get_permissions() == PERMS
    assert r.get_max_num_connections() == 4
    assert r.get_mtu() is MtuSize.MTU_1K
    assert (r.get_recv_queue_size(), r.get_send_queue_size()) == (128, 64)  # powers of two
    assert (r.get_max_send_buf_list_len(), r.task_receive_get_dst_buf_list_len()) == (4, 2)
    assert (r.get_rnr_retry_count(), r.get_connection_request_timeout()) == (3, 1500)
    assert r.get_transport_type() is RdmaTransportType.RC
    with pytest.raises(e.DocaInvalidValue):
        r.set_gid_index(5)
    with pytest.raises(e.DocaInvalidValue):
        r.set_rnr_retry_count(8)
    r.task_send_set_conf(lambda *a: None, lambda *a: None, 4)
    assert r.start() is CtxState.STARTING
    with pytest.raises(e.DocaBadState):
        r.set_permissions(A.RDMA_READ)
    with pytest.raises(e.DocaBadState):
        r.task_receive_set_conf(lambda *a: None, lambda *a: None, 4)
    r.close()


def test_capabilities(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    info = env[0].as_devinfo()
    assert Rdma.cap_get_max_message_size(info) >= 1 << 30
    assert Rdma.cap_get_max_send_buf_list_len(info) >= 1
    assert Rdma.cap_get_max_recv_queue_size(info) >= 1024 and Rdma.cap_get_max_send_queue_size(info) >= 1024
    assert Rdma.cap_transport_type_is_supported(info, RdmaTransportType.RC)
    assert Rdma.cap_task_receive_get_max_dst_buf_list_len(info, RdmaTransportType.RC) >= 1
    assert all(getattr(Rdma, f"cap_task_{n}_is_supported")(info) for n in
               ("receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cmp_swp", "atomic_fetch_add"))
    n = Rdma.cap_get_gid_table_size(info)
    gids = Rdma.cap_get_gid(info, 0, n)
    assert len(gids) == n and all(len(g) == 16 for g in gids)


def test_export_needs_start_and_respects_max_connections(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    s = make_side(dev, pe)
    with pytest.raises(e.DocaBadState):
        s.rdma.export()
    s.rdma.start()
    blob, conn = s.rdma.export()
    assert isinstance(conn, RdmaConnection) and conn.get_id() == 0 and len(blob) > 16
    with pytest.raises(e.DocaFull):
        s.rdma.export()
    with pytest.raises(e.DocaBadState):  # tasks only once RUNNING
        s.rdma.task_receive_allocate_init(None)
    close_side(s)


def test_connect_reaches_running_and_reports_established(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    states: list[tuple[CtxState, CtxState]] = []
    a.rdma.set_state_changed_cb(lambda u, c, p, n: states.append((p, n)))
    connect_pair(pe, a, b)
    assert (CtxState.STARTING, CtxState.RUNNING) in states
    wait_for(pe, lambda: a.events and b.events, "established callbacks")
    assert a.events == [("established", a.conn)] and b.events == [("established", b.conn)]
    with pytest.raises(e.DocaBadState):  # a second connect on a connected connection
        a.rdma.connect(b"x" * 10, a.conn)
    close_side(a)
    close_side(b)


def _fresh(dev: d.Dev, pe: d.Pe) -> tuple[Side, RdmaConnection]:
    s = make_side(dev, pe)
    s.rdma.set_max_num_connections(8)
    s.rdma.start()
    return s, s.rdma.export()[1]


def test_garbage_truncated_and_corrupt_blobs_are_refused(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    peer, _ = _fresh(dev, pe)
    good, _ = peer.rdma.export()
    s, conn = _fresh(dev, pe)
    for bad in (b"\x00" * 7, b"garbage" * 20, good[:-1], good + b"\0", good[:20],
                good[:30] + bytes([good[30] ^ 0xFF]) + good[31:]):
        with pytest.raises(e.DocaConnectionAborted):
            s.rdma.connect(bad, conn)
    with pytest.raises(e.DocaInvalidValue):
        s.rdma.connect(b"", conn)
    with pytest.raises(e.DocaTypeError, match="peer_blob must be bytes"):
        s.rdma.connect("text", conn)  # type: ignore[arg-type]
    # A well-formed blob whose key the peer never issued (forged) is refused by the peer.
    from doca_py.emulated import rdma as emu

    b = emu.decode_blob(good)
    b.key = bytes(16)
    with pytest.raises(e.DocaConnectionAborted):
        s.rdma.connect(emu.encode_blob(b), conn)
    # The genuine blob still works afterwards; replaying it is refused.
    s.rdma.connect(good, conn)
    _, conn2 = s.rdma.export()
    with pytest.raises(e.DocaConnectionAborted):
        s.rdma.connect(good, conn2)
    # A third context replaying the same blob is refused by the peer (already connected).
    other, conn3 = _fresh(dev, pe)
    with emu._used_lock:  # forget the local replay check: the peer must refuse on its own
        emu._used_keys.discard(emu.decode_blob(good).key)
    with pytest.raises(e.DocaConnectionAborted):
        other.rdma.connect(good, conn3)
    for x in (s, peer, other):
        close_side(x)


def test_stop_flushes_posted_receives_and_restart_needs_new_connection(
        env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    connect_pair(pe, a, b)
    buf = inv.buf_get_by_addr(b.mm, b.base, 4096)
    t = b.rdma.task_receive_allocate_init(buf)
    t.submit()
    assert b.rdma.stop() is CtxState.STOPPING
    wait_for(pe, lambda: b.done, "flush")
    assert b.done == [("err", t)] and t.get_status() == e.ErrorCode.IO_FAILED
    t.free()
    wait_for(pe, lambda: b.rdma.get_state() == CtxState.IDLE, "IDLE")
    wait_for(pe, lambda: ("disconnection", a.conn) in a.events, "peer sees the disconnection")
    assert b.rdma.start() is CtxState.STARTING
    blob, conn = b.rdma.export()
    assert conn is not b.conn
    buf.dec_refcount()
    close_side(a)
    close_side(b)


# -- RDMA-CM -------------------------------------------------------------------------------------------
def test_cm_accept_establishes_both_sides(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    server, client = make_side(dev, pe, conn_cbs=False), make_side(dev, pe, conn_cbs=False)
    requests: list[RdmaConnection] = []
    ev: list[tuple[str, str, object]] = []
    server.rdma.set_connection_state_callbacks(
        lambda c, cu: (requests.append(c), c.accept(b"hi")),
        lambda c, u, cu: ev.append(("server", "established", u)),
        lambda c, u, cu: ev.append(("server", "failure", u)),
        lambda c, u, cu: ev.append(("server", "disconnection", u)))
    client.rdma.set_connection_state_callbacks(
        None,
        lambda c, u, cu: ev.append(("client", "established", u)),
        lambda c, u, cu: ev.append(("client", "failure", u)),
        lambda c, u, cu: ev.append(("client", "disconnection", u)))
    server.rdma.start()
    client.rdma.start()
    port = listen(server.rdma)
    addr = RdmaAddr(RdmaAddrType.IPv4, "127.0.0.1", port)
    assert addr.get_params() == (RdmaAddrType.IPv4, "127.0.0.1", port)
    cconn = client.rdma.connect_to_addr(addr, user_data="mine")
    wait_for(pe, lambda: len(ev) >= 2, "established on both sides")
    assert sorted(ev) == [("client", "established", "mine"), ("server", "established", None)]
    assert client.rdma.get_state() == server.rdma.get_state() == CtxState.RUNNING
    assert requests and requests[0].get_addr() is not None
    # The CM connection carries traffic like an exported one.
    buf = inv.buf_get_by_addr(server.mm, server.base, 64)
    server.mem[64:67] = b"abc"
    src = inv.buf_get_by_data(server.mm, server.base + 64, 3)
    rt = client.rdma.task_receive_allocate_init(inv.buf_get_by_addr(client.mm, client.base, 64))
    rt.submit()
    assert run(pe, server, server.rdma.task_send_allocate_init(requests[0], src)) == ["ok"]
    wait_for(pe, lambda: client.done, "receive")
    assert bytes(client.mem[:3]) == b"abc" and rt.get_result_rdma_connection() is cconn
    cconn.disconnect()
    wait_for(pe, lambda: ("server", "disconnection", None) in ev, "server sees the disconnection")
    buf.dec_refcount()
    close_side(client)
    close_side(server)


def test_cm_reject_and_unreachable_report_failure(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    server, client = make_side(dev, pe, conn_cbs=False), make_side(dev, pe, conn_cbs=False)
    ev: list[str] = []
    server.rdma.set_connection_state_callbacks(lambda c, cu: c.reject(), None, None, None)
    client.rdma.set_max_num_connections(2)
    client.rdma.set_connection_state_callbacks(None, lambda c, u, cu: ev.append(f"established {u}"),
                                               lambda c, u, cu: ev.append(f"failure {u}"), None)
    server.rdma.start()
    client.rdma.start()
    port = listen(server.rdma)
    client.rdma.connect_to_addr(RdmaAddr(RdmaAddrType.IPv4, "127.0.0.1", port), user_data=1)
    wait_for(pe, lambda: ev, "failure callback")
    # DOCA 3.x: the ctx is RUNNING without any connection; 2.6: it waits for a connection in STARTING.
    assert ev == ["failure 1"] and client.rdma.get_state() == (CtxState.RUNNING if emu_version.at_least(3, 0)
                                                         else CtxState.STARTING)
    server.rdma.stop_listen_to_port(port)
    client.rdma.connect_to_addr(RdmaAddr(RdmaAddrType.IPv4, "127.0.0.1", port), user_data=2)
    wait_for(pe, lambda: len(ev) == 2, "failure callback")
    assert ev[1] == "failure 2"
    with pytest.raises(e.DocaInvalidValue):
        RdmaAddr(RdmaAddrType.IPv4, "::1", 1)
    with pytest.raises(e.DocaNotFound):
        server.rdma.stop_listen_to_port(port)
    close_side(client)
    close_side(server)
