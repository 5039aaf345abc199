"""Native ``doca_rdma`` (libdoca_rdma): the backend of :mod:`doca_py.rdma`.

Plumbing as in :mod:`.dma` (:mod:`.engine`): one :class:`~.engine.EngineTaskPool`
per task type, the completion trampolines of :mod:`.ctx`. Connections are
:class:`NativeRdmaConnection` wrappers, one per ``doca_rdma_connection *`` of a
ctx (cached, so the public :class:`~doca_py.rdma.RdmaConnection` in ``owner``
survives). The connection state callbacks (§4.3) are module-level ``CFUNCTYPE``
trampolines that only record ``(connection, event)`` on the ctx; the Python
callback runs after ``doca_pe_progress`` returns (:meth:`NativeRdma.dispatch`).
The ctx user data (the ctx registry key) finds the ctx; the connection pointer,
or for :meth:`NativeRdma.connect_to_addr` the connection user data it passed,
finds the wrapper.

DOCA 2.6 (detected by the absence of ``doca_rdma_connection_get_id``, as the
declarations in :mod:`.capi.rdma` are) has no connection objects: one implicit
connection per ctx, ``export``/``connect`` without a connection, tasks without a
connection argument. :meth:`NativeRdma.export` then returns a wrapper standing for
that implicit connection (``ptr`` is ``None``), tasks accept only it, and anything
2.6 lacks (a second connection, the RDMA-CM flow, connection callbacks) raises
:class:`~doca_py.errors.DocaNotSupported` naming the loaded version.

The connection wrappers and trampolines are in :mod:`.rdma_connection`, the task
wrapper and its per-type C names in :mod:`.rdma_task`; this module re-exports them.
Nothing here touches DOCA at import time: libdoca_rdma is opened on first use.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from .._backend.settings import RdmaSettingMethods
from .._backend.protocols.core import BufHandle, DevInfoHandle
from ..errors import DocaInvalidValue, ErrorCode, check
from .capi.rdma import DocaRdmaGid
from .ctx import NativeCtx, rest_after
from .engine import EngineTaskPool, buf_ptr, devinfo_ptr, get_u32, init_ctx, is_supported
from .rdma_connection import (
    CONN_DISCONNECTION_CB,
    CONN_ESTABLISHED_CB,
    CONN_FAILURE_CB,
    CONN_REQUEST_CB,
    EV_DISCONNECTION,
    EV_ESTABLISHED,
    EV_FAILURE,
    EV_REQUEST,
    NativeRdmaConnection,
    has_connection_api,
    need_connections,
    rd,
    rdmas,
)
from .rdma_task import TASK_FNS, TASK_TYPES, NativeRdmaTask

__all__ = [
    "NativeRdma",
    "NativeRdmaConnection",
    "NativeRdmaTask",
    "TASK_TYPES",
    "rdma_create",
    "has_connection_api",
    "cap_get_max_recv_queue_size",
    "cap_get_max_send_queue_size",
    "cap_get_max_send_buf_list_len",
    "cap_get_max_message_size",
    "cap_get_gid_table_size",
    "cap_get_gid",
    "cap_transport_type_is_supported",
    "cap_task_is_supported",
    "cap_task_receive_get_max_dst_buf_list_len",
    "EV_REQUEST",
    "EV_ESTABLISHED",
    "EV_FAILURE",
    "EV_DISCONNECTION",
    "TASK_FNS",
]

_byref = ctypes.byref

# name -> (setter, getter, C type) of the plain settings behind the typed set_*/get_* methods.
_ATTRS: dict[str, tuple[str, str, Any]] = {
    "permissions": ("doca_rdma_set_permissions", "doca_rdma_get_permissions", ctypes.c_uint32),
    "transport_type": ("doca_rdma_set_transport_type", "doca_rdma_get_transport_type", ctypes.c_int),
    "gid_index": ("doca_rdma_set_gid_index", "doca_rdma_get_gid_index", ctypes.c_uint32),
    "max_num_connections": ("doca_rdma_set_max_num_connections", "doca_rdma_get_max_num_connections",
                            ctypes.c_uint16),
    "mtu": ("doca_rdma_set_mtu", "doca_rdma_get_mtu", ctypes.c_int),
    "recv_queue_size": ("doca_rdma_set_recv_queue_size", "doca_rdma_get_recv_queue_size", ctypes.c_uint32),
    "send_queue_size": ("doca_rdma_set_send_queue_size", "doca_rdma_get_send_queue_size", ctypes.c_uint32),
    "max_send_buf_list_len": ("doca_rdma_set_max_send_buf_list_len", "doca_rdma_get_max_send_buf_list_len",
                              ctypes.c_uint32),
    "receive_dst_buf_list_len": ("doca_rdma_task_receive_set_dst_buf_list_len",
                                 "doca_rdma_task_receive_get_dst_buf_list_len", ctypes.c_uint32),
    "grh_enabled": ("doca_rdma_set_grh_enabled", "doca_rdma_get_grh_enabled", ctypes.c_uint8),
    "sl": ("doca_rdma_set_sl", "doca_rdma_get_sl", ctypes.c_uint32),
    "rnr_retry_count": ("doca_rdma_set_rnr_retry_count", "doca_rdma_get_rnr_retry_count", ctypes.c_uint8),
    "connection_request_timeout": ("doca_rdma_set_connection_request_timeout",
                                   "doca_rdma_get_connection_request_timeout", ctypes.c_uint16),
}


class NativeRdma(RdmaSettingMethods, NativeCtx):
    """``doca_rdma *`` and its ctx."""

    def __init__(self, ptr: int | None) -> None:
        l = rd()
        self.ptr = ptr
        init_ctx(self, ptr, l.doca_rdma_as_ctx, l.doca_rdma_destroy, "doca_rdma")
        #: DOCA 3.x connection objects (else the 2.6 single implicit connection).
        self.conn_api = has_connection_api(l)
        self.conn_cb: Callable[[int, NativeRdmaConnection], None] | None = None
        self.implicit: NativeRdmaConnection | None = None
        self._conns: dict[int, NativeRdmaConnection] = {}
        self._cm_pending: dict[int, NativeRdmaConnection] = {}
        self._addrs: list[int] = []
        pools: dict[str, EngineTaskPool] = {}
        for kind in TASK_TYPES:
            fns = TASK_FNS[kind]
            pool = pools[kind] = EngineTaskPool(self, partial(getattr(l, fns["set_conf"]), ptr), fns["set_conf"],
                                                getattr(l, fns["as_task"]), NativeRdmaTask, kind)
            pool.fns = {op: getattr(l, name) for op, name in fns.items()}
        self.receive = pools["receive"]
        self.send = pools["send"]
        self.send_imm = pools["send_imm"]
        self.read = pools["read"]
        self.write = pools["write"]
        self.write_imm = pools["write_imm"]
        self.atomic_cmp_swp = pools["atomic_cmp_swp"]
        self.atomic_fetch_add = pools["atomic_fetch_add"]
        rdmas[self.key] = self

    # -- settings ---------------------------------------------------------------------------------
    def _set(self, name: str, value: int) -> None:
        setter, _, ctype = _ATTRS[name]
        v = int(value)
        bits = 31 if ctype is ctypes.c_int else 8 * ctypes.sizeof(ctype)
        if not 0 <= v < 1 << bits:
            raise DocaInvalidValue(f"{name} {v} does not fit the {bits}-bit C parameter of {setter}")
        if name == "max_num_connections" and not self.conn_api:
            if v == 1:
                return  # what DOCA 2.6 has
            raise need_connections(f"max_num_connections={v}")
        check(getattr(rd(), setter)(self.ptr, v), setter)

    def _get(self, name: str) -> int:
        _, getter, ctype = _ATTRS[name]
        if name == "max_num_connections" and not self.conn_api:
            return 1
        v = ctype()
        check(getattr(rd(), getter)(self.ptr, _byref(v)), getter)
        return int(v.value)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> int:
        state = NativeCtx.start(self)
        # Connections do not survive a stop: a restarted ctx needs new exports (§4.4).
        self._conns.clear()
        self._cm_pending.clear()
        self.implicit = None
        return state

    def destroy(self) -> None:
        NativeCtx.destroy(self)
        rdmas.pop(self.key, None)
        l = rd()
        for addr in self._addrs:
            l.doca_rdma_addr_destroy(addr)  # the ctx that used them is gone
        self._addrs.clear()

    def dispatch(self) -> bool:
        """Run the Python side of recorded completions and connection events (Pe)."""
        pending = self.pending
        if not pending:
            return False
        # The items recorded before this dispatch run now; what a callback's DOCA call records meanwhile waits
        # for the next progress. The list stays (the tasks keep its bound append): its items move to a copy,
        # so the loop keeps no count; a callback that raises leaves the rest first in line.
        items = pending[:]
        del pending[:]
        try:
            for item in items:
                obj, what = item
                if type(obj) is NativeRdmaConnection:
                    if self.conn_cb is not None:
                        self.conn_cb(what, obj)
                elif obj is self:
                    if self.state_cb is not None:
                        self.state_cb(*what)
                else:
                    obj.inflight = False
                    o = obj.owner
                    if what:
                        obj.on_success(o, o.user_data, obj.cud.user_data)
                    else:
                        self.task_failed(obj)
                        obj.on_error(o, o.user_data, obj.cud.user_data)
        except BaseException:
            pending[:0] = rest_after(items, item)  # the rest: on the next progress, before the newer records
            raise
        return True

    # -- connections -------------------------------------------------------------------------------
    def conn_for(self, ptr: int, conn_ud: int = 0) -> NativeRdmaConnection:
        """The wrapper of ``doca_rdma_connection *`` *ptr* (made on first sight)."""
        c = self._conns.get(ptr)
        if c is None:
            c = self._cm_pending.pop(conn_ud, None) if conn_ud else None
            if c is None:
                c = NativeRdmaConnection(self, ptr)
            else:
                c.ptr = ptr
            self._conns[ptr] = c
        return c

    def conn_ptr(self, conn: Any) -> int:
        """The ``doca_rdma_connection *`` of a connection of this ctx (3.x)."""
        if not isinstance(conn, NativeRdmaConnection) or conn.rdma is not self:
            raise DocaInvalidValue("the connection does not belong to this rdma ctx")
        return conn._p("an rdma task")

    def check_implicit(self, conn: Any) -> None:
        """DOCA 2.6: *conn* must be this ctx's implicit connection."""
        if not isinstance(conn, NativeRdmaConnection) or conn.rdma is not self:
            raise DocaInvalidValue("the connection does not belong to this rdma ctx")
        if conn is not self.implicit:
            raise need_connections("a connection other than the one of the last export")

    def set_connection_state_cb(self, cb: Callable[[int, Any], None]) -> None:
        check(rd().doca_rdma_set_connection_state_callbacks(self.ptr, CONN_REQUEST_CB, CONN_ESTABLISHED_CB,
                                                             CONN_FAILURE_CB, CONN_DISCONNECTION_CB),
              "doca_rdma_set_connection_state_callbacks")
        self.conn_cb = cb

    def export(self) -> tuple[bytes, NativeRdmaConnection]:
        """``doca_rdma_export``: a copy of the blob (it belongs to the ctx) and the new connection."""
        l = rd()
        blob, n = ctypes.c_void_p(), ctypes.c_size_t()
        if self.conn_api:
            conn = ctypes.c_void_p()
            check(l.doca_rdma_export(self.ptr, _byref(blob), _byref(n), _byref(conn)), "doca_rdma_export")
            if not conn.value:
                raise DocaInvalidValue("doca_rdma_export returned no connection")
            c = self.conn_for(conn.value)
        else:
            if self.implicit is not None:
                raise need_connections("a second doca_rdma_export on one started ctx")
            check(l.doca_rdma_export(self.ptr, _byref(blob), _byref(n)), "doca_rdma_export")
            c = self.implicit = NativeRdmaConnection(self, None, implicit=True)
        if not n.value:
            return b"", c
        if not blob.value:
            raise DocaInvalidValue("doca_rdma_export returned no blob")
        return ctypes.string_at(blob.value, n.value), c

    def connect(self, blob: bytes, conn: Any) -> None:
        """``doca_rdma_connect``: join *conn* (from :meth:`export`) to the peer's blob."""
        data = bytes(blob)
        if not data:
            raise DocaInvalidValue("empty connection blob")
        buf = ctypes.create_string_buffer(data, len(data))
        if self.conn_api:
            rc = rd().doca_rdma_connect(self.ptr, buf, len(data), self.conn_ptr(conn))
        else:
            self.check_implicit(conn)
            rc = rd().doca_rdma_connect(self.ptr, buf, len(data))
        check(rc, "doca_rdma_connect")

    def start_listen_to_port(self, port: int) -> int:
        if not 0 <= port <= 0xFFFF:
            raise DocaInvalidValue(f"port {port} is not a 16-bit port number")
        check(rd().doca_rdma_start_listen_to_port(self.ptr, port), "doca_rdma_start_listen_to_port")
        return port

    def stop_listen_to_port(self, port: int) -> None:
        if not 0 <= port <= 0xFFFF:
            raise DocaInvalidValue(f"port {port} is not a 16-bit port number")
        check(rd().doca_rdma_stop_listen_to_port(self.ptr, port), "doca_rdma_stop_listen_to_port")

    def connect_to_addr(self, addr_type: int, address: str, port: int) -> NativeRdmaConnection:
        """RDMA-CM client: a connection whose pointer arrives with its established/failure callback."""
        l = rd()
        if not 0 <= port <= 0xFFFF:
            raise DocaInvalidValue(f"port {port} is not a 16-bit port number")
        addr = ctypes.c_void_p()
        check(l.doca_rdma_addr_create(addr_type, address.encode(), port, _byref(addr)), "doca_rdma_addr_create")
        assert addr.value
        self._addrs.append(addr.value)
        c = NativeRdmaConnection(self, None)
        self._cm_pending[c.key] = c
        try:
            check(l.doca_rdma_connect_to_addr(self.ptr, addr.value, c.key), "doca_rdma_connect_to_addr")
        except BaseException:
            self._cm_pending.pop(c.key, None)
            raise
        return c

    # -- tasks --------------------------------------------------------------------------------------
    def _alloc(self, pool: EngineTaskPool, conn: Any, *args: Any) -> NativeRdmaTask:
        what = TASK_FNS[pool.kind]["allocate_init"]
        fn = getattr(rd(), what)
        if self.conn_api:
            rc = fn(self.ptr, self.conn_ptr(conn), *args, 0, _byref(pool.out))
        else:
            self.check_implicit(conn)
            rc = fn(self.ptr, *args, 0, _byref(pool.out))
        return cast(NativeRdmaTask, pool.take(rc, what))

    def task_receive_allocate_init(self, dst: BufHandle | None) -> NativeRdmaTask:
        pool = self.receive
        rc = rd().doca_rdma_task_receive_allocate_init(self.ptr, buf_ptr(dst), 0, _byref(pool.out))
        return cast(NativeRdmaTask, pool.take(rc, "doca_rdma_task_receive_allocate_init"))

    def task_send_allocate_init(self, conn: Any, src: BufHandle | None) -> NativeRdmaTask:
        return self._alloc(self.send, conn, buf_ptr(src))

    def task_send_imm_allocate_init(self, conn: Any, src: BufHandle | None, imm: int) -> NativeRdmaTask:
        return self._alloc(self.send_imm, conn, buf_ptr(src), _u32(imm))

    def task_read_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> NativeRdmaTask:
        return self._alloc(self.read, conn, buf_ptr(src), buf_ptr(dst))

    def task_write_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> NativeRdmaTask:
        return self._alloc(self.write, conn, buf_ptr(src), buf_ptr(dst))

    def task_write_imm_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle, imm: int) -> NativeRdmaTask:
        return self._alloc(self.write_imm, conn, buf_ptr(src), buf_ptr(dst), _u32(imm))

    def task_atomic_cmp_swp_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle, cmp: int,
                                          swap: int) -> NativeRdmaTask:
        return self._alloc(self.atomic_cmp_swp, conn, buf_ptr(dst), buf_ptr(result), cmp & _U64, swap & _U64)

    def task_atomic_fetch_add_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle,
                                            add: int) -> NativeRdmaTask:
        return self._alloc(self.atomic_fetch_add, conn, buf_ptr(dst), buf_ptr(result), add & _U64)

    def get_gpu_handle(self) -> int | None:
        """``doca_rdma_get_gpu_handle`` (GPU datapath; DOCA 3.x)."""
        out = ctypes.c_void_p()
        check(rd().doca_rdma_get_gpu_handle(self.ptr, _byref(out)), "doca_rdma_get_gpu_handle")
        return out.value


