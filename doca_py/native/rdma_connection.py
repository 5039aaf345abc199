"""Native ``doca_rdma_connection`` (part of :mod:`doca_py.native.rdma`).

The connection wrappers, the module-level connection-state trampolines and the
helpers that tell the 3.x connection ABI from DOCA 2.6's single implicit
connection (§6.2). The trampolines find their rdma ctx through its ctx user data
(the registry key of :data:`rdmas`) and only record ``(connection, event)`` on it;
:meth:`doca_py.native.rdma.NativeRdma.dispatch` runs the Python callback later.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import DocaBadState, DocaInvalidValue, DocaNotSupported, check
from .capi import format_version
from .capi.rdma import CONNECTION_MARKER, load_rdma, RdmaConnectionEventCb, RdmaConnectionRequestCb

if TYPE_CHECKING:
    from .capi._raw import RdmaLib
    from .rdma import NativeRdma

__all__ = [
    "NativeRdmaConnection",
    "has_connection_api",
    "EV_REQUEST",
    "EV_ESTABLISHED",
    "EV_FAILURE",
    "EV_DISCONNECTION",
    "CONN_REQUEST_CB",
    "CONN_ESTABLISHED_CB",
    "CONN_FAILURE_CB",
    "CONN_DISCONNECTION_CB",
]

_byref = ctypes.byref

#: Connection events, in the order of ``doca_rdma_set_connection_state_callbacks`` (as :mod:`doca_py.rdma`).
EV_REQUEST, EV_ESTABLISHED, EV_FAILURE, EV_DISCONNECTION = 0, 1, 2, 3

keys = itertools.count(1)
#: Live rdma ctxs by ctx registry key (= their ctx user data), for the connection trampolines.
rdmas: dict[int, NativeRdma] = {}


def rd() -> RdmaLib:
    """The bound libdoca_rdma (opened on first use)."""
    return load_rdma()


def has_connection_api(l: RdmaLib | None = None) -> bool:
    """Whether the loaded libdoca_rdma has connection objects (DOCA 3.x ABI, §6.2)."""
    return CONNECTION_MARKER not in (l or rd()).missing


def need_connections(what: str) -> DocaNotSupported:
    """The error for something DOCA 2.6's single implicit connection cannot do."""
    return DocaNotSupported(
        f"{what} needs DOCA RDMA connection objects (DOCA 3.0+); the loaded DOCA {format_version(rd().version)} "
        "has one implicit connection per rdma ctx (doca_rdma_export/doca_rdma_connect without a connection)")


# -- connection callbacks -----------------------------------------------------------------------
def _on_request(conn_ptr: int | None, ctx_ud: int) -> None:
    r = rdmas.get(ctx_ud)
    if r is not None and conn_ptr:
        r.pending.append((r.conn_for(conn_ptr), EV_REQUEST))


def _conn_event(kind: int) -> Callable[[int | None, int, int], None]:
    def trampoline(conn_ptr: int | None, conn_ud: int, ctx_ud: int) -> None:
        r = rdmas.get(ctx_ud)
        if r is not None and conn_ptr:
            r.pending.append((r.conn_for(conn_ptr, conn_ud), kind))

    return trampoline


#: Registered by ``set_connection_state_cb``; kept alive for the process.
CONN_REQUEST_CB = RdmaConnectionRequestCb(_on_request)
CONN_ESTABLISHED_CB = RdmaConnectionEventCb(_conn_event(EV_ESTABLISHED))
CONN_FAILURE_CB = RdmaConnectionEventCb(_conn_event(EV_FAILURE))
CONN_DISCONNECTION_CB = RdmaConnectionEventCb(_conn_event(EV_DISCONNECTION))


def _addr_params(addr: int) -> tuple[int, str, int]:
    t, text, port = ctypes.c_int(), ctypes.c_char_p(), ctypes.c_uint16()
    check(rd().doca_rdma_addr_get_params(addr, _byref(t), _byref(text), _byref(port)), "doca_rdma_addr_get_params")
    return t.value, (text.value or b"").decode(), port.value


class NativeRdmaConnection:
    """A ``doca_rdma_connection *`` of one :class:`~doca_py.native.rdma.NativeRdma`.

    ``ptr`` is ``None`` for DOCA 2.6's implicit connection and, until its
    established or failure callback, for a connection requested with
    :meth:`~doca_py.native.rdma.NativeRdma.connect_to_addr`.
    """

    __slots__ = ("rdma", "ptr", "owner", "key", "implicit")

    def __init__(self, rdma: NativeRdma, ptr: int | None, *, implicit: bool = False) -> None:
        self.rdma = rdma
        self.ptr = ptr
        #: The public RdmaConnection.
        self.owner: object = None
        #: Passed as the connection user data of connect_to_addr.
        self.key = next(keys)
        self.implicit = implicit

    def _p(self, what: str) -> int:
        if self.ptr is None:
            if self.implicit:
                raise need_connections(what)
            raise DocaBadState(f"{what}: the connection is not established yet (connect_to_addr is pending)")
        return self.ptr

    def get_id(self) -> int:
        if self.implicit:
            return 0
        v = ctypes.c_uint32()
        check(rd().doca_rdma_connection_get_id(self._p("doca_rdma_connection_get_id"), _byref(v)),
              "doca_rdma_connection_get_id")
        return v.value

    def accept(self, private_data: bytes | None) -> None:
        data = b"" if private_data is None else bytes(private_data)
        if len(data) > 0xFF:
            raise DocaInvalidValue("private data is at most 255 bytes")
        buf = ctypes.create_string_buffer(data, len(data)) if data else None
        check(rd().doca_rdma_connection_accept(self._p("doca_rdma_connection_accept"), buf, len(data)),
              "doca_rdma_connection_accept")

    def reject(self) -> None:
        check(rd().doca_rdma_connection_reject(self._p("doca_rdma_connection_reject")), "doca_rdma_connection_reject")

    def disconnect(self) -> None:
        check(rd().doca_rdma_connection_disconnect(self._p("doca_rdma_connection_disconnect")),
              "doca_rdma_connection_disconnect")

    def get_addr(self) -> tuple[int, str, int] | None:
        """``(addr_type, address, port)`` of an RDMA-CM connection; ``None`` otherwise
        (export/connect connections, DOCA 2.6, or DOCA reporting no address)."""
        l = rd()
        if self.ptr is None or not l.has("doca_rdma_connection_get_addr"):
            return None
        addr = ctypes.c_void_p()
        if l.doca_rdma_connection_get_addr(self.ptr, _byref(addr)) != 0 or not addr.value:
            return None
        return _addr_params(addr.value)

    def __repr__(self) -> str:
        what = "implicit" if self.implicit else (hex(self.ptr) if self.ptr else "pending")
        return f"<NativeRdmaConnection {what}>"
