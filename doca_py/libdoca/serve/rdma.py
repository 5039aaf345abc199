"""libdoca_rdma served by the emulator: the ctx, its settings and capabilities, export/connect, RDMA-CM and
the connections; the tasks are in :mod:`.rdma_tasks` and :mod:`.rdma_sync_event`.

DOCA 2.6 has no connection objects: ``doca_rdma_export``/``doca_rdma_connect`` take none and the tasks'
``*_allocate_init`` no connection argument. The emulator's ctx always works with connections, so a 2.6
library uses one *implicit* connection per start of the ctx: the first export (or a connect without one)
makes it, every later export of that start returns its blob again, and the tasks run on it. A slot
function tells the two ABIs apart by its arity (the library's version fixed the prototype at attach).

Connection handles, their user data, their export blobs and their address objects live until the ctx is
destroyed (DOCA owns connections; a stopped ctx's connections are dead but their pointers stay valid).
"""

from __future__ import annotations

import ctypes
import ipaddress
from collections.abc import Callable
from typing import Any

from ...emulated import rdma as emu
from ...emulated.dev import EmuDev, EmuDevInfo
from ...emulated.rdma import EmuRdma, EmuRdmaConnection
from ...emulated.rdma.config import EV_REQUEST
from ...errors import DocaBadState, DocaError, DocaInvalidValue, DocaNotSupported
from ._core import (c_function, forget, handle, impl, log, obj, out_bytes, out_int, out_ptr, out_u8, out_u16,
                    out_u32, out_u64, read_str)
from .common import ctx_extra, forget_ctx

__all__ = ["rdma_of", "conn_of", "conn_handle", "opt_conn_handle", "split_conn"]

#: ``doca_rdma_connection_request_cb_t(connection, ctx_user_data)``.
ConnRequestFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64)
#: ``doca_rdma_connection_{established,failure,disconnection}_cb_t(connection, conn_user_data, ctx_user_data)``.
ConnEventFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)


class _Addr:
    """``struct doca_rdma_addr``: an RDMA-CM address (type, address text, port)."""

    __slots__ = ("type", "address", "port", "text")

    def __init__(self, addr_type: int, address: str, port: int) -> None:
        self.type, self.address, self.port = addr_type, address, port
        self.text = ctypes.create_string_buffer(address.encode())  # what get_params points C at


class _Conn:
    """What C attaches to a connection: its user data, its export blob, its address object."""

    __slots__ = ("conn", "user_data", "blob", "addr")

    def __init__(self, conn: EmuRdmaConnection) -> None:
        self.conn = conn  # keeps id(conn) unique while this record lives
        self.user_data = 0
        self.blob: ctypes.Array[ctypes.c_char] | None = None
        self.addr: _Addr | None = None


class _State:
    """An rdma ctx's C side: its connections' records and 2.6's implicit connection."""

    __slots__ = ("conns", "implicit")

    def __init__(self) -> None:
        self.conns: dict[int, _Conn] = {}
        self.implicit: EmuRdmaConnection | None = None


_states: dict[int, _State] = {}


def _state(r: object) -> _State:
    st = _states.get(id(r))
    if st is None:
        st = _states[id(r)] = _State()
    return st


def rdma_of(p: int | None) -> EmuRdma:
    """The rdma ctx behind a ``doca_rdma *``."""
    return obj(p, EmuRdma, "doca_rdma")


def conn_of(p: int | None) -> EmuRdmaConnection:
    """The connection behind a ``doca_rdma_connection *``."""
    return obj(p, EmuRdmaConnection, "doca_rdma_connection")


def _rec(conn: EmuRdmaConnection) -> _Conn:
    st = _state(conn.ctx)
    rec = st.conns.get(id(conn))
    if rec is None:
        rec = st.conns[id(conn)] = _Conn(conn)
    return rec


def conn_handle(conn: EmuRdmaConnection) -> int:
    """The C handle of *conn* (its record made on first sight, dropped with its ctx)."""
    _rec(conn)
    return handle(conn)


