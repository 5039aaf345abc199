"""Several connections on one Rdma ctx (DOCA 3.x, ``doca_rdma_set_max_num_connections``), as
``rdma_multi_conn_send`` / ``_receive`` use them: one ``export`` per connection up to the maximum, receives that
belong to the ctx (any connection's message takes the next posted one, and the completion names the
connection), sends that name theirs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.rdma import RdmaConnection, RdmaOpcode
from doca_py.types import CtxState

from .helpers import close_side, has_connection_objects, make_side, rig, run, wait_for


@pytest.fixture
def env(backend: str) -> Iterator[tuple[d.Dev, d.Pe, d.BufInventory]]:
    if not has_connection_objects():
        pytest.skip("DOCA 2.6 has one implicit connection per ctx")
    with rig() as r:
        yield r


def test_one_ctx_holds_several_connections_and_routes_each_message(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    hub = make_side(dev, pe)
    hub.rdma.set_max_num_connections(3)
    hub.rdma.start()
    peers = [make_side(dev, pe) for _ in range(3)]
    conns: list[RdmaConnection] = []  # the hub's connection to peers[k]
    for p in peers:
        p.rdma.start()
        hub_blob, conn = hub.rdma.export()
        p_blob, p.conn = p.rdma.export()
        hub.rdma.connect(p_blob, conn)
        p.rdma.connect(hub_blob, p.conn)
        conns.append(conn)
    assert sorted(c.get_id() for c in conns) == [0, 1, 2]
    with pytest.raises(e.DocaFull):  # max_num_connections reached
        hub.rdma.export()
    wait_for(pe, lambda: all(x.rdma.get_state() == CtxState.RUNNING for x in peers), "RUNNING")

    # The hub's receives belong to the ctx: the peers send in reverse order, each message takes the next posted
    # receive, and each completion names the connection it came on.
    for i in range(3):
        hub.rdma.task_receive_allocate_init(inv.buf_get_by_addr(hub.mm, hub.base + 256 * i, 256)).submit()
    for k in reversed(range(3)):
        p = peers[k]
        assert p.conn is not None
        p.mem[:6] = f"from {k}".encode()
        assert run(pe, p, p.rdma.task_send_allocate_init(p.conn, inv.buf_get_by_data(p.mm, p.base, 6))) == ["ok"]
    wait_for(pe, lambda: len(hub.done) == 3, "the hub's receives")
    got = [(bytes(t.get_dst_buf().data_view()), t.get_result_rdma_connection(), t.get_result_opcode())
           for _, t in hub.done]
    assert got == [(f"from {k}".encode(), conns[k], RdmaOpcode.RECV_SEND) for k in reversed(range(3))]
    assert [k for k, _ in hub.done] == ["ok"] * 3

    # A send names its connection: each peer gets the message sent on its own.
    for p in peers:
        p.rdma.task_receive_allocate_init(inv.buf_get_by_addr(p.mm, p.base + 4096, 64)).submit()
    for k, conn in enumerate(conns):
        hub.mem[8192 + 16 * k:8192 + 16 * k + 4] = f"to {k}".encode()
        hub.rdma.task_send_allocate_init(conn, inv.buf_get_by_data(hub.mm, hub.base + 8192 + 16 * k, 4)).submit()
    wait_for(pe, lambda: len(hub.done) == 6 and all(len(p.done) == 2 for p in peers), "the sends and receives")
    assert [k for k, _ in hub.done[3:]] == ["ok"] * 3
    for k, p in enumerate(peers):
        kind, t = p.done[-1]
        assert (kind, bytes(t.get_dst_buf().data_view()), t.get_result_rdma_connection()) == \
            ("ok", f"to {k}".encode(), p.conn)
    for s in (hub, *peers):
        close_side(s)