_U64 = (1 << 64) - 1


def _u32(v: int) -> int:
    if not 0 <= v <= 0xFFFFFFFF:
        raise DocaInvalidValue(f"immediate data {v} does not fit in 32 bits")
    return v


def rdma_create(dev: object) -> NativeRdma:
    """``doca_rdma_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(rd().doca_rdma_create(getattr(dev, "ptr"), _byref(out)), "doca_rdma_create")
    return NativeRdma(out.value)


# -- capabilities ----------------------------------------------------------------------------------
def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return get_u32(rd().doca_rdma_cap_get_max_recv_queue_size, devinfo_ptr(devinfo))


def cap_get_max_send_queue_size(devinfo: DevInfoHandle) -> int:
    return get_u32(rd().doca_rdma_cap_get_max_send_queue_size, devinfo_ptr(devinfo))


def cap_get_max_send_buf_list_len(devinfo: DevInfoHandle) -> int:
    return get_u32(rd().doca_rdma_cap_get_max_send_buf_list_len, devinfo_ptr(devinfo))


def cap_get_max_message_size(devinfo: DevInfoHandle) -> int:
    return get_u32(rd().doca_rdma_cap_get_max_message_size, devinfo_ptr(devinfo))


def cap_get_gid_table_size(devinfo: DevInfoHandle) -> int:
    return get_u32(rd().doca_rdma_cap_get_gid_table_size, devinfo_ptr(devinfo))


def cap_get_gid(devinfo: DevInfoHandle, start: int, num: int) -> list[bytes]:
    """*num* 16-byte GIDs from index *start* (``struct doca_rdma_gid`` array)."""
    if start < 0 or num < 0:
        raise DocaInvalidValue(f"GID entries [{start}, +{num}) are not a valid range")
    if num == 0:
        return []
    arr = (DocaRdmaGid * num)()
    check(rd().doca_rdma_cap_get_gid(devinfo_ptr(devinfo), start, num, arr), "doca_rdma_cap_get_gid")
    return [bytes(g.raw) for g in arr]


def cap_transport_type_is_supported(devinfo: DevInfoHandle, transport: int) -> bool:
    fn = rd().doca_rdma_cap_transport_type_is_supported
    rc = fn(devinfo_ptr(devinfo), transport)
    if rc == ErrorCode.NOT_SUPPORTED:
        return False
    check(rc, "doca_rdma_cap_transport_type_is_supported")
    return True


def cap_task_is_supported(devinfo: DevInfoHandle, task: str) -> bool:
    """``doca_rdma_cap_task_<task>_is_supported``."""
    if task not in TASK_TYPES:
        raise DocaInvalidValue(f"unknown rdma task type {task!r}; one of {', '.join(TASK_TYPES)}")
    return is_supported(getattr(rd(), TASK_FNS[task]["cap_is_supported"]), devinfo)


def cap_task_receive_get_max_dst_buf_list_len(devinfo: DevInfoHandle, transport: int) -> int:
    v = ctypes.c_uint32()
    check(rd().doca_rdma_cap_task_receive_get_max_dst_buf_list_len(devinfo_ptr(devinfo), transport, _byref(v)),
          "doca_rdma_cap_task_receive_get_max_dst_buf_list_len")
    return v.value

