"""Conformance: the RDMA remote sync-event tasks (get, notify_set, notify_add) against a peer's exported event.

Two rdma contexts connected in one process; the responder owns a SyncEvent with a remote-net publisher and
exports it, the requester imports it as a SyncEventRemoteNet and aims its tasks at it.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py.types import AccessFlag as A

from ..rdma.helpers import PERMS, Side, close_side, connect_pair, rig, run

KINDS = ("get", "notify_set", "notify_add")


@dataclasses.dataclass
class Rig:
    pe: d.Pe
    inv: d.BufInventory
    a: Side  # requester
    b: Side  # responder: owns the event
    se: d.SyncEvent
    remote: d.SyncEventRemoteNet

    def local(self, off: int, value: int | None = None, room: int = 8) -> d.Buf:
        """A buffer of the requester's memory at *off*: holding *value* (8 bytes), or empty with *room*."""
        if value is None:
            return self.inv.buf_get_by_addr(self.a.mm, self.a.base + off, room)
        self.a.mem[off:off + 8] = struct.pack("=Q", value)
        return self.inv.buf_get_by_data(self.a.mm, self.a.base + off, 8)


def _side(dev: d.Dev, pe: d.Pe, perms: A) -> Side:
    """An rdma ctx with only the remote sync-event tasks configured, and 64 KiB of memory."""
    r = d.Rdma(dev)
    pe.connect_ctx(r)
    r.set_permissions(perms)
    mm = d.Mmap()
    mem = mm.allocate(1 << 16)
    mm.add_dev(dev)
    mm.start()
    s = Side(r, mm, mem)
    for kind in KINDS:
        getattr(r, f"task_remote_net_sync_event_{kind}_set_conf")(s.ok, s.err, 8)
    return s


def _rig(b_perms: A = PERMS) -> Iterator[Rig]:
    with rig() as (dev, pe, inv):
        a = _side(dev, pe, PERMS)
        b = _side(dev, pe, b_perms)
        connect_pair(pe, a, b)
        se = d.SyncEvent()
        se.add_publisher_location_remote_net()
        se.add_subscriber_location_cpu(dev)
        se.start()
        remote = d.SyncEventRemoteNet.create_from_export(dev, se.export_to_remote_net())
        yield Rig(pe, inv, a, b, se, remote)
        remote.close()
        se.close()
        for s in (a, b):
            close_side(s)


@pytest.fixture
def r(backend: str) -> Iterator[Rig]:
    yield from _rig()


def test_notify_set_get_and_notify_add_reach_the_peer_event(r: Rig) -> None:
    a, conn = r.a, r.a.conn
    assert conn is not None
    t = a.rdma.task_remote_net_sync_event_notify_set_allocate_init(conn, r.remote, r.local(0, 77))
    assert t.get_sync_event() is r.remote and t.get_rdma_connection() is conn
    assert run(r.pe, a, t) == ["ok"]
    assert r.se.get() == 77
    dst = r.local(64, room=16)
    g = a.rdma.task_remote_net_sync_event_get_allocate_init(conn, r.remote, dst)
    assert run(r.pe, a, g) == ["ok"]
    assert g.get_result_len() == 8 and dst.get_data_len() == 8
    assert struct.unpack("=Q", bytes(dst.data_view()))[0] == 77
    res = r.local(128, room=8)
    add = a.rdma.task_remote_net_sync_event_notify_add_allocate_init(conn, r.remote, res, 5)
    assert add.get_add_data() == 5
    assert run(r.pe, a, add) == ["ok"]
    assert r.se.get() == 82 and struct.unpack("=Q", bytes(res.data_view()))[0] == 77
    r.se.wait_gt(81)  # the owner's synchronous wait sees the remote update (82)


