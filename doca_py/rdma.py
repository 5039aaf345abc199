"""``doca_rdma``: RDMA send/receive, read/write and atomics between two contexts (DOCA 3.x API).

Export/connect (the storage applications' flow):

```python
rdma = Rdma(dev); pe.connect_ctx(rdma)
rdma.set_permissions(AccessFlag.LOCAL_READ_WRITE | AccessFlag.RDMA_READ | AccessFlag.RDMA_WRITE)
rdma.task_send_set_conf(on_sent, on_error, 16); rdma.task_receive_set_conf(on_recv, on_error, 16)
rdma.start()                              # STARTING
blob, conn = rdma.export()                # send blob to the peer out of band
rdma.connect(peer_blob, conn)
# ... progress() until RUNNING (3.x: with or without a connection; 2.6: after connect)
rdma.task_send_allocate_init(conn, src).submit()   # waits for the peer if it has not connected yet
```

DOCA 3.x samples export and connect from the RUNNING state callback instead, and
submit right after ``connect``.

RDMA-CM flow: the server calls [`Rdma.start_listen_to_port`][doca_py.rdma.Rdma.start_listen_to_port] and accepts
requests from its connection-request callback
([`RdmaConnection.accept`][doca_py.rdma.RdmaConnection.accept]); the client calls [`Rdma.connect_to_addr`][doca_py.rdma.Rdma.connect_to_addr].
Both learn the outcome through the callbacks of
[`Rdma.set_connection_state_callbacks`][doca_py.rdma.Rdma.set_connection_state_callbacks].

Remote buffers (the remote side of read, write and atomics) are buffers of an
mmap made with [`Mmap.create_from_export`][doca_py.mmap.Mmap.create_from_export] from the peer's
``Mmap.export_rdma`` blob. Immediate data is the 32-bit ``doca_be32_t`` value as
an integer, passed through unchanged.
"""

from __future__ import annotations

from typing import Any, cast

from ._args import expect, wrong_type
from ._backend import backend
from ._backend.protocols.rdma import RdmaConnectionHandle, RdmaHandle
from .ctx import Ctx
from .dev import Dev, DevInfo, devinfo_handle
from .errors import DocaInvalidValue
from .rdma_connection import (
    ConnectionCallback,
    ConnectionRequestCallback,
    RdmaAddr,
    RdmaAddrType,
    RdmaConnection,
)
from .rdma_options import RdmaOptions, RdmaTransportType
from .rdma_sync_event import (
    RdmaSyncEventTasks,
    RdmaTaskRemoteNetSyncEventGet,
    RdmaTaskRemoteNetSyncEventNotifyAdd,
    RdmaTaskRemoteNetSyncEventNotifySet,
)
from .rdma_tasks import (
    RdmaOpcode,
    RdmaTaskAtomicCmpSwp,
    RdmaTaskAtomicFetchAdd,
    RdmaTaskRead,
    RdmaTaskReceive,
    RdmaTaskSend,
    RdmaTaskSendImm,
    RdmaTaskWrite,
    RdmaTaskWriteImm,
    RdmaTransferTasks,
)
from .types import AccessFlag, CtxState, MtuSize
from .version import version_info_runtime

__all__ = [
    "Rdma", "RdmaOptions", "RdmaConnection", "RdmaAddr", "RdmaTransportType", "RdmaAddrType", "RdmaOpcode",
    "RdmaTaskReceive", "RdmaTaskSend", "RdmaTaskSendImm", "RdmaTaskRead", "RdmaTaskWrite", "RdmaTaskWriteImm",
    "RdmaTaskAtomicCmpSwp", "RdmaTaskAtomicFetchAdd", "RdmaTaskRemoteNetSyncEventGet",
    "RdmaTaskRemoteNetSyncEventNotifySet", "RdmaTaskRemoteNetSyncEventNotifyAdd",
    "ConnectionRequestCallback", "ConnectionCallback",
]


# Backend connection events, in the order of set_connection_state_callbacks.
_EV_REQUEST, _EV_ESTABLISHED, _EV_FAILURE, _EV_DISCONNECTION = 0, 1, 2, 3


