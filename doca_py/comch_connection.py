"""``doca_comch_connection``: one client ↔ server link, its counters, and the callback types of the comch events.

Import these names from [`doca_py.comch`][doca_py.comch] (or ``doca_py``); this module is where they live.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ._backend.protocols.comch import ComchConnectionHandle
from ._lifetime import raw_handle
from .types import NamedIntEnum

if TYPE_CHECKING:
    from .comch import ComchClient, ComchServer

__all__ = ["ComchConnection", "ComchCounter", "MsgRecvCallback", "ConnectionStatusCallback", "ConsumerCallback"]


class ComchCounter(NamedIntEnum):
    """``enum doca_comch_counter`` (read with
    [`ComchConnection.get_counter`][doca_py.comch.ComchConnection.get_counter])."""

    SENT_MESSAGES = 1
    """``DOCA_COMCH_COUNTER_SENT_MESSAGES``."""
    SENT_BYTES = 2
    """``DOCA_COMCH_COUNTER_SENT_BYTES``."""
    RECV_MESSAGES = 3
    """``DOCA_COMCH_COUNTER_RECV_MESSAGES``."""
    RECV_BYTES = 4
    """``DOCA_COMCH_COUNTER_RECV_BYTES``."""


#: ``cb(msg, connection)``: a control message; *msg* is valid only during the call.
MsgRecvCallback = Callable[[memoryview, "ComchConnection"], None]
"""``cb(msg, connection)``, as ``doca_comch_event_msg_recv_cb_t``."""
#: ``cb(connection, change_successful)``: a client connected or disconnected (server).
ConnectionStatusCallback = Callable[["ComchConnection", bool], None]
"""``cb(connection, change_successful)``, as ``doca_comch_event_connection_status_changed_cb_t``."""
#: ``cb(connection, remote_consumer_id)``: the peer created or destroyed a consumer.
ConsumerCallback = Callable[["ComchConnection", int], None]
"""``cb(connection, consumer_id)``, as ``doca_comch_event_consumer_cb_t``."""


class ComchConnection:
    """``doca_comch_connection``: one client ↔ server link, owned by its server or client.

    It has [`handle`][doca_py.comch.ComchConnection.handle] but no ``from_handle``: DOCA hands connections out
    in its events, and the server or client keeps the one wrapper per connection (a second one would not get
    the events)."""

    __slots__ = ("_h", "_ctx", "_user_data", "__weakref__")

    @property
    def handle(self) -> object:
        """Python-only: the backend handle (the C address as an ``int`` on the native backend, the backend object on the
        emulated one); see ``DocaObject.handle``."""
        return raw_handle(self._h)

    def __init__(self, handle: ComchConnectionHandle, ctx: ComchServer | ComchClient) -> None:
        self._h = handle
        self._ctx = ctx
        # One name per concept: DOCA's get_user_data/set_user_data, no public attribute.
        self._user_data: Any = None

    def set_user_data(self, user_data: Any) -> None:
        """``doca_comch_connection_set_user_data``: attach any object to the connection."""
        self._user_data = user_data

    def get_user_data(self) -> Any:
        """``doca_comch_connection_get_user_data``: the object set with
        [`set_user_data`][doca_py.comch.ComchConnection.set_user_data] (``None`` until then)."""
        return self._user_data

    def get_server_ctx(self) -> ComchServer | None:
        """``doca_comch_server_get_server_ctx``: the server owning this connection (``None`` on the client side)."""
        return cast("ComchServer", self._ctx) if self._h.is_server_side() else None

    def get_client_ctx(self) -> ComchClient | None:
        """``doca_comch_client_get_client_ctx``: the client owning this connection (``None`` on the server side)."""
        return None if self._h.is_server_side() else cast("ComchClient", self._ctx)

    def get_ctx(self) -> ComchServer | ComchClient:
        """Python-only: the server or client owning this connection."""
        return self._ctx

    def is_connected(self) -> bool:
        """Python-only: whether the link is up (not in DOCA: there it is known from the events)."""
        return self._h.is_connected()

    def update_info(self) -> None:
        """``doca_comch_connection_update_info``: snapshot the counters."""
        self._h.update_info()

    def get_counter(self, counter: ComchCounter) -> int:
        """``doca_comch_connection_get_counter``: one counter as of the last
        [`update_info`][doca_py.comch.ComchConnection.update_info] (control messages only)."""
        return self._h.get_counter(int(counter))

    def __repr__(self) -> str:
        side = "server" if self._h.is_server_side() else "client"
        return f"<ComchConnection {side} {'up' if self._h.is_connected() else 'down'}>"
