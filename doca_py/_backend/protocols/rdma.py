"""Protocols of ``doca_rdma`` (module ``doca_py.<impl>.rdma``): the context, its connections and one
handle protocol per task type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .core import BufHandle, CtxHandle, DevHandle, DevInfoHandle, TaskHandle, TaskPoolHandle


class RdmaConnectionHandle(Protocol):
    """``doca_rdma_connection``."""

    #: The public [`RdmaConnection`][doca_py.rdma.RdmaConnection] wrapping it (``None`` until wrapped).
    owner: object

    def get_id(self) -> int:
        """``doca_rdma_connection_get_id``."""
        ...
    def accept(self, private_data: bytes | None) -> None:
        """``doca_rdma_connection_accept``."""
        ...
    def reject(self) -> None:
        """``doca_rdma_connection_reject``."""
        ...
    def disconnect(self) -> None:
        """``doca_rdma_connection_disconnect``."""
        ...
    def get_addr(self) -> tuple[int, str, int] | None:
        """``doca_rdma_connection_get_addr`` + ``doca_rdma_addr_get_params``: (type, address, port), or
        ``None`` for an export/connect connection."""
        ...


class RdmaTaskConnHandle(TaskHandle, Protocol):
    """What every rdma task on a connection has (all but receive)."""

    def set_rdma_connection(self, conn: RdmaConnectionHandle) -> None:
        """``doca_rdma_task_<type>_set_rdma_connection``."""
        ...


class RdmaTaskReceiveHandle(TaskHandle, Protocol):
    """``doca_rdma_task_receive``."""

    def set_dst_buf(self, buf: BufHandle | None) -> None:
        """``doca_rdma_task_receive_set_dst_buf``."""
        ...
    @property
    def opcode(self) -> int:
        """``doca_rdma_task_receive_get_result_opcode``."""
        ...
    @property
    def result_len(self) -> int:
        """``doca_rdma_task_receive_get_result_len``."""
        ...
    def result_len_reader(self) -> Callable[[], int]:
        """``doca_rdma_task_receive_get_result_len`` bound to this task: a call that runs no Python frame."""
        ...
    @property
    def imm(self) -> int:
        """``doca_rdma_task_receive_get_result_immediate_data``."""
        ...
    @property
    def result_conn(self) -> RdmaConnectionHandle | None:
        """``doca_rdma_task_receive_get_result_rdma_connection``."""
        ...


class RdmaTaskSendHandle(RdmaTaskConnHandle, Protocol):
    """``doca_rdma_task_send``."""

    def set_src_buf(self, buf: BufHandle | None) -> None:
        """``doca_rdma_task_send_set_src_buf``."""
        ...


class RdmaTaskSendImmHandle(RdmaTaskSendHandle, Protocol):
    """``doca_rdma_task_send_imm``."""

    #: ``doca_rdma_task_send_imm_{get,set}_immediate_data`` (``doca_be32_t`` as an int).
    imm: int


class RdmaTaskReadWriteHandle(RdmaTaskConnHandle, Protocol):
    """``doca_rdma_task_read`` and ``doca_rdma_task_write``."""

    def set_src_buf(self, buf: BufHandle) -> None:
        """``doca_rdma_task_<read|write>_set_src_buf``."""
        ...
    def set_dst_buf(self, buf: BufHandle) -> None:
        """``doca_rdma_task_<read|write>_set_dst_buf``."""
        ...


class RdmaTaskWriteImmHandle(RdmaTaskReadWriteHandle, Protocol):
    """``doca_rdma_task_write_imm``."""

    #: ``doca_rdma_task_write_imm_{get,set}_immediate_data``.
    imm: int


class RdmaTaskAtomicHandle(RdmaTaskConnHandle, Protocol):
    """What ``doca_rdma_task_atomic_cmp_swp`` and ``_fetch_add`` share."""

    def set_dst_buf(self, buf: BufHandle) -> None:
        """``doca_rdma_task_atomic_<type>_set_dst_buf``."""
        ...
    def set_result_buf(self, buf: BufHandle) -> None:
        """``doca_rdma_task_atomic_<type>_set_result_buf``."""
        ...


class RdmaTaskAtomicCmpSwpHandle(RdmaTaskAtomicHandle, Protocol):
    """``doca_rdma_task_atomic_cmp_swp``."""

    #: ``doca_rdma_task_atomic_cmp_swp_{get,set}_cmp_data``.
    cmp: int
    #: ``doca_rdma_task_atomic_cmp_swp_{get,set}_swap_data``.
    swap: int


class RdmaTaskAtomicFetchAddHandle(RdmaTaskAtomicHandle, Protocol):
    """``doca_rdma_task_atomic_fetch_add``."""

    #: ``doca_rdma_task_atomic_fetch_add_{get,set}_add_data``.
    add: int


class RdmaHandle(CtxHandle, Protocol):
    """``doca_rdma`` as a backend implements it."""

    @property
    def receive(self) -> TaskPoolHandle:
        """Backend: the receive task type (``doca_rdma_task_receive``)."""
    @property
    def send(self) -> TaskPoolHandle:
        """Backend: the send task type (``doca_rdma_task_send``)."""
    @property
    def send_imm(self) -> TaskPoolHandle:
        """Backend: the send imm task type (``doca_rdma_task_send_imm``)."""
    @property
    def read(self) -> TaskPoolHandle:
        """Backend: the read task type (``doca_rdma_task_read``)."""
    @property
    def write(self) -> TaskPoolHandle:
        """Backend: the write task type (``doca_rdma_task_write``)."""
    @property
    def write_imm(self) -> TaskPoolHandle:
        """Backend: the write imm task type (``doca_rdma_task_write_imm``)."""
    @property
    def atomic_cmp_swp(self) -> TaskPoolHandle:
        """Backend: the atomic cmp swp task type (``doca_rdma_task_atomic_cmp_swp``)."""
    @property
    def atomic_fetch_add(self) -> TaskPoolHandle:
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
    def set_connection_state_cb(self, cb: Callable[[int, RdmaConnectionHandle], None]) -> None:
        """``doca_rdma_set_connection_state_cb``."""
    def export(self) -> tuple[bytes, RdmaConnectionHandle]:
        """``doca_rdma_export``."""
    def connect(self, blob: bytes, conn: RdmaConnectionHandle) -> None:
        """``doca_rdma_connect``."""
    def start_listen_to_port(self, port: int) -> int:
        """``doca_rdma_start_listen_to_port``."""
    def stop_listen_to_port(self, port: int) -> None:
        """``doca_rdma_stop_listen_to_port``."""
    def connect_to_addr(self, addr_type: int, address: str, port: int) -> RdmaConnectionHandle:
        """``doca_rdma_connect_to_addr``."""
    def task_receive_allocate_init(self, dst: BufHandle | None) -> RdmaTaskReceiveHandle:
        """``doca_rdma_task_receive_allocate_init``."""
    def task_send_allocate_init(self, conn: RdmaConnectionHandle, src: BufHandle | None) -> RdmaTaskSendHandle:
        """``doca_rdma_task_send_allocate_init``."""
    def task_send_imm_allocate_init(self, conn: RdmaConnectionHandle, src: BufHandle | None, imm: int) -> RdmaTaskSendImmHandle:
        """``doca_rdma_task_send_imm_allocate_init``."""
    def task_read_allocate_init(self, conn: RdmaConnectionHandle, src: BufHandle, dst: BufHandle) -> RdmaTaskReadWriteHandle:
        """``doca_rdma_task_read_allocate_init``."""
    def task_write_allocate_init(self, conn: RdmaConnectionHandle, src: BufHandle, dst: BufHandle) -> RdmaTaskReadWriteHandle:
        """``doca_rdma_task_write_allocate_init``."""
    def task_write_imm_allocate_init(self, conn: RdmaConnectionHandle, src: BufHandle, dst: BufHandle, imm: int) -> RdmaTaskWriteImmHandle:
        """``doca_rdma_task_write_imm_allocate_init``."""
    def task_atomic_cmp_swp_allocate_init(self, conn: RdmaConnectionHandle, dst: BufHandle, result: BufHandle, cmp: int,
                                          swap: int) -> RdmaTaskAtomicCmpSwpHandle:
        """``doca_rdma_task_atomic_cmp_swp_allocate_init``."""
    def task_atomic_fetch_add_allocate_init(self, conn: RdmaConnectionHandle, dst: BufHandle, result: BufHandle,
                                            add: int) -> RdmaTaskAtomicFetchAddHandle:
        """``doca_rdma_task_atomic_fetch_add_allocate_init``."""


class RdmaBackend(Protocol):
    """Module ``doca_py.<impl>.rdma``."""

    def rdma_create(self, dev: DevHandle) -> RdmaHandle:
        """``doca_rdma_rdma_create``."""
    def cap_get_max_recv_queue_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_rdma_cap_get_max_recv_queue_size``."""
    def cap_get_max_send_queue_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_rdma_cap_get_max_send_queue_size``."""
    def cap_get_max_send_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_rdma_cap_get_max_send_buf_list_len``."""
    def cap_get_max_message_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_rdma_cap_get_max_message_size``."""
    def cap_get_gid_table_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_rdma_cap_get_gid_table_size``."""
    def cap_get_gid(self, devinfo: DevInfoHandle, start: int, num: int) -> list[bytes]:
        """``doca_rdma_cap_get_gid``."""
    def cap_transport_type_is_supported(self, devinfo: DevInfoHandle, transport: int) -> bool:
        """``doca_rdma_cap_transport_type_is_supported``."""
    def cap_task_is_supported(self, devinfo: DevInfoHandle, task: str) -> bool:
        """``doca_rdma_cap_task_is_supported``."""
    def cap_task_receive_get_max_dst_buf_list_len(self, devinfo: DevInfoHandle, transport: int) -> int:
        """``doca_rdma_cap_task_receive_get_max_dst_buf_list_len``."""
