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

import ipaddress
from collections.abc import Callable
from typing import Any, Protocol, cast

from . import _impl
from ._lifetime import DocaObject
from .abc import BufHandle, CtxHandle, DevInfoHandle, TaskHandle
from .buf import Buf
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo
from .errors import DocaInvalidValue, DocaUsageError
from .types import AccessFlag, MtuSize, NamedIntEnum

__all__ = [
    "Rdma", "RdmaConnection", "RdmaAddr", "RdmaTransportType", "RdmaAddrType", "RdmaOpcode",
    "RdmaTaskReceive", "RdmaTaskSend", "RdmaTaskSendImm", "RdmaTaskRead", "RdmaTaskWrite", "RdmaTaskWriteImm",
    "RdmaTaskAtomicCmpSwp", "RdmaTaskAtomicFetchAdd",
    "ConnectionRequestCallback", "ConnectionCallback", "RdmaHandle", "RdmaBackend",
]


class RdmaTransportType(NamedIntEnum):
    """``enum doca_rdma_transport_type``."""

    RC = 0
    """``DOCA_RDMA_TRANSPORT_TYPE_RC``."""
    DC = 1
    """``DOCA_RDMA_TRANSPORT_TYPE_DC``."""


class RdmaAddrType(NamedIntEnum):
    """``enum doca_rdma_addr_type`` (RDMA-CM addresses)."""

    IPv4 = 0
    """``DOCA_RDMA_ADDR_TYPE_IPV4``."""
    IPv6 = 1
    """``DOCA_RDMA_ADDR_TYPE_IPV6``."""
    GID = 2
    """``DOCA_RDMA_ADDR_TYPE_GID``."""


class RdmaOpcode(NamedIntEnum):
    """``enum doca_rdma_opcode``: what filled a receive task."""

    RECV_SEND = 0
    """``DOCA_RDMA_OPCODE_RECV_SEND``."""
    RECV_SEND_WITH_IMM = 1
    """``DOCA_RDMA_OPCODE_RECV_SEND_WITH_IMM``."""
    RECV_WRITE_WITH_IMM = 2
    """``DOCA_RDMA_OPCODE_RECV_WRITE_WITH_IMM``."""


#: ``cb(connection, ctx_user_data)``: a CM connection request (server); accept or reject inside.
ConnectionRequestCallback = Callable[["RdmaConnection", Any], None]
"""``cb(connection, ctx_user_data)``, as ``doca_rdma_connection_request_cb_t``."""
#: ``cb(connection, connection_user_data, ctx_user_data)``: established, failure or disconnection.
ConnectionCallback = Callable[["RdmaConnection", Any, Any], None]
"""``cb(connection, ctx_user_data)``, as the established/failure/disconnect callbacks of
``doca_rdma_set_connection_state_callbacks``.
"""

# Backend connection events, in the order of set_connection_state_callbacks.
_EV_REQUEST, _EV_ESTABLISHED, _EV_FAILURE, _EV_DISCONNECTION = 0, 1, 2, 3


