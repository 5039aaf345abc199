"""Native ``doca_comch_connection`` (part of :mod:`doca_py.native.comch`).

The plumbing every comch object shares: the library (:func:`cl`), the immediate-data
ABI check, the connection wrappers and the module-level event trampolines. Comch
event callbacks carry no ctx user data: a trampoline finds the wrapper through the
connection user data (the wrapper's registry key), or on first sight through
``doca_comch_server_get_server_ctx`` / ``doca_comch_client_get_client_ctx``, and only
records the event on its server or client.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._backend.protocols.core import DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotConnected, DocaNotSupported, check
from .capi import format_version
from .engine import devinfo_ptr, get_u32
from .capi.comch import (
    IMM_MARKER,
    ComchEventConnectionStatusChangedCb,
    ComchEventConsumerCb,
    ComchEventMsgRecvCb,
    load_comch,
)

if TYPE_CHECKING:
    from .capi._raw import ComchLib
    from .comch import NativeComchEndpoint

__all__ = [
    "NativeComchConnection",
    "has_imm_api",
    "MSG_RECV_CB",
    "CONNECT_CB",
    "DISCONNECT_CB",
    "NEW_CONSUMER_CB",
    "EXPIRED_CONSUMER_CB",
]

_byref = ctypes.byref
RUNNING = 2  # DOCA_CTX_STATE_RUNNING
U32_MAX = 0xFFFFFFFF

keys = itertools.count(1)
#: Live servers and clients by their ``doca_comch_server *`` / ``doca_comch_client *``.
endpoints: dict[int, NativeComchEndpoint] = {}
#: Connection wrappers by registry key (= the connection user data).
conns: dict[int, NativeComchConnection] = {}


def cl() -> ComchLib:
    """The comch functions under their 3.x names (libdoca_comch, or DOCA 2.6's libdoca_cc)."""
    return load_comch()


def has_imm_api(l: ComchLib | None = None) -> bool:
    """Whether the loaded comch library has immediate data (DOCA 3.x producer ABI, §6.2 #15)."""
    return IMM_MARKER not in (l or cl()).missing


def loaded(l: ComchLib) -> str:
    return f"the loaded libdoca_{l.libname} (DOCA {format_version(l.version)})"


def need_imm(what: str) -> DocaNotSupported:
    l = cl()
    return DocaNotSupported(
        f"{what} needs comch immediate data (DOCA 3.0+: doca_comch_producer_task_send_alloc_init with "
        f"imm_data/imm_data_len); {loaded(l)} has none")


def u32(value: int, what: str) -> int:
    v = int(value)
    if not 0 <= v <= U32_MAX:
        raise DocaInvalidValue(f"{what} {v} does not fit the 32-bit C parameter")
    return v


# -- event trampolines ------------------------------------------------------------------------------
def _conn_of(conn_ptr: int) -> NativeComchConnection | None:
    """The wrapper of a connection named by a callback (made on first sight)."""
    l = cl()
    c = conns.get(l.doca_comch_connection_get_user_data(conn_ptr))
    if c is not None and c.ptr == conn_ptr:
        return c
    ep_ptr = l.doca_comch_server_get_server_ctx(conn_ptr) or l.doca_comch_client_get_client_ctx(conn_ptr)
    ep = endpoints.get(ep_ptr) if ep_ptr else None
    # Not ours (user data differs): a new connection, maybe at a recycled address.
    return None if ep is None else ep.conn_for(conn_ptr, fresh=True)


def _on_msg(event: int | None, buf: int | None, length: int, conn_ptr: int | None) -> None:
    c = _conn_of(conn_ptr) if conn_ptr else None
    if c is not None:
        # DOCA's buffer is valid only during this call: copy now.
        data = ctypes.string_at(buf, length) if buf and length else b""
        c.ep.pending.append((c, ("msg_recv", data)))


def _status_event(connect: bool) -> Callable[[int | None, int | None, int], None]:
    def trampoline(event: int | None, conn_ptr: int | None, ok: int) -> None:
        c = _conn_of(conn_ptr) if conn_ptr else None
        if c is not None:
            c.connected = connect and bool(ok)
            c.ep.pending.append((c, ("connect" if connect else "disconnect", bool(ok))))

    return trampoline


def _consumer_event(kind: str) -> Callable[[int | None, int | None, int], None]:
    def trampoline(event: int | None, conn_ptr: int | None, consumer_id: int) -> None:
        c = _conn_of(conn_ptr) if conn_ptr else None
        if c is not None:
            c.ep.pending.append((c, (kind, consumer_id)))

    return trampoline


#: Registered by ``set_event_cb``; kept alive for the process.
MSG_RECV_CB = ComchEventMsgRecvCb(_on_msg)
CONNECT_CB = ComchEventConnectionStatusChangedCb(_status_event(True))
DISCONNECT_CB = ComchEventConnectionStatusChangedCb(_status_event(False))
NEW_CONSUMER_CB = ComchEventConsumerCb(_consumer_event("new_consumer"))
EXPIRED_CONSUMER_CB = ComchEventConsumerCb(_consumer_event("expired_consumer"))


# -- connections ------------------------------------------------------------------------------------
class NativeComchConnection:
    """A ``doca_comch_connection *`` of one :class:`NativeComchEndpoint`."""

    __slots__ = ("ep", "ptr", "owner", "key", "connected")

    def __init__(self, ep: NativeComchEndpoint, ptr: int) -> None:
        self.ep = ep
        self.ptr = ptr
        #: The public ComchConnection.
        self.owner: object = None
        #: Registry key, stored as the connection user data.
        self.key = next(keys)
        #: Up until a disconnect event (server side) or the client's stop.
        self.connected = True
        conns[self.key] = self
        check(cl().doca_comch_connection_set_user_data(ptr, self.key), "doca_comch_connection_set_user_data")

    def _p(self, what: str) -> int:
        if not self.connected:
            raise DocaNotConnected(f"{what}: the comch connection is closed")
        return self.ptr

    def is_server_side(self) -> bool:
        return self.ep.server_side

    def is_connected(self) -> bool:
        if not self.connected:
            return False
        return self.ep.server_side or self.ep.get_state() == RUNNING

    def update_info(self) -> None:
        check(cl().doca_comch_connection_update_info(self._p("doca_comch_connection_update_info")),
              "doca_comch_connection_update_info")

    def get_counter(self, counter: int) -> int:
        if not 1 <= counter <= 4:
            raise DocaInvalidValue(f"unknown doca_comch_counter {counter}")
        v = ctypes.c_uint64()
        check(cl().doca_comch_connection_get_counter(self._p("doca_comch_connection_get_counter"), counter,
                                                      _byref(v)), "doca_comch_connection_get_counter")
        return v.value

    def forget(self) -> None:
        """The C connection is gone (ctx stopped or destroyed): drop it from the registry."""
        self.connected = False
        conns.pop(self.key, None)

    def __repr__(self) -> str:
        side = "server" if self.ep.server_side else "client"
        return f"<NativeComchConnection {side} {self.ptr:#x} {'up' if self.connected else 'down'}>"


# -- capabilities -----------------------------------------------------------------------------------
def u32_cap(name: str, devinfo: DevInfoHandle) -> int:
    """A ``(devinfo, uint32_t *)`` capability getter, by C name."""
    return get_u32(getattr(cl(), name), devinfo_ptr(devinfo))


def u32_cap_or(name: str, devinfo: DevInfoHandle, older: int) -> int:
    """A capability DOCA 2.6 lacks: *older* (what 2.6 implies) when the symbol is absent."""
    fn = getattr(cl(), name)
    return get_u32(fn, devinfo_ptr(devinfo)) if fn else older
