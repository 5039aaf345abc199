"""libdoca_comch (DOCA 2.6: libdoca_cc) served by the emulator: servers, clients, connections, send
tasks and events. The consumer and producer are in :mod:`.comch_fastpath`.

Every function serves both spellings: ``doca_comch_*`` and 2.6's ``doca_cc_*`` (same ABI).

Events: DOCA calls the registered C callbacks from inside ``doca_pe_progress``; so does the emulator,
which delivers messages, connection changes and consumer announcements as ``progress()`` items. A
message is handed to C as a pointer into the emulator's receive copy, valid for the callback only, as
DOCA documents it. The ``event`` argument of each callback is an opaque handle (one per endpoint and
event kind): DOCA offers no function that takes it.

Connections are the emulator's objects behind stable handles. A server's connection handle lives until
its disconnect callback has returned (DOCA frees the connection then); a client's until the client
gives out a newer one or is destroyed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, TypeVar

from ...emulated import comch as emu
from ...emulated.comch import EmuComchClient, EmuComchConnection, EmuComchServer, EmuComchTaskSend
from ...emulated.comch.endpoints import Endpoint
from ...emulated.dev import EmuDev, EmuDevInfo, EmuDevRep
from ...errors import DocaInvalidValue, DocaNotSupported
from ...native.capi.comch import RENAMES_26
from ._core import c_function, forget, handle, impl, obj, out_ptr, out_u32, out_u64, read_str
from .common import alloc_or_fail, ctx_extra, forget_ctx, task_set_conf

__all__ = ["serves", "conn_of", "u32_cap", "supported", "MsgRecvFn", "ConnStatusFn", "ConsumerEventFn"]

F = TypeVar("F", bound=Callable[..., Any])

MsgRecvFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)
"""``doca_comch_event_msg_recv_cb_t(event, recv_buffer, msg_len, connection)``."""
ConnStatusFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint8)
"""``doca_comch_event_connection_status_changed_cb_t(event, connection, change_successful)``."""
ConsumerEventFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32)
"""``doca_comch_event_consumer_cb_t(event, connection, remote_consumer_id)``."""


def serves(*names: str) -> Callable[[F], F]:
    """:func:`impl` for ``doca_comch_*`` *names* and, for those DOCA 2.6 had, their ``doca_cc_*`` spellings."""
    return impl(*names, *(RENAMES_26[n] for n in names if n in RENAMES_26))


# -- connections -------------------------------------------------------------------------------------

class _Event:
    """The opaque ``struct doca_comch_event_*`` a callback receives."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind


class _EpExtra:
    """What C attaches to a server or client: its callbacks, event handles, connection handles."""

    __slots__ = ("msg", "connect", "disconnect", "new_consumer", "expired_consumer", "events", "conns")

    def __init__(self) -> None:
        self.msg: Any = None
        self.connect: Any = None
        self.disconnect: Any = None
        self.new_consumer: Any = None
        self.expired_consumer: Any = None
        self.events: dict[str, int] = {}
        self.conns: set[EmuComchConnection] = set()  # connections whose handle C holds

    def event(self, kind: str) -> int:
        h = self.events.get(kind)
        if h is None:
            h = self.events[kind] = handle(_Event(kind))
        return h


_ep_extra: dict[int, _EpExtra] = {}
_conn_ud: dict[int, int] = {}  # id(connection) -> its union doca_data


def _extra(ep: Endpoint) -> _EpExtra:
    e = _ep_extra.get(id(ep))
    if e is None:
        e = _ep_extra[id(ep)] = _EpExtra()
    return e


def conn_of(p: int | None) -> EmuComchConnection:
    """The connection behind a ``doca_comch_connection *``."""
    return obj(p, EmuComchConnection, "doca_comch_connection")


def _conn_handle(ep: Endpoint, conn: EmuComchConnection) -> int:
    _extra(ep).conns.add(conn)
    return handle(conn)


def _forget_conn(ep: Endpoint, conn: EmuComchConnection) -> None:
    _extra(ep).conns.discard(conn)
    _conn_ud.pop(id(conn), None)
    forget(conn)


def _forget_ep(ep: Endpoint) -> None:
    e = _ep_extra.pop(id(ep), None)
    if e is not None:
        for conn in list(e.conns):
            _conn_ud.pop(id(conn), None)
            forget(conn)
        for h in e.events.values():
            forget(obj(h, _Event))
    forget_ctx(ep)


@serves("doca_comch_connection_set_user_data")
def _conn_set_ud(p: int | None, ud: int) -> None:
    _conn_ud[id(conn_of(p))] = ud


@serves("doca_comch_connection_get_user_data")
def _conn_get_ud(p: int | None) -> int:
    return _conn_ud.get(id(conn_of(p)), 0)


def _owning(p: int | None, server_side: bool) -> int | None:
    conn = conn_of(p)
    ep = conn.ctx
    if conn.server_side != server_side or not isinstance(ep, Endpoint) or ep.destroyed:
        return None
    return ctx_extra(ep).handle


@serves("doca_comch_server_get_server_ctx")
def _conn_server(p: int | None) -> int | None:
    return _owning(p, True)


