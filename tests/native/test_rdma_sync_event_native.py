"""The native RDMA remote sync-event tasks over the fake libraries: the DOCA 3.0 ABI (a connection argument in
``*_allocate_init``) and the 2.6 one (none), against the fake common's sync event."""

from __future__ import annotations

import ctypes
import struct

import pytest

from doca_py.errors import DocaInvalidValue
from doca_py.native import rdma as nrdma
from doca_py.native.buf import NativeBuf
from doca_py.native import rdma_sync_event as nse
from doca_py.native import sync_event as nsync
from doca_py.native.capi import BoundLib

from .test_rdma_native import Bench, _completions, env26, env30, rdma26_dir, rdma30_dir  # noqa: F401 - fixtures
from .owners import Owner

_U64 = struct.Struct("=Q")


def memoryview_of(buf: NativeBuf) -> memoryview:
    """The data region of a native descriptor of Python memory."""
    return memoryview((ctypes.c_char * buf.get_data_len()).from_address(buf.get_data())).cast("B")


@pytest.mark.parametrize("env", ["env30", "env26"])
def test_remote_sync_event_tasks_reach_the_exporting_event(env: str, request: pytest.FixtureRequest) -> None:
    common: BoundLib = request.getfixturevalue(env)
    b = Bench(common)
    se = nsync.sync_event_create()
    se.add_publisher_location_remote_net()
    se.add_subscriber_location_cpu(b.dev)
    se.start()
    remote = nsync.sync_event_remote_net_create_from_export(b.dev, se.export_to_remote_net())
    r = nrdma.rdma_create(b.dev)
    done = {kind: _completions(nse.task_pool(r, kind)) for kind in ("get", "notify_set", "notify_add")}
    b.pe.connect_ctx(r)
    r.start()
    _, conn = r.export()
    if r.conn_api:
        b.pe.progress()
    r.connect(b"FAKE-peer", conn)

    t = nse.task_allocate_init(r, "notify_set", conn, remote, b.buf(_U64.pack(0xD0CA)), 0)
    t.owner = Owner("set")
    t.submit()
    assert b.pe.progress() and done["notify_set"] == ["set"] and se.get() == 0xD0CA
    dst = b.buf(size=16)
    g = nse.task_allocate_init(r, "get", conn, remote, dst, 0)
    g.owner = Owner("get")
    g.submit()
    assert b.pe.progress() and done["get"] == ["get"] and g.get_result_len() == 8
    assert dst.get_data_len() == 8 and _U64.unpack(bytes(memoryview_of(dst)))[0] == 0xD0CA
    res = b.buf(size=8)
    a = nse.task_allocate_init(r, "notify_add", conn, remote, res, 5)
    assert a.get_add_data() == 5
    a.owner = Owner("add")
    a.submit()
    assert b.pe.progress() and done["notify_add"] == ["add"] and se.get() == 0xD0CA + 5
    assert _U64.unpack(bytes(memoryview_of(res)))[0] == 0xD0CA
    # A revoked export fails the task with DOCA's error, through the error callback.
    se.stop()
    g.submit()
    assert b.pe.progress() and done["get"][-1] == ("error", "get")
    with pytest.raises(DocaInvalidValue):
        nse.task_allocate_init(r, "wait_gt", conn, remote, res, 0)
    for task in (t, g, a):
        task.free()
    r.destroy()
    remote.destroy()
    se.destroy()
    b.pe.destroy()