def test_notify_set_needs_an_8_byte_source(r: Rig) -> None:
    assert r.a.conn is not None
    r.a.mem[0:4] = b"\1\2\3\4"
    short = r.inv.buf_get_by_data(r.a.mm, r.a.base, 4)
    t = r.a.rdma.task_remote_net_sync_event_notify_set_allocate_init(r.a.conn, r.remote, short)
    assert run(r.pe, r.a, t) == ["err"]
    assert t.get_status() is d.ErrorCode.INVALID_VALUE
    assert r.se.get() == 0


def test_a_revoked_event_fails_the_task(r: Rig) -> None:
    assert r.a.conn is not None
    r.se.stop()  # revokes the export
    g = r.a.rdma.task_remote_net_sync_event_get_allocate_init(r.a.conn, r.remote, r.local(0, room=8))
    assert run(r.pe, r.a, g) == ["err"]
    assert g.get_status() is d.ErrorCode.NOT_PERMITTED


def test_the_responder_grants_the_access(backend: str) -> None:
    gen = _rig(b_perms=A.LOCAL_READ_WRITE | A.RDMA_READ)
    r = next(gen)
    try:
        assert r.a.conn is not None
        t = r.a.rdma.task_remote_net_sync_event_notify_set_allocate_init(r.a.conn, r.remote, r.local(0, 1))
        assert run(r.pe, r.a, t) == ["err"]
        assert t.get_status() is d.ErrorCode.NOT_PERMITTED and r.se.get() == 0
    finally:
        next(gen, None)


def test_capabilities(backend: str) -> None:
    with d.Dev.open_by_pci_addr("03:00.0") as dev:
        info = dev.as_devinfo()
        assert d.Rdma.cap_task_remote_net_sync_event_get_is_supported(info)
        assert d.Rdma.cap_task_remote_net_sync_event_notify_set_is_supported(info)
        assert d.Rdma.cap_task_remote_net_sync_event_notify_add_is_supported(info)


def test_wrong_types_name_the_parameter(r: Rig) -> None:
    """Every argument of the remote sync-event task calls: DocaTypeError naming method and parameter."""
    a, conn = r.a, r.a.conn
    assert conn is not None
    buf = r.local(0, 1)
    rdma = a.rdma
    cases = [
        ("Rdma.task_remote_net_sync_event_get_allocate_init", "connection",
         lambda x: rdma.task_remote_net_sync_event_get_allocate_init(x, r.remote, buf)),
        ("Rdma.task_remote_net_sync_event_get_allocate_init", "event",
         lambda x: rdma.task_remote_net_sync_event_get_allocate_init(conn, x, buf)),
        ("Rdma.task_remote_net_sync_event_get_allocate_init", "dst",
         lambda x: rdma.task_remote_net_sync_event_get_allocate_init(conn, r.remote, x)),
        ("Rdma.task_remote_net_sync_event_notify_set_allocate_init", "src",
         lambda x: rdma.task_remote_net_sync_event_notify_set_allocate_init(conn, r.remote, x)),
        ("Rdma.task_remote_net_sync_event_notify_add_allocate_init", "result",
         lambda x: rdma.task_remote_net_sync_event_notify_add_allocate_init(conn, r.remote, x, 1)),
        ("Rdma.task_remote_net_sync_event_notify_add_allocate_init", "add_data",
         lambda x: rdma.task_remote_net_sync_event_notify_add_allocate_init(conn, r.remote, buf, x)),
    ]
    add = rdma.task_remote_net_sync_event_notify_add_allocate_init(conn, r.remote, buf, 1)
    cases += [
        ("RdmaTaskRemoteNetSyncEventNotifyAdd.set_sync_event", "event", add.set_sync_event),
        ("RdmaTaskRemoteNetSyncEventNotifyAdd.set_result_buf", "result", add.set_result_buf),
        ("RdmaTaskRemoteNetSyncEventNotifyAdd.set_add_data", "add", add.set_add_data),
    ]
    for where, param, call in cases:
        with pytest.raises(d.errors.DocaTypeError, match=rf"^{where}: {param} must be \w+.*, not str$"):
            call("x")
    add.free()
    buf.close()