class RdmaHandle(CtxHandle, Protocol):
    """``doca_rdma`` as a backend implements it. Task pools are opaque objects with
    ``set_conf(success, error, num_tasks)``; connections are opaque handles with an
    ``owner`` attribute and ``get_id/accept/reject/disconnect/get_addr``."""

    @property
    def receive(self) -> Any:
        """Backend: the receive task type (``doca_rdma_task_receive``)."""
    @property
    def send(self) -> Any:
        """Backend: the send task type (``doca_rdma_task_send``)."""
    @property
    def send_imm(self) -> Any:
        """Backend: the send imm task type (``doca_rdma_task_send_imm``)."""
    @property
    def read(self) -> Any:
        """Backend: the read task type (``doca_rdma_task_read``)."""
    @property
    def write(self) -> Any:
        """Backend: the write task type (``doca_rdma_task_write``)."""
    @property
    def write_imm(self) -> Any:
        """Backend: the write imm task type (``doca_rdma_task_write_imm``)."""
    @property
    def atomic_cmp_swp(self) -> Any:
        """Backend: the atomic cmp swp task type (``doca_rdma_task_atomic_cmp_swp``)."""
    @property
    def atomic_fetch_add(self) -> Any:
        """Backend: the atomic fetch add task type (``doca_rdma_task_atomic_fetch_add``)."""
    def set_permissions(self, value: int) -> None:
        """``doca_rdma_set_permissions``."""
    def get_permissions(self) -> int:
        """``doca_rdma_get_permissions``."""
    def set_transport_type(self, value: int) -> None:
        """``doca_rdma_set_transport_type``."""
    def get_transport_type(self) -> int:
        """``doca_rdma_get_transport_type``."""
    def set_gid_index(self, value: int) -> None:
        """``doca_rdma_set_gid_index``."""
    def get_gid_index(self) -> int:
        """``doca_rdma_get_gid_index``."""
    def set_max_num_connections(self, value: int) -> None:
        """``doca_rdma_set_max_num_connections``."""
    def get_max_num_connections(self) -> int:
        """``doca_rdma_get_max_num_connections``."""
    def set_mtu(self, value: int) -> None:
        """``doca_rdma_set_mtu``."""
    def get_mtu(self) -> int:
        """``doca_rdma_get_mtu``."""
    def set_recv_queue_size(self, value: int) -> None:
        """``doca_rdma_set_recv_queue_size``."""
    def get_recv_queue_size(self) -> int:
        """``doca_rdma_get_recv_queue_size``."""
    def set_send_queue_size(self, value: int) -> None:
        """``doca_rdma_set_send_queue_size``."""
    def get_send_queue_size(self) -> int:
        """``doca_rdma_get_send_queue_size``."""
    def set_max_send_buf_list_len(self, value: int) -> None:
        """``doca_rdma_set_max_send_buf_list_len``."""
    def get_max_send_buf_list_len(self) -> int:
        """``doca_rdma_get_max_send_buf_list_len``."""
    def set_receive_dst_buf_list_len(self, value: int) -> None:
        """``doca_rdma_task_receive_set_dst_buf_list_len``."""
    def get_receive_dst_buf_list_len(self) -> int:
        """``doca_rdma_task_receive_get_dst_buf_list_len``."""
    def set_grh_enabled(self, value: bool) -> None:
        """``doca_rdma_set_grh_enabled``."""
    def get_grh_enabled(self) -> bool:
        """``doca_rdma_get_grh_enabled``."""
    def set_sl(self, value: int) -> None:
        """``doca_rdma_set_sl``."""
    def get_sl(self) -> int:
        """``doca_rdma_get_sl``."""
    def set_rnr_retry_count(self, value: int) -> None:
        """``doca_rdma_set_rnr_retry_count``."""
    def get_rnr_retry_count(self) -> int:
        """``doca_rdma_get_rnr_retry_count``."""
    def set_connection_request_timeout(self, value: int) -> None:
        """``doca_rdma_set_connection_request_timeout``."""
    def get_connection_request_timeout(self) -> int:
        """``doca_rdma_get_connection_request_timeout``."""
    def set_connection_state_cb(self, cb: Callable[[int, Any], None]) -> None:
        """Backend hook behind the public ``set_connection_state_cb`` (``doca_rdma``)."""
    def export(self) -> tuple[bytes, Any]:
        """Backend hook behind the public ``export`` (``doca_rdma``)."""
    def connect(self, blob: bytes, conn: Any) -> None:
        """Backend hook behind the public ``connect`` (``doca_rdma``)."""
    def start_listen_to_port(self, port: int) -> int:
        """Backend hook behind the public ``start_listen_to_port`` (``doca_rdma``)."""
    def stop_listen_to_port(self, port: int) -> None:
        """Backend hook behind the public ``stop_listen_to_port`` (``doca_rdma``)."""
    def connect_to_addr(self, addr_type: int, address: str, port: int) -> Any:
        """Backend hook behind the public ``connect_to_addr`` (``doca_rdma``)."""
    def task_receive_allocate_init(self, dst: BufHandle | None) -> TaskHandle:
        """Backend hook behind the public ``task_receive_allocate_init`` (``doca_rdma``)."""
    def task_send_allocate_init(self, conn: Any, src: BufHandle | None) -> TaskHandle:
        """Backend hook behind the public ``task_send_allocate_init`` (``doca_rdma``)."""
    def task_send_imm_allocate_init(self, conn: Any, src: BufHandle | None, imm: int) -> TaskHandle:
        """Backend hook behind the public ``task_send_imm_allocate_init`` (``doca_rdma``)."""
    def task_read_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> TaskHandle:
        """Backend hook behind the public ``task_read_allocate_init`` (``doca_rdma``)."""
    def task_write_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> TaskHandle:
        """Backend hook behind the public ``task_write_allocate_init`` (``doca_rdma``)."""
    def task_write_imm_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle, imm: int) -> TaskHandle:
        """Backend hook behind the public ``task_write_imm_allocate_init`` (``doca_rdma``)."""
    def task_atomic_cmp_swp_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle, cmp: int,
                                          swap: int) -> TaskHandle:
        """Backend hook behind the public ``task_atomic_cmp_swp_allocate_init`` (``doca_rdma``)."""
    def task_atomic_fetch_add_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle,
                                            add: int) -> TaskHandle:
        """Backend hook behind the public ``task_atomic_fetch_add_allocate_init`` (``doca_rdma``)."""