@serves("doca_comch_client_get_client_ctx")
def _conn_client(p: int | None) -> int | None:
    return _owning(p, False)


@serves("doca_comch_connection_update_info")
def _conn_update(p: int | None) -> None:
    conn_of(p).update_info()


@serves("doca_comch_connection_get_counter")
def _conn_counter(p: int | None, counter: int, out: int | None) -> None:
    out_u64(out, conn_of(p).get_counter(counter))


# -- capabilities ------------------------------------------------------------------------------------

def _info(p: int | None) -> EmuDevInfo:
    return obj(p, EmuDevInfo, "doca_devinfo")


def u32_cap(name: str, fn: Callable[[EmuDevInfo], int]) -> None:
    """Serve the ``(const doca_devinfo *, uint32_t *)`` capability *name* (both spellings) with *fn*."""
    def get(info: int | None, out: int | None) -> None:
        out_u32(out, fn(_info(info)))
    serves(name)(get)


def supported(name: str, fn: Callable[[EmuDevInfo], bool], what: str) -> None:
    """Serve the ``*_is_supported(const doca_devinfo *)`` capability *name*: SUCCESS or NOT_SUPPORTED."""
    def check(info: int | None) -> None:
        d = _info(info)
        if not fn(d):
            raise DocaNotSupported(f"device {d.pci_addr_str()} cannot run {what}")
    serves(name)(check)


u32_cap("doca_comch_cap_get_max_name_len", emu.cap_get_max_name_len)
u32_cap("doca_comch_cap_get_max_msg_size", emu.cap_get_max_msg_size)
u32_cap("doca_comch_cap_get_max_recv_queue_size", emu.cap_get_max_recv_queue_size)
u32_cap("doca_comch_cap_get_max_clients", emu.cap_get_max_clients)
u32_cap("doca_comch_cap_get_max_send_tasks", emu.cap_get_max_send_tasks)
supported("doca_comch_cap_server_is_supported", emu.cap_server_is_supported,
          "a comch server (servers run on the DPU device)")
supported("doca_comch_cap_client_is_supported", emu.cap_client_is_supported,
          "a comch client (clients run on the host device)")


# -- server and client -------------------------------------------------------------------------------

def _server(p: int | None) -> EmuComchServer:
    return obj(p, EmuComchServer, "doca_comch_server")


def _client(p: int | None) -> EmuComchClient:
    return obj(p, EmuComchClient, "doca_comch_client")


def _status(ep: EmuComchServer, up: bool) -> Callable[[EmuComchConnection, bool], None]:
    """The server's connect or disconnect event: the C callback, if registered; after a disconnect the
    connection's handle goes (DOCA frees the connection once its callback returns)."""
    e = _extra(ep)
    kind = "connect" if up else "disconnect"

    def changed(conn: EmuComchConnection, ok: bool) -> None:
        fn = e.connect if up else e.disconnect
        try:
            if fn is not None:
                fn(e.event(kind), _conn_handle(ep, conn), int(ok))
        finally:
            if not up:
                _forget_conn(ep, conn)

    return changed


