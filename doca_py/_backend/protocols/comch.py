"""Protocols of ``doca_comch`` (module ``doca_py.<impl>.comch``): server, client, connections, the fast
path's consumer and producer, and their task handles."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .core import BufHandle, CtxHandle, DevHandle, DevInfoHandle, DevRepHandle, MmapHandle, TaskHandle, TaskPoolHandle


class ComchTaskSendHandle(TaskHandle, Protocol):
    """``doca_comch_task_send`` (a control message)."""


class ComchConsumerTaskPostRecvHandle(TaskHandle, Protocol):
    """``doca_comch_consumer_task_post_recv``."""

    def set_buf(self, buf: BufHandle) -> None:
        """``doca_comch_consumer_task_post_recv_set_buf``."""
        ...
    @property
    def producer_id(self) -> int:
        """``doca_comch_consumer_task_post_recv_get_producer_id``."""
        ...
    @property
    def imm(self) -> bytes:
        """``doca_comch_consumer_task_post_recv_get_imm_data``."""
        ...


class ComchProducerTaskSendHandle(TaskHandle, Protocol):
    """``doca_comch_producer_task_send``."""

    def set_buf(self, buf: BufHandle) -> None:
        """``doca_comch_producer_task_send_set_buf``."""
        ...
    @property
    def consumer_id(self) -> int:
        """``doca_comch_producer_task_send_get_consumer_id``."""
        ...
    def set_consumer_id(self, consumer_id: int) -> None:
        """``doca_comch_producer_task_send_set_consumer_id``."""
        ...
    @property
    def imm(self) -> bytes:
        """``doca_comch_producer_task_send_get_imm_data``."""
        ...
    def set_imm_data(self, imm: bytes) -> None:
        """``doca_comch_producer_task_send_set_imm_data``."""
        ...


class ComchConnectionHandle(Protocol):
    """``doca_comch_connection`` as a backend implements it."""

    #: The public [`ComchConnection`][doca_py.comch.ComchConnection] wrapping it (``None`` until wrapped).
    owner: object

    def is_server_side(self) -> bool:
        """``doca_comch_is_server_side``."""
    def is_connected(self) -> bool:
        """``doca_comch_is_connected``."""
    def update_info(self) -> None:
        """``doca_comch_update_info``."""
    def get_counter(self, counter: int) -> int:
        """``doca_comch_get_counter``."""


class ComchEndpointHandle(CtxHandle, Protocol):
    """What ``doca_comch_server`` and ``doca_comch_client`` share. Events call back with the
    public connection object that ``set_wrap``'s function made for a handle."""

    @property
    def send(self) -> TaskPoolHandle:
        """Backend: the send task type (``doca_comch_task_send``)."""
    def set_max_msg_size(self, value: int) -> None:
        """``doca_comch_<side>_set_max_msg_size``."""
    def get_max_msg_size(self) -> int:
        """``doca_comch_<side>_get_max_msg_size``."""
    def set_recv_queue_size(self, value: int) -> None:
        """``doca_comch_<side>_set_recv_queue_size``."""
    def get_recv_queue_size(self) -> int:
        """``doca_comch_<side>_get_recv_queue_size``."""
    def set_wrap(self, wrap: Callable[[ComchConnectionHandle], object]) -> None:
        """``doca_comch_set_wrap``."""
    def set_event_cb(self, kind: str, cb: Callable[..., None] | None) -> None:
        """``doca_comch_set_event_cb``."""
    def task_send_alloc_init(self, conn: ComchConnectionHandle, data: bytes | bytearray | memoryview) -> ComchTaskSendHandle:
        """``doca_comch_task_send_alloc_init``."""


class ComchServerHandle(ComchEndpointHandle, Protocol):
    """``doca_comch_server``."""

    def disconnect(self, conn: ComchConnectionHandle) -> None:
        """``doca_comch_disconnect``."""
    def get_connections(self) -> Sequence[ComchConnectionHandle]:
        """``doca_comch_get_connections``."""


class ComchClientHandle(ComchEndpointHandle, Protocol):
    """``doca_comch_client``."""

    def get_connection(self) -> ComchConnectionHandle:
        """``doca_comch_get_connection``."""


class ComchConsumerHandle(CtxHandle, Protocol):
    """``doca_comch_consumer``."""

    @property
    def post_recv(self) -> TaskPoolHandle:
        """Backend: the post-recv task type (``doca_comch_consumer_task_post_recv``)."""
    def get_id(self) -> int:
        """``doca_comch_get_id``."""
    def set_imm_data_len(self, n: int) -> None:
        """``doca_comch_set_imm_data_len``."""
    def get_imm_data_len(self) -> int:
        """``doca_comch_get_imm_data_len``."""
    def task_post_recv_alloc_init(self, buf: BufHandle) -> ComchConsumerTaskPostRecvHandle:
        """``doca_comch_task_post_recv_alloc_init``."""


class ComchProducerHandle(CtxHandle, Protocol):
    """``doca_comch_producer``."""

    @property
    def send(self) -> TaskPoolHandle:
        """Backend: the send task type (``doca_comch_producer_task_send``)."""
    def get_id(self) -> int:
        """``doca_comch_get_id``."""
    def task_send_alloc_init(self, buf: BufHandle, imm: bytes, consumer_id: int) -> ComchProducerTaskSendHandle:
        """``doca_comch_task_send_alloc_init``."""


class ComchBackend(Protocol):
    """Module ``doca_py.<impl>.comch``."""

    def server_create(self, dev: DevHandle, rep: DevRepHandle, name: str) -> ComchServerHandle:
        """``doca_comch_server_create``."""
    def client_create(self, dev: DevHandle, name: str) -> ComchClientHandle:
        """``doca_comch_client_create``."""
    def consumer_create(self, conn: ComchConnectionHandle, mmap: MmapHandle) -> ComchConsumerHandle:
        """``doca_comch_consumer_create``."""
    def producer_create(self, conn: ComchConnectionHandle) -> ComchProducerHandle:
        """``doca_comch_producer_create``."""
    def cap_server_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_comch_cap_server_is_supported``."""
    def cap_client_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_comch_cap_client_is_supported``."""
    def cap_get_max_name_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_cap_get_max_name_len``."""
    def cap_get_max_msg_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_cap_get_max_msg_size``."""
    def cap_get_max_recv_queue_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_cap_get_max_recv_queue_size``."""
    def cap_get_max_clients(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_cap_get_max_clients``."""
    def cap_get_max_send_tasks(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_cap_get_max_send_tasks``."""
    def consumer_cap_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_comch_consumer_cap_is_supported``."""
    def consumer_cap_get_max_num_tasks(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_consumer_cap_get_max_num_tasks``."""
    def consumer_cap_get_max_buf_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_consumer_cap_get_max_buf_size``."""
    def consumer_cap_get_max_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_consumer_cap_get_max_buf_list_len``."""
    def consumer_cap_get_max_consumers(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_consumer_cap_get_max_consumers``."""
    def consumer_cap_get_max_imm_data_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_consumer_cap_get_max_imm_data_len``."""
    def producer_cap_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_comch_producer_cap_is_supported``."""
    def producer_cap_get_max_num_tasks(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_producer_cap_get_max_num_tasks``."""
    def producer_cap_get_max_buf_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_producer_cap_get_max_buf_size``."""
    def producer_cap_get_max_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_producer_cap_get_max_buf_list_len``."""
    def producer_cap_get_max_producers(self, devinfo: DevInfoHandle) -> int:
        """``doca_comch_producer_cap_get_max_producers``."""