class RdmaBackend(Protocol):
    """Module ``doca_py.<impl>.rdma``."""

    def rdma_create(self, dev: object) -> RdmaHandle:
        """Backend hook behind the public ``rdma_create`` (``doca_rdma``)."""
    def cap_get_max_recv_queue_size(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_get_max_recv_queue_size`` (``doca_rdma``)."""
    def cap_get_max_send_queue_size(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_get_max_send_queue_size`` (``doca_rdma``)."""
    def cap_get_max_send_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_get_max_send_buf_list_len`` (``doca_rdma``)."""
    def cap_get_max_message_size(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_get_max_message_size`` (``doca_rdma``)."""
    def cap_get_gid_table_size(self, devinfo: DevInfoHandle) -> int:
        """Backend hook behind the public ``cap_get_gid_table_size`` (``doca_rdma``)."""
    def cap_get_gid(self, devinfo: DevInfoHandle, start: int, num: int) -> list[bytes]:
        """Backend hook behind the public ``cap_get_gid`` (``doca_rdma``)."""
    def cap_transport_type_is_supported(self, devinfo: DevInfoHandle, transport: int) -> bool:
        """Backend hook behind the public ``cap_transport_type_is_supported`` (``doca_rdma``)."""
    def cap_task_is_supported(self, devinfo: DevInfoHandle, task: str) -> bool:
        """Backend hook behind the public ``cap_task_is_supported`` (``doca_rdma``)."""
    def cap_task_receive_get_max_dst_buf_list_len(self, devinfo: DevInfoHandle, transport: int) -> int:
        """Backend hook behind the public ``cap_task_receive_get_max_dst_buf_list_len`` (``doca_rdma``)."""


def _backend() -> RdmaBackend:
    return cast(RdmaBackend, _impl.backend_module("rdma"))


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
        self.addr_type, self.address, self.port = t, address, port

    def get_params(self) -> tuple[RdmaAddrType, str, int]:
        """``doca_rdma_addr_get_params``: (type, address string, port)."""
        return self.addr_type, self.address, self.port

    def __repr__(self) -> str:
        return f"RdmaAddr({self.addr_type.name}, {self.address!r}, {self.port})"


class RdmaConnection:
    """``doca_rdma_connection``: one peer of an [`Rdma`][doca_py.rdma.Rdma] context (owned by it)."""

    __slots__ = ("_h", "_rdma", "user_data", "__weakref__")

    def __init__(self, handle: Any, rdma: Rdma, user_data: Any = None) -> None:
        self._h = handle
        self._rdma = rdma
        self.user_data: Any = user_data
        """Any object (``doca_rdma_connection_set_user_data``)."""

    def get_id(self) -> int:
        """``doca_rdma_connection_get_id``: the connection's number inside its ctx."""
        return int(self._h.get_id())

    def set_user_data(self, user_data: Any) -> None:
        """Data handed to this connection's established/failure/disconnection callbacks."""
        self.user_data = user_data

    def get_user_data(self) -> Any:
        """``doca_rdma_connection_get_user_data``: the user data."""
        return self.user_data

    def accept(self, private_data: bytes | None = None) -> None:
        """Accept a CM connection request (call from the request callback or later)."""
        self._h.accept(None if private_data is None else bytes(private_data))

    def reject(self) -> None:
        """Reject a CM connection request."""
        self._h.reject()

    def disconnect(self) -> None:
        """Tear the connection down; the peer gets its disconnection callback."""
        self._h.disconnect()

    def get_addr(self) -> RdmaAddr | None:
        """The peer's address for a CM connection (``None`` for export/connect)."""
        a = self._h.get_addr()
        return None if a is None else RdmaAddr(RdmaAddrType(a[0]), a[1], a[2])

    @property
    def rdma(self) -> Rdma:
        """The [`Rdma`][doca_py.rdma.Rdma] context of the connection."""
        return self._rdma

    def __repr__(self) -> str:
        return f"<RdmaConnection {self.get_id()}>"


# -- tasks --------------------------------------------------------------------------------------
class _ConnTask(Task):
    __slots__ = ("_conn",)
    _conn: RdmaConnection

    def get_rdma_connection(self) -> RdmaConnection:
        """``doca_rdma_task_<type>_get_rdma_connection``: the rdma connection."""
        return self._conn

    def set_rdma_connection(self, connection: RdmaConnection) -> None:
        """``doca_rdma_task_<type>_set_rdma_connection``: set the rdma connection to *connection*."""
        self._h.set_rdma_connection(connection._h)  # type: ignore[attr-defined]
        self._conn = connection


class RdmaTaskReceive(Task):
    """``doca_rdma_task_receive``: a posted receive, filled by the peer's send (or write
    with immediate). The received bytes are appended after the destination's data."""

    __slots__ = ("_dst",)
    _dst: Buf | None

    def get_dst_buf(self) -> Buf | None:
        """``doca_rdma_task_receive_get_dst_buf``: the dst buf."""
        return self._dst

    def set_dst_buf(self, dst: Buf | None) -> None:
        """``doca_rdma_task_receive_set_dst_buf``: set the dst buf to *dst*."""
        self._h.set_dst_buf(None if dst is None else dst._h)  # type: ignore[attr-defined]
        self._dst = dst

    def get_result_opcode(self) -> RdmaOpcode:
        """Which peer operation filled the receive (valid after success)."""
        return RdmaOpcode(self._h.opcode)  # type: ignore[attr-defined]

    def get_result_len(self) -> int:
        """Bytes received (for ``RECV_WRITE_WITH_IMM``: bytes the peer wrote)."""
        return int(self._h.result_len)  # type: ignore[attr-defined]

    def get_result_immediate_data(self) -> int:
        """The immediate of a ``*_WITH_IMM`` opcode (``doca_be32_t``, as sent)."""
        return int(self._h.imm)  # type: ignore[attr-defined]

    def get_result_rdma_connection(self) -> RdmaConnection | None:
        """The connection the message arrived on."""
        h = self._h.result_conn  # type: ignore[attr-defined]
        return None if h is None else cast(RdmaConnection, h.owner)


class RdmaTaskSend(_ConnTask):
    """``doca_rdma_task_send``: the source's data to the peer's next posted receive."""

    __slots__ = ("_src",)
    _src: Buf | None

    def get_src_buf(self) -> Buf | None:
        """``doca_rdma_task_send_get_src_buf``: the src buf."""
        return self._src

    def set_src_buf(self, src: Buf | None) -> None:
        """``doca_rdma_task_send_set_src_buf``: set the src buf to *src*."""
        self._h.set_src_buf(None if src is None else src._h)  # type: ignore[attr-defined]
        self._src = src


class _ImmediateData:
    """The 32-bit immediate data of send_imm and write_imm tasks."""

    __slots__ = ()
    _h: Any

    def get_immediate_data(self) -> int:
        """``doca_rdma_task_<type>_get_immediate_data``: the immediate data."""
        return int(self._h.imm)

    def set_immediate_data(self, imm: int) -> None:
        """``doca_rdma_task_<type>_set_immediate_data``: set the immediate data to *imm*."""
        if not 0 <= imm <= 0xFFFFFFFF:
            raise DocaInvalidValue("immediate data is 32 bits")
        self._h.imm = imm


class RdmaTaskSendImm(_ImmediateData, RdmaTaskSend):
    """``doca_rdma_task_send_imm``: a send carrying 32 bits of immediate data."""

    __slots__ = ()


class _OneSidedTask(_ConnTask):
    __slots__ = ("_src", "_dst")
    _src: Buf
    _dst: Buf

    def get_src_buf(self) -> Buf:
        """``doca_rdma_task_<read|write>_get_src_buf``: the src buf."""
        return self._src

    def set_src_buf(self, src: Buf) -> None:
        """``doca_rdma_task_<read|write>_set_src_buf``: set the src buf to *src*."""
        self._h.set_src_buf(src._h)  # type: ignore[attr-defined]
        self._src = src

    def get_dst_buf(self) -> Buf:
        """``doca_rdma_task_<read|write>_get_dst_buf``: the dst buf."""
        return self._dst

    def set_dst_buf(self, dst: Buf) -> None:
        """``doca_rdma_task_<read|write>_set_dst_buf``: set the dst buf to *dst*."""
        self._h.set_dst_buf(dst._h)  # type: ignore[attr-defined]
        self._dst = dst


class RdmaTaskRead(_OneSidedTask):
    """``doca_rdma_task_read``: the remote source's data into the local destination."""

    __slots__ = ()


class RdmaTaskWrite(_OneSidedTask):
    """``doca_rdma_task_write``: the local source's data after the remote destination's data."""

    __slots__ = ()


class RdmaTaskWriteImm(_ImmediateData, RdmaTaskWrite):
    """``doca_rdma_task_write_imm``: a write that also completes a receive on the peer
    (opcode ``RECV_WRITE_WITH_IMM``)."""

    __slots__ = ()


class _AtomicTask(_ConnTask):
    __slots__ = ("_dst", "_result")
    _dst: Buf
    _result: Buf

    def get_dst_buf(self) -> Buf:
        """``doca_rdma_task_atomic_<type>_get_dst_buf``: the dst buf."""
        return self._dst

    def set_dst_buf(self, dst: Buf) -> None:
        """``doca_rdma_task_atomic_<type>_set_dst_buf``: set the dst buf to *dst*."""
        self._h.set_dst_buf(dst._h)  # type: ignore[attr-defined]
        self._dst = dst

    def get_result_buf(self) -> Buf:
        """``doca_rdma_task_atomic_<type>_get_result_buf``: the result buf."""
        return self._result

    def set_result_buf(self, result: Buf) -> None:
        """``doca_rdma_task_atomic_<type>_set_result_buf``: set the result buf to *result*."""
        self._h.set_result_buf(result._h)  # type: ignore[attr-defined]
        self._result = result


class RdmaTaskAtomicCmpSwp(_AtomicTask):
    """``doca_rdma_task_atomic_cmp_swp``: 64-bit compare-and-swap at the remote
    destination; the old value (native byte order) is appended to the result buffer."""

    __slots__ = ()

    def get_cmp_data(self) -> int:
        """``doca_rdma_task_atomic_cmp_swp_get_cmp_data``: the cmp data."""
        return int(self._h.cmp)  # type: ignore[attr-defined]

    def set_cmp_data(self, cmp: int) -> None:
        """``doca_rdma_task_atomic_cmp_swp_set_cmp_data``: set the cmp data to *cmp*."""
        self._h.cmp = cmp & (1 << 64) - 1  # type: ignore[attr-defined]

    def get_swap_data(self) -> int:
        """``doca_rdma_task_atomic_cmp_swp_get_swap_data``: the swap data."""
        return int(self._h.swap)  # type: ignore[attr-defined]

    def set_swap_data(self, swap: int) -> None:
        """``doca_rdma_task_atomic_cmp_swp_set_swap_data``: set the swap data to *swap*."""
        self._h.swap = swap & (1 << 64) - 1  # type: ignore[attr-defined]


class RdmaTaskAtomicFetchAdd(_AtomicTask):
    """``doca_rdma_task_atomic_fetch_add``: 64-bit fetch-and-add at the remote destination."""

    __slots__ = ()

    def get_add_data(self) -> int:
        """``doca_rdma_task_atomic_fetch_add_get_add_data``: the add data."""
        return int(self._h.add)  # type: ignore[attr-defined]

    def set_add_data(self, add: int) -> None:
        """``doca_rdma_task_atomic_fetch_add_set_add_data``: set the add data to *add*."""
        self._h.add = add & (1 << 64) - 1  # type: ignore[attr-defined]


# -- the context ------------------------------------------------------------------------------------
class Rdma(Ctx):
    """``doca_rdma`` context on *dev*.

    Configure before [`start`][doca_py.ctx.Ctx.start] (IDLE). ``start`` leaves the ctx STARTING; it goes
    RUNNING from [`Pe.progress`][doca_py.pe.Pe.progress]: DOCA 3.x without any connection (RUNNING means
    "ready to export and connect", not "connected"), DOCA 2.6 once [`connect`][doca_py.rdma.Rdma.connect] was
    called. [`export`][doca_py.rdma.Rdma.export] and [`connect`][doca_py.rdma.Rdma.connect] work while STARTING or RUNNING.
    """

    def __init__(self, dev: Dev, user_data: Any = None) -> None:
        dev._check_open()
        self._h: RdmaHandle = _backend().rdma_create(dev._h)
        super().__init__(self._h, user_data)
        dev._adopt(self)
        self._dev = dev
        self._conn_cbs: tuple[ConnectionRequestCallback | None, ConnectionCallback | None,
                              ConnectionCallback | None, ConnectionCallback | None] = (None, None, None, None)

    # -- configuration (IDLE) ----------------------------------------------------------------
    def set_permissions(self, flags: AccessFlag | int) -> None:
        """Remote access this ctx grants its peers (``RDMA_READ``/``RDMA_WRITE``/``RDMA_ATOMIC``, plus
        ``LOCAL_*``); ``PCI_*`` flags are ``DocaInvalidValue``."""
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
        """How many connections (exports or CM) this ctx may hold (default 1)."""
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
        """Receive queue depth (rounded up to a power of two)."""
        self._h.set_recv_queue_size(n)

    def get_recv_queue_size(self) -> int:
        """``doca_rdma_get_recv_queue_size``: the recv queue size."""
        return self._h.get_recv_queue_size()

    def set_send_queue_size(self, n: int) -> None:
        """Send queue depth (rounded up to a power of two)."""
        self._h.set_send_queue_size(n)

    def get_send_queue_size(self) -> int:
        """``doca_rdma_get_send_queue_size``: the send queue size."""
        return self._h.get_send_queue_size()

    def set_max_send_buf_list_len(self, n: int) -> None:
        """Longest chained local buffer list of send, write and read tasks (default 1)."""
        self._h.set_max_send_buf_list_len(n)

    def get_max_send_buf_list_len(self) -> int:
        """``doca_rdma_get_max_send_buf_list_len``: the max send buf list len."""
        return self._h.get_max_send_buf_list_len()

    def task_receive_set_dst_buf_list_len(self, n: int) -> None:
        """Longest chained destination list of receive tasks (default 1)."""
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
        """Receiver-not-ready retries (0–7): how long a send waits for a posted receive."""
        self._h.set_rnr_retry_count(count)

    def get_rnr_retry_count(self) -> int:
        """``doca_rdma_get_rnr_retry_count``: the rnr retry count."""
        return self._h.get_rnr_retry_count()

    def set_connection_request_timeout(self, timeout_ms: int) -> None:
        """How long [`connect_to_addr`][doca_py.rdma.Rdma.connect_to_addr] waits for the server (milliseconds)."""
        self._h.set_connection_request_timeout(timeout_ms)

    def get_connection_request_timeout(self) -> int:
        """``doca_rdma_get_connection_request_timeout``: the connection request timeout."""
        return self._h.get_connection_request_timeout()

    def set_connection_state_callbacks(self, request: ConnectionRequestCallback | None,
                                       established: ConnectionCallback | None,
                                       failure: ConnectionCallback | None,
                                       disconnection: ConnectionCallback | None) -> None:
        """Register the connection callbacks (run inside ``Pe.progress``).

        ``request(conn, ctx_user_data)`` (CM server: accept or reject; ``None`` accepts
        every request); ``established/failure/disconnection(conn, conn_user_data,
        ctx_user_data)``.
        """
        self._check_open()
        self._conn_cbs = (request, established, failure, disconnection)
        self._h.set_connection_state_cb(self._on_conn_event)

    def _conn(self, h: Any, user_data: Any = None) -> RdmaConnection:
        c = cast("RdmaConnection | None", h.owner)
        if c is None:
            c = RdmaConnection(h, self, user_data)
            h.owner = c
        return c

    def _on_conn_event(self, kind: int, h: Any) -> None:
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
            cb(conn, conn.user_data, self.user_data)

    # -- connections (after start) ------------------------------------------------------------
    def export(self) -> tuple[bytes, RdmaConnection]:
        """``doca_rdma_export``: a new connection and the blob describing it to the peer
        (``DocaFull`` when ``max_num_connections`` are in use)."""
        self._check_open()
        blob, h = self._h.export()
        return bytes(blob), self._conn(h)

    def connect(self, peer_blob: bytes, connection: RdmaConnection) -> None:
        """``doca_rdma_connect``: join *connection* to the peer's exported connection.

        Tasks on the connection may be submitted right after: they wait until the peer
        has connected too. A malformed, truncated, stale or replayed blob raises
        ``DocaConnectionAborted``; a second connect of one connection ``DocaBadState``.
        """
        self._check_open()
        if not isinstance(peer_blob, (bytes, bytearray, memoryview)):
            raise DocaInvalidValue(f"connection blob must be bytes, not {type(peer_blob).__name__}")
        if not isinstance(connection, RdmaConnection) or connection._rdma is not self:
            raise DocaInvalidValue("the connection was not exported by this Rdma")
        self._h.connect(bytes(peer_blob), connection._h)

    def start_listen_to_port(self, port: int) -> int:
        """RDMA-CM server: listen on *port*; returns the port (useful with 0 = any, emulated)."""
        self._check_open()
        return self._h.start_listen_to_port(port)

    def stop_listen_to_port(self, port: int) -> None:
        """``doca_rdma_stop_listen_to_port``."""
        self._h.stop_listen_to_port(port)

    def connect_to_addr(self, addr: RdmaAddr, user_data: Any = None) -> RdmaConnection:
        """RDMA-CM client: request a connection from a listening server.

        The outcome arrives through the established or failure callback, with
        *user_data* as the connection user data.
        """
        self._check_open()
        if not isinstance(addr, RdmaAddr):
            raise DocaUsageError("connect_to_addr takes an RdmaAddr")
        h = self._h.connect_to_addr(int(addr.addr_type), addr.address, addr.port)
        c = self._conn(h, user_data)
        c.user_data = user_data
        return c

    # -- task configuration -----------------------------------------------------------------
    def task_receive_set_conf(self, success: TaskCallback[RdmaTaskReceive], error: TaskCallback[RdmaTaskReceive],
                              num_tasks: int) -> None:
        """``doca_rdma_task_receive_set_conf``: configure the receive tasks (before start): the completion and
        error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.receive, success, error, num_tasks)

    def task_send_set_conf(self, success: TaskCallback[RdmaTaskSend], error: TaskCallback[RdmaTaskSend],
                           num_tasks: int) -> None:
        """``doca_rdma_task_send_set_conf``: configure the send tasks (before start): the completion and error
        callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.send, success, error, num_tasks)

    def task_send_imm_set_conf(self, success: TaskCallback[RdmaTaskSendImm], error: TaskCallback[RdmaTaskSendImm],
                               num_tasks: int) -> None:
        """``doca_rdma_task_send_imm_set_conf``: configure the send imm tasks (before start): the completion and
        error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.send_imm, success, error, num_tasks)

    def task_read_set_conf(self, success: TaskCallback[RdmaTaskRead], error: TaskCallback[RdmaTaskRead],
                           num_tasks: int) -> None:
        """``doca_rdma_task_read_set_conf``: configure the read tasks (before start): the completion and error
        callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.read, success, error, num_tasks)

    def task_write_set_conf(self, success: TaskCallback[RdmaTaskWrite], error: TaskCallback[RdmaTaskWrite],
                            num_tasks: int) -> None:
        """``doca_rdma_task_write_set_conf``: configure the write tasks (before start): the completion and error
        callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.write, success, error, num_tasks)

    def task_write_imm_set_conf(self, success: TaskCallback[RdmaTaskWriteImm],
                                error: TaskCallback[RdmaTaskWriteImm], num_tasks: int) -> None:
        """``doca_rdma_task_write_imm_set_conf``: configure the write imm tasks (before start): the completion and
        error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.write_imm, success, error, num_tasks)

    def task_atomic_cmp_swp_set_conf(self, success: TaskCallback[RdmaTaskAtomicCmpSwp],
                                     error: TaskCallback[RdmaTaskAtomicCmpSwp], num_tasks: int) -> None:
        """``doca_rdma_task_atomic_cmp_swp_set_conf``: configure the atomic cmp swp tasks (before start): the
        completion and error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.atomic_cmp_swp, success, error, num_tasks)

    def task_atomic_fetch_add_set_conf(self, success: TaskCallback[RdmaTaskAtomicFetchAdd],
                                       error: TaskCallback[RdmaTaskAtomicFetchAdd], num_tasks: int) -> None:
        """``doca_rdma_task_atomic_fetch_add_set_conf``: configure the atomic fetch add tasks (before start): the
        completion and error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.atomic_fetch_add, success, error, num_tasks)

    # -- task allocation --------------------------------------------------------------------
    @staticmethod
    def _check_conn(conn: RdmaConnection) -> Any:
        if not isinstance(conn, RdmaConnection):
            raise DocaUsageError(f"expected an RdmaConnection, got {type(conn).__name__}")
        return conn._h

    def task_receive_allocate_init(self, dst: Buf | None, user_data: Any = None) -> RdmaTaskReceive:
        """A receive task posting *dst* (``None``: immediate-only messages)."""
        t = self._wrap_task(self._h.task_receive_allocate_init(None if dst is None else dst._h), RdmaTaskReceive,
                            user_data)
        t._dst = dst
        return t

    def task_send_allocate_init(self, connection: RdmaConnection, src: Buf | None,
                                user_data: Any = None) -> RdmaTaskSend:
        """A send of *src*'s data (``None``: an empty message) on *connection*."""
        h = self._h.task_send_allocate_init(self._check_conn(connection), None if src is None else src._h)
        t = self._wrap_task(h, RdmaTaskSend, user_data)
        t._conn, t._src = connection, src
        return t

    def task_send_imm_allocate_init(self, connection: RdmaConnection, src: Buf | None, immediate_data: int,
                                    user_data: Any = None) -> RdmaTaskSendImm:
        """``doca_rdma_task_send_imm_allocate_init``: take a send imm task from the pool, initialised with the
        arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        h = self._h.task_send_imm_allocate_init(self._check_conn(connection), None if src is None else src._h,
                                                immediate_data)
        t = self._wrap_task(h, RdmaTaskSendImm, user_data)
        t._conn, t._src = connection, src
        return t

    def task_read_allocate_init(self, connection: RdmaConnection, src: Buf, dst: Buf,
                                user_data: Any = None) -> RdmaTaskRead:
        """Read the remote *src* (a buffer of an RDMA-imported mmap) into local *dst*."""
        h = self._h.task_read_allocate_init(self._check_conn(connection), src._h, dst._h)
        t = self._wrap_task(h, RdmaTaskRead, user_data)
        t._conn, t._src, t._dst = connection, src, dst
        return t

    def task_write_allocate_init(self, connection: RdmaConnection, src: Buf, dst: Buf,
                                 user_data: Any = None) -> RdmaTaskWrite:
        """Write local *src* into the remote *dst* (a buffer of an RDMA-imported mmap)."""
        h = self._h.task_write_allocate_init(self._check_conn(connection), src._h, dst._h)
        t = self._wrap_task(h, RdmaTaskWrite, user_data)
        t._conn, t._src, t._dst = connection, src, dst
        return t

    def task_write_imm_allocate_init(self, connection: RdmaConnection, src: Buf, dst: Buf, immediate_data: int,
                                     user_data: Any = None) -> RdmaTaskWriteImm:
        """``doca_rdma_task_write_imm_allocate_init``: take a write imm task from the pool, initialised with the
        arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        h = self._h.task_write_imm_allocate_init(self._check_conn(connection), src._h, dst._h, immediate_data)
        t = self._wrap_task(h, RdmaTaskWriteImm, user_data)
        t._conn, t._src, t._dst = connection, src, dst
        return t

    def task_atomic_cmp_swp_allocate_init(self, connection: RdmaConnection, dst: Buf, result: Buf, cmp_data: int,
                                          swap_data: int, user_data: Any = None) -> RdmaTaskAtomicCmpSwp:
        """``doca_rdma_task_atomic_cmp_swp_allocate_init``: take a atomic cmp swp task from the pool, initialised
        with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        h = self._h.task_atomic_cmp_swp_allocate_init(self._check_conn(connection), dst._h, result._h, cmp_data,
                                                      swap_data)
        t = self._wrap_task(h, RdmaTaskAtomicCmpSwp, user_data)
        t._conn, t._dst, t._result = connection, dst, result
        return t

    def task_atomic_fetch_add_allocate_init(self, connection: RdmaConnection, dst: Buf, result: Buf, add_data: int,
                                            user_data: Any = None) -> RdmaTaskAtomicFetchAdd:
        """``doca_rdma_task_atomic_fetch_add_allocate_init``: take a atomic fetch add task from the pool,
        initialised with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        h = self._h.task_atomic_fetch_add_allocate_init(self._check_conn(connection), dst._h, result._h, add_data)
        t = self._wrap_task(h, RdmaTaskAtomicFetchAdd, user_data)
        t._conn, t._dst, t._result = connection, dst, result
        return t

    # -- capabilities -----------------------------------------------------------------------
    @staticmethod
    def cap_get_max_recv_queue_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_recv_queue_size``: the largest recv queue size *devinfo* supports."""
        return _backend().cap_get_max_recv_queue_size(devinfo._h)

    @staticmethod
    def cap_get_max_send_queue_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_send_queue_size``: the largest send queue size *devinfo* supports."""
        return _backend().cap_get_max_send_queue_size(devinfo._h)

    @staticmethod
    def cap_get_max_send_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_send_buf_list_len``: the largest send buf list len *devinfo* supports."""
        return _backend().cap_get_max_send_buf_list_len(devinfo._h)

    @staticmethod
    def cap_get_max_message_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_max_message_size``: the largest message size *devinfo* supports."""
        return _backend().cap_get_max_message_size(devinfo._h)

    @staticmethod
    def cap_get_gid_table_size(devinfo: DevInfo) -> int:
        """``doca_rdma_cap_get_gid_table_size``: the get gid table size *devinfo* supports."""
        return _backend().cap_get_gid_table_size(devinfo._h)

    @staticmethod
    def cap_get_gid(devinfo: DevInfo, start_index: int, num_entries: int) -> list[bytes]:
        """``num_entries`` 16-byte GIDs from *start_index*."""
        return _backend().cap_get_gid(devinfo._h, start_index, num_entries)

    @staticmethod
    def cap_transport_type_is_supported(devinfo: DevInfo, transport: RdmaTransportType) -> bool:
        """``doca_rdma_cap_transport_type_is_supported``: whether *devinfo* supports transport type."""
        return _backend().cap_transport_type_is_supported(devinfo._h, int(transport))

    @staticmethod
    def cap_task_receive_get_max_dst_buf_list_len(devinfo: DevInfo, transport: RdmaTransportType) -> int:
        """``doca_rdma_cap_task_receive_get_max_dst_buf_list_len``: the largest dst buf list len *devinfo*
        supports.
        """
        return _backend().cap_task_receive_get_max_dst_buf_list_len(devinfo._h, int(transport))

    @staticmethod
    def cap_task_receive_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_receive_is_supported``: whether *devinfo* supports task receive."""
        return _backend().cap_task_is_supported(devinfo._h, "receive")

    @staticmethod
    def cap_task_send_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_send_is_supported``: whether *devinfo* supports task send."""
        return _backend().cap_task_is_supported(devinfo._h, "send")

    @staticmethod
    def cap_task_send_imm_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_send_imm_is_supported``: whether *devinfo* supports task send imm."""
        return _backend().cap_task_is_supported(devinfo._h, "send_imm")

    @staticmethod
    def cap_task_read_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_read_is_supported``: whether *devinfo* supports task read."""
        return _backend().cap_task_is_supported(devinfo._h, "read")

    @staticmethod
    def cap_task_write_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_write_is_supported``: whether *devinfo* supports task write."""
        return _backend().cap_task_is_supported(devinfo._h, "write")

    @staticmethod
    def cap_task_write_imm_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_write_imm_is_supported``: whether *devinfo* supports task write imm."""
        return _backend().cap_task_is_supported(devinfo._h, "write_imm")

    @staticmethod
    def cap_task_atomic_cmp_swp_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_atomic_cmp_swp_is_supported``: whether *devinfo* supports task atomic cmp swp."""
        return _backend().cap_task_is_supported(devinfo._h, "atomic_cmp_swp")

    @staticmethod
    def cap_task_atomic_fetch_add_is_supported(devinfo: DevInfo) -> bool:
        """``doca_rdma_cap_task_atomic_fetch_add_is_supported``: whether *devinfo* supports task atomic fetch add."""
        return _backend().cap_task_is_supported(devinfo._h, "atomic_fetch_add")

    def __enter__(self) -> Rdma:
        return self
