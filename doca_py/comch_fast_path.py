"""``doca_comch_consumer`` and ``doca_comch_producer``: comch's fast path on an established connection.

Import these names from [`doca_py.comch`][doca_py.comch] (or ``doca_py``); this module is where they live.
"""

from __future__ import annotations

from typing import Any

from ._args import expect, wrong_type
from ._backend import backend
from ._backend.protocols.comch import ComchConsumerHandle, ComchProducerHandle
from .buf import Buf, freed_buf
from .comch_connection import ComchConnection
from .comch_tasks import ComchConsumerTaskPostRecv, ComchProducerTaskSend
from .ctx import Ctx, TaskCallback
from .dev import DevInfo, devinfo_handle
from .errors import DocaInvalidValue
from .mmap import Mmap

__all__ = ["ComchConsumer", "ComchProducer"]


class ComchConsumer(Ctx):
    """``doca_comch_consumer``: receives producer data into buffers of *mmap*.

    ``start`` returns STARTING (DOCA: ``IN_PROGRESS``); the ctx is RUNNING after the next
    ``Pe.progress``, and the peer gets ``new_consumer(connection, id)``. A submitted receive
    is posted when ``Pe.progress`` runs it; until then the peer's producer sends to this
    consumer are refused with ``DocaAgain``. Stopping it fires ``expired_consumer``."""

    @classmethod
    def from_handle(cls, connection: ComchConnection, mmap: Mmap, handle: ComchConsumerHandle | int,
                    user_data: Any = None) -> ComchConsumer:
        """Python-only: wrap an existing ``doca_comch_consumer`` made on *connection* with *mmap*, without taking
        ownership (it keeps its state, configuration and Pe).

        *handle* is another wrapper's ``handle``: on the native backend the address of a C
        ``doca_comch_consumer``, on the emulated backend the backend object. DOCA cannot tell a consumer's
        connection or mmap, so they are arguments (the receive buffers must be of *mmap*). The wrapper is
        borrowed: its ``close`` never stops or destroys the DOCA object, which its creator destroys after
        closing this wrapper; it closes with *connection*'s server or client and with *mmap*.
        """
        if isinstance(handle, int):
            connection._ctx._check_open()
            c = cls(connection, mmap, user_data, _handle=backend.borrow_comch_consumer(handle, connection._h))
        else:
            c = cls(connection, mmap, user_data, _handle=handle)
        c._borrow()
        return c

    def __init__(self, connection: ComchConnection, mmap: Mmap, user_data: Any = None, *,
                 _handle: ComchConsumerHandle | None = None) -> None:
        expect("ComchConsumer", ComchConnection, connection=connection)
        expect("ComchConsumer", Mmap, mmap=mmap)
        owner = connection._ctx
        owner._check_open()
        mmap._check_open()
        self._h: ComchConsumerHandle = backend.comch.consumer_create(connection._h, mmap._h) if _handle is None \
            else _handle
        super().__init__(self._h, user_data)
        owner._adopt(self)  # closed before its server/client
        mmap._adopt(self)  # and before its memory
        self._connection = connection
        self._mmap = mmap

    def get_id(self) -> int:
        """``doca_comch_consumer_get_id``: the connection-unique id the peer's producers address."""
        return self._h.get_id()

    def get_connection(self) -> ComchConnection:
        """Python-only: the connection this consumer was created on (DOCA has no getter for it)."""
        return self._connection

    def set_imm_data_len(self, n: int) -> None:
        """``doca_comch_consumer_set_imm_data_len``: largest immediate data accepted (before start; default: the
        capability)."""
        self._check_open()
        self._h.set_imm_data_len(n)

    def get_imm_data_len(self) -> int:
        """``doca_comch_consumer_get_imm_data_len``: the imm data len."""
        return self._h.get_imm_data_len()

    def task_post_recv_set_conf(self, success: TaskCallback[ComchConsumerTaskPostRecv],
                                error: TaskCallback[ComchConsumerTaskPostRecv], num_tasks: int) -> None:
        """``doca_comch_consumer_task_post_recv_set_conf``: register the receive completion callbacks and size the
        task pool (before start)."""
        self._set_conf(self._h.post_recv, success, error, num_tasks)

    def task_post_recv_alloc_init(self, buf: Buf, user_data: Any = None) -> ComchConsumerTaskPostRecv:
        """``doca_comch_consumer_task_post_recv_alloc_init``: a receive task for *buf* (a buffer of the consumer's
        mmap)."""
        if not isinstance(buf, Buf):
            raise wrong_type("ComchConsumer.task_post_recv_alloc_init", Buf, buf=buf)
        if buf._closed:
            raise freed_buf("ComchConsumer.task_post_recv_alloc_init", buf=buf)
        if buf.mmap is not self._mmap:
            raise DocaInvalidValue("the receive buffer must belong to the consumer's mmap")
        h = self._h.task_post_recv_alloc_init(buf._h)
        t = self._wrap_task(h, ComchConsumerTaskPostRecv, user_data)
        t._buf = buf
        return t

    @staticmethod
    def cap_is_supported(devinfo: DevInfo) -> bool:
        """``doca_comch_consumer_cap_is_supported``: whether *devinfo* supports ."""
        return backend.comch.consumer_cap_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_num_tasks(devinfo: DevInfo) -> int:
        """``doca_comch_consumer_cap_get_max_num_tasks``: the largest num tasks *devinfo* supports."""
        return backend.comch.consumer_cap_get_max_num_tasks(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_buf_size(devinfo: DevInfo) -> int:
        """``doca_comch_consumer_cap_get_max_buf_size``: the largest buf size *devinfo* supports."""
        return backend.comch.consumer_cap_get_max_buf_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_comch_consumer_cap_get_max_buf_list_len``: the largest buf list len *devinfo* supports."""
        return backend.comch.consumer_cap_get_max_buf_list_len(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_consumers(devinfo: DevInfo) -> int:
        """``doca_comch_consumer_cap_get_max_consumers``: the largest consumers *devinfo* supports."""
        return backend.comch.consumer_cap_get_max_consumers(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_imm_data_len(devinfo: DevInfo) -> int:
        """``doca_comch_consumer_cap_get_max_imm_data_len``: the largest imm data len *devinfo* supports."""
        return backend.comch.consumer_cap_get_max_imm_data_len(devinfo_handle(devinfo))

    def __enter__(self) -> ComchConsumer:
        return self


class ComchProducer(Ctx):
    """``doca_comch_producer``: sends buffers to the peer's consumers (``start`` → RUNNING)."""

    @classmethod
    def from_handle(cls, connection: ComchConnection, handle: ComchProducerHandle | int,
                    user_data: Any = None) -> ComchProducer:
        """Python-only: wrap an existing ``doca_comch_producer`` made on *connection*, without taking ownership (it
        keeps its state, configuration and Pe).

        *handle* is another wrapper's ``handle``: on the native backend the address of a C
        ``doca_comch_producer``, on the emulated backend the backend object. DOCA cannot tell a producer's
        connection, so it is an argument. The wrapper is borrowed: its ``close`` never stops or destroys
        the DOCA object, which its creator destroys after closing this wrapper; it closes with
        *connection*'s server or client.
        """
        if isinstance(handle, int):
            connection._ctx._check_open()
            c = cls(connection, user_data, _handle=backend.borrow_comch_producer(handle, connection._h))
        else:
            c = cls(connection, user_data, _handle=handle)
        c._borrow()
        return c

    def __init__(self, connection: ComchConnection, user_data: Any = None, *,
                 _handle: ComchProducerHandle | None = None) -> None:
        expect("ComchProducer", ComchConnection, connection=connection)
        owner = connection._ctx
        owner._check_open()
        self._h: ComchProducerHandle = backend.comch.producer_create(connection._h) if _handle is None else _handle
        super().__init__(self._h, user_data)
        owner._adopt(self)
        self._connection = connection

    def get_id(self) -> int:
        """``doca_comch_producer_get_id``: the id consumers report
        ([`ComchConsumerTaskPostRecv.get_producer_id`][doca_py.comch.ComchConsumerTaskPostRecv.get_producer_id])."""
        return self._h.get_id()

    def get_connection(self) -> ComchConnection:
        """Python-only: the connection this producer was created on (DOCA has no getter for it)."""
        return self._connection

    def task_send_set_conf(self, success: TaskCallback[ComchProducerTaskSend],
                           error: TaskCallback[ComchProducerTaskSend], num_tasks: int) -> None:
        """``doca_comch_producer_task_send_set_conf``: register the send completion callbacks and size the task pool
        (before start)."""
        self._set_conf(self._h.send, success, error, num_tasks)

    def task_send_alloc_init(self, buf: Buf, imm_data: bytes | None, consumer_id: int,
                             user_data: Any = None) -> ComchProducerTaskSend:
        """``doca_comch_producer_task_send_alloc_init``: a send of *buf*'s data (and *imm_data*, copied) to the remote
        consumer *consumer_id* (its ``submit`` raises ``DocaAgain`` while that consumer has no receive posted)."""
        if not isinstance(buf, Buf):
            raise wrong_type("ComchProducer.task_send_alloc_init", Buf, buf=buf)
        if buf._closed:
            raise freed_buf("ComchProducer.task_send_alloc_init", buf=buf)
        h = self._h.task_send_alloc_init(buf._h, bytes(imm_data or b""), consumer_id)
        t = self._wrap_task(h, ComchProducerTaskSend, user_data)
        t._buf = buf
        return t

    @staticmethod
    def cap_is_supported(devinfo: DevInfo) -> bool:
        """``doca_comch_producer_cap_is_supported``: whether *devinfo* supports ."""
        return backend.comch.producer_cap_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_num_tasks(devinfo: DevInfo) -> int:
        """``doca_comch_producer_cap_get_max_num_tasks``: the largest num tasks *devinfo* supports."""
        return backend.comch.producer_cap_get_max_num_tasks(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_buf_size(devinfo: DevInfo) -> int:
        """``doca_comch_producer_cap_get_max_buf_size``: the largest buf size *devinfo* supports."""
        return backend.comch.producer_cap_get_max_buf_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_comch_producer_cap_get_max_buf_list_len``: the largest buf list len *devinfo* supports."""
        return backend.comch.producer_cap_get_max_buf_list_len(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_producers(devinfo: DevInfo) -> int:
        """``doca_comch_producer_cap_get_max_producers``: the largest producers *devinfo* supports."""
        return backend.comch.producer_cap_get_max_producers(devinfo_handle(devinfo))

    def __enter__(self) -> ComchProducer:
        return self