def opt_conn_handle(conn: object) -> int | None:
    """:func:`conn_handle`, ``None`` (NULL) for no connection."""
    return conn_handle(conn) if isinstance(conn, EmuRdmaConnection) else None


def _implicit(r: EmuRdma, create: bool) -> EmuRdmaConnection:
    """DOCA 2.6: the ctx's one connection of this start (made by the first export or connect)."""
    st = _state(r)
    c = st.implicit
    if c is None or c.epoch != r.epoch:
        if not create:
            raise DocaBadState("doca_rdma: export and connect the ctx before its tasks (DOCA 2.6 has one "
                               "connection per ctx, made by doca_rdma_export)")
        blob, c = r.export()
        _rec(c).blob = ctypes.create_string_buffer(blob, len(blob))
        st.implicit = c
    return c


def split_conn(r: EmuRdma, args: tuple[Any, ...], rest: int) -> tuple[EmuRdmaConnection, tuple[Any, ...]]:
    """A task's ``*_allocate_init`` arguments after the ctx: DOCA 3.x passes the connection first, 2.6 only
    the *rest* (the task runs on the implicit connection)."""
    if len(args) == rest + 1:
        return conn_of(args[0]), args[1:]
    if len(args) != rest:
        raise DocaInvalidValue(f"unexpected argument count {len(args) + 1}")
    return _implicit(r, False), args


# -- the ctx -----------------------------------------------------------------------------------------