@serves("doca_comch_server_create")
def _server_create(dev: int | None, rep: int | None, name: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer")
    s = emu.server_create(obj(dev, EmuDev, "doca_dev"), obj(rep, EmuDevRep, "doca_dev_rep"),
                          read_str(name, "server name"))
    # Always observed: a disconnect ends the connection's handle, whether or not C listens.
    s.set_event_cb("connect", _status(s, True))
    s.set_event_cb("disconnect", _status(s, False))
    out_ptr(out, ctx_extra(s).handle)


@serves("doca_comch_client_create")
def _client_create(dev: int | None, name: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer")
    c = emu.client_create(obj(dev, EmuDev, "doca_dev"), read_str(name, "server name"))
    out_ptr(out, ctx_extra(c).handle)


@serves("doca_comch_server_destroy")
def _server_destroy(p: int | None) -> None:
    s = _server(p)
    s.destroy()
    _forget_ep(s)


@serves("doca_comch_client_destroy")
def _client_destroy(p: int | None) -> None:
    c = _client(p)
    c.destroy()
    _forget_ep(c)


@serves("doca_comch_server_as_ctx")
def _server_as_ctx(p: int | None) -> int:
    return ctx_extra(_server(p)).handle


@serves("doca_comch_client_as_ctx")
def _client_as_ctx(p: int | None) -> int:
    return ctx_extra(_client(p)).handle


def _settings(side: str, get_ep: Callable[[int | None], Endpoint]) -> None:
    def set_max(p: int | None, v: int) -> None:
        get_ep(p).set_max_msg_size(v)

    def get_max(p: int | None, out: int | None) -> None:
        out_u32(out, get_ep(p).get_max_msg_size())

    def set_queue(p: int | None, v: int) -> None:
        get_ep(p).set_recv_queue_size(v)

    def get_queue(p: int | None, out: int | None) -> None:
        out_u32(out, get_ep(p).get_recv_queue_size())

    def get_device(p: int | None, out: int | None) -> None:
        out_ptr(out, handle(get_ep(p).dev))

    serves(f"doca_comch_{side}_set_max_msg_size")(set_max)
    serves(f"doca_comch_{side}_get_max_msg_size")(get_max)
    serves(f"doca_comch_{side}_set_recv_queue_size")(set_queue)
    serves(f"doca_comch_{side}_get_recv_queue_size")(get_queue)
    serves(f"doca_comch_{side}_get_device")(get_device)


_settings("server", _server)
_settings("client", _client)


@serves("doca_comch_server_get_device_rep")
def _server_rep(p: int | None, out: int | None) -> None:
    out_ptr(out, handle(_server(p).rep))


@serves("doca_comch_server_disconnect")
def _server_disconnect(p: int | None, conn: int | None) -> None:
    _server(p).disconnect(conn_of(conn))


@serves("doca_comch_client_get_connection")
def _client_connection(p: int | None, out: int | None) -> None:
    c = _client(p)
    conn = c.get_connection()
    e = _extra(c)
    for old in [o for o in e.conns if o is not conn]:  # an earlier run's: gone with it
        _forget_conn(c, old)
    out_ptr(out, _conn_handle(c, conn))


# -- send task ---------------------------------------------------------------------------------------

def _send_conf(get_ep: Callable[[int | None], Endpoint]) -> Callable[..., None]:
    def set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
        task_set_conf(get_ep(p).send, ok, err, num)
    return set_conf


def _send_alloc(get_ep: Callable[[int | None], Endpoint]) -> Callable[..., None]:
    def alloc_init(p: int | None, conn: int | None, msg: int | None, n: int, out: int | None) -> None:
        ep = get_ep(p)
        c = conn_of(conn)
        if n and not msg:
            raise DocaInvalidValue(f"a message of {n} bytes at NULL")
        data = ctypes.string_at(msg or 0, n) if n else b""  # DOCA copies the message at allocation
        alloc_or_fail(lambda: ep.task_send_alloc_init(c, data), 0, out)
    return alloc_init


serves("doca_comch_server_task_send_set_conf")(_send_conf(_server))
serves("doca_comch_client_task_send_set_conf")(_send_conf(_client))
serves("doca_comch_server_task_send_alloc_init")(_send_alloc(_server))
serves("doca_comch_client_task_send_alloc_init")(_send_alloc(_client))


@serves("doca_comch_task_send_as_task")
def _send_as_task(p: int | None) -> int:
    return handle(obj(p, EmuComchTaskSend, "doca_comch_task_send"))


# -- events ------------------------------------------------------------------------------------------

def _msg_register(get_ep: Callable[[int | None], Endpoint]) -> Callable[..., None]:
    def register(p: int | None, cb: int | None) -> None:
        ep = get_ep(p)
        fn = c_function(MsgRecvFn, cb)
        e = _extra(ep)
        ev = e.event("msg_recv")

        def received(msg: memoryview, conn: EmuComchConnection) -> None:
            n = msg.nbytes
            h = _conn_handle(ep, conn)
            if not n:
                fn(ev, None, 0, h)
            elif msg.readonly:  # C gets a uint8_t *: a writable copy for the call
                keep = ctypes.create_string_buffer(msg.tobytes(), n)
                fn(ev, ctypes.addressof(keep), n, h)
            else:
                # The emulator's receive copy, alive and unmoved until the callback returns; the
                # ctypes view only yields its address (dropped at once: the emulator releases *msg*).
                view = ctypes.c_char.from_buffer(msg)
                addr = ctypes.addressof(view)
                del view
                fn(ev, addr, n, h)

        ep.set_event_cb("msg_recv", received if fn is not None else None)
        e.msg = fn
    return register


def _consumer_register(get_ep: Callable[[int | None], Endpoint]) -> Callable[..., None]:
    def register(p: int | None, new_cb: int | None, expired_cb: int | None) -> None:
        ep = get_ep(p)
        e = _extra(ep)
        for kind, cb in (("new_consumer", new_cb), ("expired_consumer", expired_cb)):
            fn = c_function(ConsumerEventFn, cb)
            ev = e.event(kind)

            def event(conn: EmuComchConnection, cid: int, fn: Any = fn, ev: int = ev) -> None:
                fn(ev, _conn_handle(ep, conn), cid)

            ep.set_event_cb(kind, event if fn is not None else None)
            setattr(e, kind, fn)
    return register


serves("doca_comch_server_event_msg_recv_register")(_msg_register(_server))
serves("doca_comch_client_event_msg_recv_register")(_msg_register(_client))
serves("doca_comch_server_event_consumer_register")(_consumer_register(_server))
serves("doca_comch_client_event_consumer_register")(_consumer_register(_client))


@serves("doca_comch_server_event_connection_status_changed_register")
def _status_register(p: int | None, connect_cb: int | None, disconnect_cb: int | None) -> None:
    s = _server(p)
    s.set_event_cb("connect", s.cbs["connect"])  # checks the ctx is idle, as DOCA does
    e = _extra(s)
    e.connect = c_function(ConnStatusFn, connect_cb)
    e.disconnect = c_function(ConnStatusFn, disconnect_cb)
