"""``doca_rdma_connection`` and ``doca_rdma_addr``: the peers of an [`Rdma`][doca_py.rdma.Rdma] context.

Import these names from [`doca_py.rdma`][doca_py.rdma] (or ``doca_py``); this module is where they live.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._backend.protocols.rdma import RdmaConnectionHandle
from ._lifetime import DocaObject, raw_handle
from .errors import DocaInvalidValue
from .types import NamedIntEnum

if TYPE_CHECKING:
    from .rdma import Rdma

__all__ = ["RdmaConnection", "RdmaAddr", "RdmaAddrType", "ConnectionRequestCallback", "ConnectionCallback"]


class RdmaAddrType(NamedIntEnum):
    """``enum doca_rdma_addr_type`` (RDMA-CM addresses)."""

    IPv4 = 0
    """``DOCA_RDMA_ADDR_TYPE_IPV4``."""
    IPv6 = 1
    """``DOCA_RDMA_ADDR_TYPE_IPV6``."""
    GID = 2
    """``DOCA_RDMA_ADDR_TYPE_GID``."""


#: ``cb(connection, ctx_user_data)``: a CM connection request (server); accept or reject inside.
ConnectionRequestCallback = Callable[["RdmaConnection", Any], None]
"""``cb(connection, ctx_user_data)``, as ``doca_rdma_connection_request_cb_t``."""
#: ``cb(connection, connection_user_data, ctx_user_data)``: established, failure or disconnection.
ConnectionCallback = Callable[["RdmaConnection", Any, Any], None]
"""``cb(connection, ctx_user_data)``, as the established/failure/disconnect callbacks of
``doca_rdma_set_connection_state_callbacks``.
"""


class RdmaAddr(DocaObject):
    """``doca_rdma_addr``: where an RDMA-CM server listens (IPv4, IPv6 or GID string + port)."""

    def __init__(self, addr_type: RdmaAddrType, address: str, port: int) -> None:
        super().__init__()
        t = RdmaAddrType(addr_type)
        if not 0 <= port <= 0xFFFF:
            raise DocaInvalidValue(f"port {port} is not a 16-bit port number")
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            raise DocaInvalidValue(f"{address!r} is not an {t.name} address") from None
        if (t is RdmaAddrType.IPv4) != (ip.version == 4):
            raise DocaInvalidValue(f"{address!r} is not an {t.name} address")
        # One name per concept: read them with DOCA's get_params, no public attributes.
        self._params = (t, address, port)

    def get_params(self) -> tuple[RdmaAddrType, str, int]:
        """``doca_rdma_addr_get_params``: (type, address string, port)."""
        return self._params

    def __repr__(self) -> str:
        t, address, port = self._params
        return f"RdmaAddr({t.name}, {address!r}, {port})"


class RdmaConnection:
    """``doca_rdma_connection``: one peer of an [`Rdma`][doca_py.rdma.Rdma] context (owned by it).

    It has [`handle`][doca_py.rdma_connection.RdmaConnection.handle] but no ``from_handle``: DOCA hands
    connections out (``doca_rdma_export``, the connection callbacks), and the ctx keeps the one wrapper per
    connection that its callbacks receive."""

    __slots__ = ("_h", "_rdma", "_user_data", "__weakref__")

    @property
    def handle(self) -> object:
        """Python-only: the backend handle (the C address as an ``int`` on the native backend, the backend object on the
        emulated one); see ``DocaObject.handle``."""
        return raw_handle(self._h)

    def __init__(self, handle: RdmaConnectionHandle, rdma: Rdma, user_data: Any = None) -> None:
        self._h = handle
        self._rdma = rdma
        # One name per concept: DOCA's get_user_data/set_user_data, no public attribute.
        self._user_data: Any = user_data

    def get_id(self) -> int:
        """``doca_rdma_connection_get_id``: the connection's number inside its ctx."""
        return int(self._h.get_id())

    def set_user_data(self, user_data: Any) -> None:
        """``doca_rdma_connection_set_user_data``: the object handed to this connection's
        established/failure/disconnection callbacks as ``conn_user_data``."""
        self._user_data = user_data

    def get_user_data(self) -> Any:
        """``doca_rdma_connection_get_user_data``: the object set with
        [`set_user_data`][doca_py.rdma_connection.RdmaConnection.set_user_data] (``None`` until then)."""
        return self._user_data

    def accept(self, private_data: bytes | None = None) -> None:
        """``doca_rdma_connection_accept``: accept a CM connection request (call from the request callback or later)."""
        self._h.accept(None if private_data is None else bytes(private_data))

    def reject(self) -> None:
        """``doca_rdma_connection_reject``: reject a CM connection request."""
        self._h.reject()

    def disconnect(self) -> None:
        """``doca_rdma_connection_disconnect``: tear the connection down (the peer gets its disconnection
        callback) and release its slot of ``max_num_connections``.

        A connection that failed (its peer left, its tasks failed) keeps its slot until disconnected, as
        in DOCA, whose samples disconnect from the disconnection callback; disconnecting it only releases
        the slot. See "Reconnecting after a failure" in the RDMA guide.

        :raises DocaBadState: when the connection was released already (disconnected before, or its ctx
            stopped since: a stop releases every connection).
        """
        self._h.disconnect()

    def get_addr(self) -> RdmaAddr | None:
        """``doca_rdma_connection_get_addr``: the peer's address for a CM connection (``None`` for export/connect)."""
        a = self._h.get_addr()
        return None if a is None else RdmaAddr(RdmaAddrType(a[0]), a[1], a[2])

    @property
    def rdma(self) -> Rdma:
        """Python-only: the [`Rdma`][doca_py.rdma.Rdma] context of the connection."""
        return self._rdma

    def __repr__(self) -> str:
        return f"<RdmaConnection {self.get_id()}>"