@impl("doca_rdma_create")
def _create(dev: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("doca_rdma_create: NULL output pointer")
    r = emu.rdma_create(obj(dev, EmuDev, "doca_dev"))
    out_ptr(out, ctx_extra(r).handle)


@impl("doca_rdma_destroy")
def _destroy(p: int | None) -> None:
    r = rdma_of(p)
    r.destroy()
    st = _states.pop(id(r), None)
    if st is not None:
        for rec in st.conns.values():
            if rec.addr is not None:
                forget(rec.addr)
            forget(rec.conn)
    forget_ctx(r)


@impl("doca_rdma_as_ctx")
def _as_ctx(p: int | None) -> int:
    return handle(rdma_of(p))


# -- settings ----------------------------------------------------------------------------------------

def _setting(name: str, out: Callable[[int | None, Any], None]) -> None:
    """``doca_rdma_set_<name>`` / ``doca_rdma_get_<name>`` over the emulator's typed setting."""

    def set_(p: int | None, value: int) -> None:
        getattr(rdma_of(p), f"set_{name}")(value)

    def get(p: int | None, dst: int | None) -> None:
        out(dst, int(getattr(rdma_of(p), f"get_{name}")()))

    impl(f"doca_rdma_set_{name}")(set_)
    impl(f"doca_rdma_get_{name}")(get)


for _name, _out in (("send_queue_size", out_u32), ("recv_queue_size", out_u32), ("max_send_buf_list_len", out_u32),
                    ("transport_type", out_int), ("mtu", out_int), ("permissions", out_u32),
                    ("grh_enabled", out_u8), ("gid_index", out_u32), ("sl", out_u32),
                    ("connection_request_timeout", out_u16), ("max_num_connections", out_u16),
                    ("rnr_retry_count", out_u8)):
    _setting(_name, _out)


@impl("doca_rdma_task_receive_set_dst_buf_list_len")
def _set_recv_list_len(p: int | None, n: int) -> None:
    rdma_of(p).set_receive_dst_buf_list_len(n)


@impl("doca_rdma_task_receive_get_dst_buf_list_len")
def _get_recv_list_len(p: int | None, out: int | None) -> None:
    out_u32(out, rdma_of(p).get_receive_dst_buf_list_len())


# -- capabilities ------------------------------------------------------------------------------------

def _info(p: int | None) -> EmuDevInfo:
    return obj(p, EmuDevInfo, "doca_devinfo")


def _cap_u32(name: str, fn: Callable[[EmuDevInfo], int]) -> None:
    def get(info: int | None, out: int | None) -> None:
        out_u32(out, fn(_info(info)))

    impl(name)(get)


_cap_u32("doca_rdma_cap_get_max_recv_queue_size", emu.cap_get_max_recv_queue_size)
_cap_u32("doca_rdma_cap_get_max_send_queue_size", emu.cap_get_max_send_queue_size)
_cap_u32("doca_rdma_cap_get_max_send_buf_list_len", emu.cap_get_max_send_buf_list_len)
_cap_u32("doca_rdma_cap_get_max_message_size", emu.cap_get_max_message_size)
_cap_u32("doca_rdma_cap_get_gid_table_size", emu.cap_get_gid_table_size)


@impl("doca_rdma_cap_get_gid")
def _cap_gid(info: int | None, start: int, num: int, dst: int | None) -> None:
    gids = emu.cap_get_gid(_info(info), start, num)
    if gids:
        if not dst:
            raise DocaInvalidValue("doca_rdma_cap_get_gid: NULL gid array")
        out_bytes(dst, b"".join(gids))


def _transport(t: int) -> int:
    if t not in (0, 1):
        raise DocaInvalidValue(f"unknown transport type {t}")
    return t


@impl("doca_rdma_cap_transport_type_is_supported")
def _cap_transport(info: int | None, t: int) -> None:
    if not emu.cap_transport_type_is_supported(_info(info), _transport(t)):
        raise DocaNotSupported(f"the device does not support transport type {t}")


@impl("doca_rdma_cap_task_receive_get_max_dst_buf_list_len")
def _cap_recv_list_len(info: int | None, t: int, out: int | None) -> None:
    out_u32(out, emu.cap_task_receive_get_max_dst_buf_list_len(_info(info), _transport(t)))


# -- export / connect --------------------------------------------------------------------------------

@impl("doca_rdma_export")
def _export(p: int | None, out_blob: int | None, out_len: int | None, *out_conn: int | None) -> None:
    r = rdma_of(p)
    if not out_blob or not out_len or (out_conn and not out_conn[0]):
        raise DocaInvalidValue("doca_rdma_export: NULL output pointer")
    if out_conn:  # DOCA 3.x: a new connection per export
        blob, c = r.export()
        rec = _rec(c)
        rec.blob = ctypes.create_string_buffer(blob, len(blob))
        out_ptr(out_conn[0], handle(c))
    else:
        rec = _rec(_implicit(r, True))
    assert rec.blob is not None
    out_ptr(out_blob, ctypes.addressof(rec.blob))
    out_u64(out_len, len(rec.blob.raw))


@impl("doca_rdma_connect")
def _connect(p: int | None, blob: int | None, size: int, *conn: int | None) -> None:
    r = rdma_of(p)
    c = conn_of(conn[0]) if conn else _implicit(r, True)
    if not blob or not size:
        raise DocaInvalidValue("doca_rdma_connect: empty connection details")
    r.connect(ctypes.string_at(blob, size), c)


# -- RDMA-CM (DOCA 3.x) ------------------------------------------------------------------------------

def _port(port: int) -> int:
    if not 0 <= port <= 0xFFFF:
        raise DocaInvalidValue(f"port {port} is not a 16-bit port number")
    return port


@impl("doca_rdma_addr_create")
def _addr_create(addr_type: int, address: int | None, port: int, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("doca_rdma_addr_create: NULL output pointer")
    if addr_type not in (0, 1, 2):
        raise DocaInvalidValue(f"doca_rdma_addr_create: unknown address type {addr_type}")
    text = read_str(address, "doca_rdma_addr_create: address")
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        raise DocaInvalidValue(f"doca_rdma_addr_create: {text!r} is not an address") from None
    if (addr_type == 0) != (ip.version == 4):
        raise DocaInvalidValue(f"doca_rdma_addr_create: {text!r} is not of address type {addr_type}")
    out_ptr(out, handle(_Addr(addr_type, text, _port(port))))


def _addr(p: int | None) -> _Addr:
    return obj(p, _Addr, "doca_rdma_addr")


@impl("doca_rdma_addr_destroy")
def _addr_destroy(p: int | None) -> None:
    a = _addr(p)
    for st in _states.values():
        if any(rec.addr is a for rec in st.conns.values()):
            raise DocaBadState("doca_rdma_addr_destroy: the address belongs to a connection")
    forget(a)


@impl("doca_rdma_addr_get_params")
def _addr_params(p: int | None, out_type: int | None, out_text: int | None, out_port: int | None) -> None:
    a = _addr(p)
    if not out_type or not out_text or not out_port:
        raise DocaInvalidValue("doca_rdma_addr_get_params: NULL output pointer")
    out_int(out_type, a.type)
    out_ptr(out_text, ctypes.addressof(a.text))
    out_u16(out_port, a.port)


@impl("doca_rdma_start_listen_to_port")
def _listen(p: int | None, port: int) -> None:
    rdma_of(p).start_listen_to_port(_port(port))


@impl("doca_rdma_stop_listen_to_port")
def _stop_listen(p: int | None, port: int) -> None:
    rdma_of(p).stop_listen_to_port(_port(port))


@impl("doca_rdma_connect_to_addr")
def _connect_to_addr(p: int | None, addr: int | None, user_data: int) -> None:
    r = rdma_of(p)
    a = _addr(addr)
    c = r.connect_to_addr(a.type, a.address, a.port)
    _rec(c).user_data = user_data  # before any progress: its first callback carries it


@impl("doca_rdma_connection_accept")
def _accept(p: int | None, data: int | None, size: int) -> None:
    if size and not data:
        raise DocaInvalidValue("doca_rdma_connection_accept: NULL private data of non-zero length")
    conn_of(p).accept(ctypes.string_at(data, size) if data and size else None)


@impl("doca_rdma_connection_reject")
def _reject(p: int | None) -> None:
    conn_of(p).reject()


@impl("doca_rdma_connection_disconnect")
def _disconnect(p: int | None) -> None:
    conn_of(p).disconnect()


@impl("doca_rdma_connection_get_addr")
def _conn_addr(p: int | None, out: int | None) -> None:
    c = conn_of(p)
    if not out:
        raise DocaInvalidValue("doca_rdma_connection_get_addr: NULL output pointer")
    rec = _rec(c)
    if rec.addr is None:
        params = c.get_addr()
        if params is not None:
            rec.addr = _Addr(*params)
    out_ptr(out, handle(rec.addr) if rec.addr is not None else None)  # export/connect: no address


@impl("doca_rdma_connection_set_user_data")
def _conn_set_ud(p: int | None, ud: int) -> None:
    _rec(conn_of(p)).user_data = ud


@impl("doca_rdma_connection_get_user_data")
def _conn_get_ud(p: int | None, out: int | None) -> None:
    out_u64(out, _rec(conn_of(p)).user_data)


@impl("doca_rdma_connection_get_id")
def _conn_id(p: int | None, out: int | None) -> None:
    out_u32(out, conn_of(p).get_id())


@impl("doca_rdma_set_connection_state_callbacks")
def _set_conn_cbs(p: int | None, request: int | None, established: int | None, failure: int | None,
                  disconnection: int | None) -> None:
    r = rdma_of(p)
    if not established or not failure or not disconnection:
        raise DocaInvalidValue("doca_rdma_set_connection_state_callbacks: only the request callback may be NULL")
    e = ctx_extra(r)
    cbs = (c_function(ConnRequestFn, request), c_function(ConnEventFn, established),
           c_function(ConnEventFn, failure), c_function(ConnEventFn, disconnection))

    def changed(kind: int, conn: EmuRdmaConnection) -> None:
        h = conn_handle(conn)
        if kind == EV_REQUEST:
            if cbs[0] is not None:
                cbs[0](h, e.user_data)
                return
            try:  # no request callback: a client-only ctx takes what comes, as with no callbacks at all
                conn.accept(None)
            except DocaError as exc:
                log.warning("doca_rdma: accepting a connection request failed: %s", exc)
            return
        cbs[kind](h, _rec(conn).user_data, e.user_data)

    r.set_connection_state_cb(changed)