# -- the context ------------------------------------------------------------------------------------


class Rdma(Ctx, RdmaTransferTasks, RdmaSyncEventTasks):
    """``doca_rdma`` context on *dev*, configured with *options* if given (see
    [`configure`][doca_py.rdma.Rdma.configure]).

    Configure before [`start`][doca_py.ctx.Ctx.start] (IDLE). ``start`` leaves the ctx STARTING; it goes
    RUNNING from [`Pe.progress`][doca_py.pe.Pe.progress]: DOCA 3.x without any connection (RUNNING means
    "ready to export and connect", not "connected"), DOCA 2.6 once [`connect`][doca_py.rdma.Rdma.connect] was
    called. [`export`][doca_py.rdma.Rdma.export] and [`connect`][doca_py.rdma.Rdma.connect] work while STARTING or RUNNING.
    """

    @classmethod
    def from_handle(cls, dev: Dev, handle: RdmaHandle | int, user_data: Any = None) -> Rdma:
        """Python-only: wrap an existing ``doca_rdma`` on *dev* without taking ownership (it keeps its state,
        configuration and Pe; connect this wrapper to that Pe's wrapper with ``Pe.connect_ctx`` only if it is not
        connected).

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_rdma`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        c = cls(dev, user_data, _handle=backend.borrow_rdma(handle) if isinstance(handle, int) else handle)
        c._borrow()
        return c

    def __init__(self, dev: Dev, user_data: Any = None, *, options: RdmaOptions | None = None,
                 _handle: RdmaHandle | None = None) -> None:
        expect("Rdma", Dev, dev=dev)
        dev._check_open()
        self._h: RdmaHandle = backend.rdma.rdma_create(dev._h) if _handle is None else _handle
        super().__init__(self._h, user_data)
        dev._adopt(self)
        self._dev = dev
        self._conn_cbs: tuple[ConnectionRequestCallback | None, ConnectionCallback | None,
                              ConnectionCallback | None, ConnectionCallback | None] = (None, None, None, None)
        if options is not None:
            self.configure(options)

    def _wait_hint(self, target: CtxState, state: CtxState) -> str:
        if target is CtxState.RUNNING and state is CtxState.STARTING:
            if version_info_runtime() < (3, 0):
                return ("DOCA 2.6 moves an Rdma ctx to RUNNING only once connect() (or connect_to_addr) was "
                        "called: export() and connect() while it is STARTING")
            return "an Rdma ctx goes RUNNING from Pe.progress() (DOCA 3.x: without any connection)"
        return super()._wait_hint(target, state)

    def configure(self, options: RdmaOptions) -> None:
        """Python-only: apply every setting of *options* that is not ``None``, in field order, through the DOCA-named
        setters (``set_permissions`` …); the first refused value raises (the ones before it stay set).

        :raises DocaBadState: when the ctx is not IDLE.
        :raises DocaInvalidValue: for a value the setter refuses.
        """
        o = options
        if o.permissions is not None:
            self.set_permissions(o.permissions)
        if o.transport_type is not None:
            self.set_transport_type(o.transport_type)
        if o.gid_index is not None:
            self.set_gid_index(o.gid_index)
        if o.max_num_connections is not None:
            self.set_max_num_connections(o.max_num_connections)
        if o.mtu is not None:
            self.set_mtu(o.mtu)
        if o.recv_queue_size is not None:
            self.set_recv_queue_size(o.recv_queue_size)
        if o.send_queue_size is not None:
            self.set_send_queue_size(o.send_queue_size)
        if o.max_send_buf_list_len is not None:
            self.set_max_send_buf_list_len(o.max_send_buf_list_len)
        if o.receive_dst_buf_list_len is not None:
            self.task_receive_set_dst_buf_list_len(o.receive_dst_buf_list_len)
        if o.grh_enabled is not None:
            self.set_grh_enabled(o.grh_enabled)
        if o.sl is not None:
            self.set_sl(o.sl)
        if o.rnr_retry_count is not None:
            self.set_rnr_retry_count(o.rnr_retry_count)
        if o.connection_request_timeout is not None:
            self.set_connection_request_timeout(o.connection_request_timeout)

    # -- configuration (IDLE) ----------------------------------------------------------------
    def set_permissions(self, flags: AccessFlag | int) -> None:
        """``doca_rdma_set_permissions``: remote access this ctx grants its peers
        (``RDMA_READ``/``RDMA_WRITE``/``RDMA_ATOMIC``, plus ``LOCAL_*``); ``PCI_*`` flags are ``DocaInvalidValue``."""
        self._h.set_permissions(int(flags))

    def get_permissions(self) -> AccessFlag:
        """``doca_rdma_get_permissions``: the permissions."""
        return AccessFlag(self._h.get_permissions())

    def set_transport_type(self, transport: RdmaTransportType) -> None:
        """``doca_rdma_set_transport_type``: set the transport type to *transport*."""
        self._h.set_transport_type(int(transport))

    def get_transport_type(self) -> RdmaTransportType:
        """``doca_rdma_get_transport_type``: the transport type."""
        return RdmaTransportType(self._h.get_transport_type())

    def set_gid_index(self, index: int) -> None:
        """``doca_rdma_set_gid_index``: set the gid index to *index*."""
        self._h.set_gid_index(index)

    def get_gid_index(self) -> int:
        """``doca_rdma_get_gid_index``: the gid index."""
        return self._h.get_gid_index()

    def set_max_num_connections(self, n: int) -> None:
        """``doca_rdma_set_max_num_connections``: how many connections (exports or CM) this ctx may hold (default 1)."""
        self._h.set_max_num_connections(n)

    def get_max_num_connections(self) -> int:
        """``doca_rdma_get_max_num_connections``: the max num connections."""
        return self._h.get_max_num_connections()

    def set_mtu(self, mtu: MtuSize) -> None:
        """``doca_rdma_set_mtu``: set the mtu to *mtu*."""
        self._h.set_mtu(int(mtu))

    def get_mtu(self) -> MtuSize:
        """``doca_rdma_get_mtu``: the mtu."""
        return MtuSize(self._h.get_mtu())

    def set_recv_queue_size(self, n: int) -> None:
        """``doca_rdma_set_recv_queue_size``: receive queue depth (rounded up to a power of two)."""
        self._h.set_recv_queue_size(n)

    def get_recv_queue_size(self) -> int:
        """``doca_rdma_get_recv_queue_size``: the recv queue size."""
        return self._h.get_recv_queue_size()

    def set_send_queue_size(self, n: int) -> None:
        """``doca_rdma_set_send_queue_size``: send queue depth (rounded up to a power of two)."""
        self._h.set_send_queue_size(n)

    def get_send_queue_size(self) -> int:
        """``doca_rdma_get_send_queue_size``: the send queue size."""
        return self._h.get_send_queue_size()

    def set_max_send_buf_list_len(self, n: int) -> None:
        """``doca_rdma_set_max_send_buf_list_len``: longest chained local buffer list of send, write and read tasks
        (default 1)."""
        self._h.set_max_send_buf_list_len(n)

    def get_max_send_buf_list_len(self) -> int:
        """``doca_rdma_get_max_send_buf_list_len``: the max send buf list len."""
        return self._h.get_max_send_buf_list_len()

    def task_receive_set_dst_buf_list_len(self, n: int) -> None:
        """``doca_rdma_task_receive_set_dst_buf_list_len``: longest chained destination list of receive tasks (default
        1)."""
        self._h.set_receive_dst_buf_list_len(n)

    def task_receive_get_dst_buf_list_len(self) -> int:
        """``doca_rdma_task_receive_get_dst_buf_list_len``."""
        return self._h.get_receive_dst_buf_list_len()

    def set_grh_enabled(self, enabled: bool) -> None:
        """``doca_rdma_set_grh_enabled``: set the grh enabled to *enabled*."""
        self._h.set_grh_enabled(bool(enabled))

    def get_grh_enabled(self) -> bool:
        """``doca_rdma_get_grh_enabled``: the grh enabled."""
        return bool(self._h.get_grh_enabled())

    def set_sl(self, sl: int) -> None:
        """``doca_rdma_set_sl``: set the sl to *sl*."""
        self._h.set_sl(sl)

    def get_sl(self) -> int:
        """``doca_rdma_get_sl``: the sl."""
        return self._h.get_sl()

    def set_rnr_retry_count(self, count: int) -> None:
        """``doca_rdma_set_rnr_retry_count``: receiver-not-ready retries (0–7): how long a send waits for a posted
        receive."""
        self._h.set_rnr_retry_count(count)

    def get_rnr_retry_count(self) -> int:
        """``doca_rdma_get_rnr_retry_count``: the rnr retry count."""
        return self._h.get_rnr_retry_count()

    def set_connection_request_timeout(self, timeout_ms: int) -> None:
        """``doca_rdma_set_connection_request_timeout``: how long
        [`connect_to_addr`][doca_py.rdma.Rdma.connect_to_addr] waits for the server (milliseconds)."""
        self._h.set_connection_request_timeout(timeout_ms)

    def get_connection_request_timeout(self) -> int:
        """``doca_rdma_get_connection_request_timeout``: the connection request timeout."""
        return self._h.get_connection_request_timeout()

    def set_connection_state_callbacks(self, request: ConnectionRequestCallback | None,
                                       established: ConnectionCallback | None,
                                       failure: ConnectionCallback | None,
                                       disconnection: ConnectionCallback | None) -> None:
        """``doca_rdma_set_connection_state_callbacks``: register the connection callbacks (run inside ``Pe.progress``).

        ``request(conn, ctx_user_data)`` (CM server: accept or reject; ``None`` accepts
        every request); ``established/failure/disconnection(conn, conn_user_data,
        ctx_user_data)``.
        """
        self._check_open()
        self._conn_cbs = (request, established, failure, disconnection)
        self._h.set_connection_state_cb(self._on_conn_event)

    def _conn(self, h: RdmaConnectionHandle, user_data: Any = None) -> RdmaConnection:
        c = cast("RdmaConnection | None", h.owner)
        if c is None:
            c = RdmaConnection(h, self, user_data)
            h.owner = c
        return c

    def _on_conn_event(self, kind: int, h: RdmaConnectionHandle) -> None:
        conn = self._conn(h)
        request, established, failure, disconnection = self._conn_cbs
        if kind == _EV_REQUEST:
            if request is None:
                conn.accept()
            else:
                request(conn, self.user_data)
            return
        cb = (None, established, failure, disconnection)[kind]
        if cb is not None:
            cb(conn, conn._user_data, self.user_data)

    # -- connections (after start) ------------------------------------------------------------
    def export(self) -> tuple[bytes, RdmaConnection]:
        """``doca_rdma_export``: a new connection and the blob describing it to the peer.

        :raises DocaFull: when ``max_num_connections`` connections are held. A failed connection holds its
            slot until [`RdmaConnection.disconnect`][doca_py.rdma_connection.RdmaConnection.disconnect]
            releases it (a stop releases every connection); the message says when one does.
        """
        self._check_open()
        blob, h = self._h.export()
        return bytes(blob), self._conn(h)

    def connect(self, peer_blob: bytes, connection: RdmaConnection) -> None:
        """``doca_rdma_connect``: join *connection* to the peer's exported connection.

        Tasks on the connection may be submitted right after: they wait until the peer
        has connected too. A malformed, truncated, forged or replayed blob raises
        ``DocaConnectionAborted``; a second connect of one connection ``DocaBadState``; a blob that is not
        bytes-like ``DocaTypeError``. Like ``doca_rdma_connect``, which only sets up the local side, it
        succeeds when the peer stopped, restarted or released its connection since it exported the blob:
        the connection then fails (failure callback; its tasks fail with ``CONNECTION_RESET``).
        """
        self._check_open()
        expect("Rdma.connect", (bytes, bytearray, memoryview), peer_blob=peer_blob)
        if not isinstance(connection, RdmaConnection):
            raise wrong_type("Rdma.connect", RdmaConnection, connection=connection)
        if connection._rdma is not self:
            raise DocaInvalidValue("the connection was not exported by this Rdma")
        self._h.connect(bytes(peer_blob), connection._h)

    def start_listen_to_port(self, port: int) -> int:
        """``doca_rdma_start_listen_to_port``: RDMA-CM server: listen on *port*; returns the port (useful with 0 =
        any, emulated)."""
        self._check_open()
        return self._h.start_listen_to_port(port)

    def stop_listen_to_port(self, port: int) -> None:
        """``doca_rdma_stop_listen_to_port``."""
        self._h.stop_listen_to_port(port)

    def connect_to_addr(self, addr: RdmaAddr, user_data: Any = None) -> RdmaConnection:
        """``doca_rdma_connect_to_addr``: RDMA-CM client: request a connection from a listening server.

        The outcome arrives through the established or failure callback, with
        *user_data* as the connection user data.
        """
        self._check_open()
        if not isinstance(addr, RdmaAddr):
            raise wrong_type("Rdma.connect_to_addr", RdmaAddr, addr=addr)
        addr_type, address, port = addr.get_params()
        h = self._h.connect_to_addr(int(addr_type), address, port)
        c = self._conn(h, user_data)
        c.set_user_data(user_data)
        return c

    # -- capabilities -----------------------------------------------------------------------
    @staticmethod
    def cap_get_max_recv_queue_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_recv_queue_size``: the largest recv queue size *devinfo* supports."""
        return backend.rdma.cap_get_max_recv_queue_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_send_queue_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_send_queue_size``: the largest send queue size *devinfo* supports."""
        return backend.rdma.cap_get_max_send_queue_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_send_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_send_buf_list_len``: the largest send buf list len *devinfo* supports."""
        return backend.rdma.cap_get_max_send_buf_list_len(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_message_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_message_size``: the largest message size *devinfo* supports."""
        return backend.rdma.cap_get_max_message_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_gid_table_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_gid_table_size``: the get gid table size *devinfo* supports."""
        return backend.rdma.cap_get_gid_table_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_gid(devinfo: DevInfo, start_index: int, num_entries: int) -> list[bytes]:
        """``doca_rdma_cap_get_gid``: ``num_entries`` 16-byte GIDs from *start_index*."""
        return backend.rdma.cap_get_gid(devinfo_handle(devinfo), start_index, num_entries)

    @staticmethod
    def cap_transport_type_is_supported(devinfo: DevInfo, transport: RdmaTransportType) -> bool:
        """``doca_rdma_cap_transport_type_is_supported``: whether *devinfo* supports transport type."""
        return backend.rdma.cap_transport_type_is_supported(devinfo_handle(devinfo), int(transport))

    @staticmethod
    def cap_task_receive_get_max_dst_buf_list_len(devinfo: DevInfo, transport: RdmaTransportType) -> int:
        """``doca_rdma_cap_task_receive_get_max_dst_buf_list_len``: the largest dst buf list len *devinfo*
        supports.
        """
        return backend.rdma.cap_task_receive_get_max_dst_buf_list_len(devinfo_handle(devinfo), int(transport))

    @staticmethod
    def cap_task_receive_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_receive_is_supported``: whether *devinfo* supports task receive."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "receive")

    @staticmethod
    def cap_task_send_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_send_is_supported``: whether *devinfo* supports task send."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "send")

    @staticmethod
    def cap_task_send_imm_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_send_imm_is_supported``: whether *devinfo* supports task send imm."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "send_imm")

    @staticmethod
    def cap_task_read_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_read_is_supported``: whether *devinfo* supports task read."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "read")

    @staticmethod
    def cap_task_write_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_write_is_supported``: whether *devinfo* supports task write."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "write")

    @staticmethod
    def cap_task_write_imm_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_write_imm_is_supported``: whether *devinfo* supports task write imm."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "write_imm")

    @staticmethod
    def cap_task_atomic_cmp_swp_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_atomic_cmp_swp_is_supported``: whether *devinfo* supports task atomic cmp swp."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "atomic_cmp_swp")

    @staticmethod
    def cap_task_atomic_fetch_add_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_atomic_fetch_add_is_supported``: whether *devinfo* supports task atomic fetch add."""
        return backend.rdma.cap_task_is_supported(devinfo_handle(devinfo), "atomic_fetch_add")

    def __enter__(self) -> Rdma:
        return self
