"""Native comch fast path: ``doca_comch_consumer`` and ``doca_comch_producer``
(``doca_comch_consumer.h``, ``doca_comch_producer.h``; part of :mod:`doca_py.native.comch`).

A consumer posts receive buffers on one comch connection, a producer sends buffers to
a remote consumer id, both as ctxs of their own. DOCA 2.x has no immediate data:
anything needing it raises :class:`~doca_py.errors.DocaNotSupported` naming the
loaded version, and the immediate-data getters report nothing.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import Any, TypeVar, cast

from .._backend.protocols.core import BufHandle, DevInfoHandle, MmapHandle
from ..errors import DocaBadState, DocaInvalidValue, check
from .comch_connection import (
    U32_MAX,
    NativeComchConnection,
    cl,
    has_imm_api,
    need_imm,
    u32,
    u32_cap,
    u32_cap_or,
)
from .borrow import non_null
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, buf_ptr, get_u32, init_ctx, is_supported

__all__ = [
    "NativeComchConsumer",
    "NativeComchProducer",
    "NativeComchConsumerTaskPostRecv",
    "NativeComchProducerTaskSend",
    "consumer_create",
    "producer_create",
    "consumer_cap_is_supported",
    "consumer_cap_get_max_num_tasks",
    "consumer_cap_get_max_buf_size",
    "consumer_cap_get_max_buf_list_len",
    "consumer_cap_get_max_consumers",
    "consumer_cap_get_max_imm_data_len",
    "producer_cap_is_supported",
    "producer_cap_get_max_num_tasks",
    "producer_cap_get_max_buf_size",
    "producer_cap_get_max_buf_list_len",
    "producer_cap_get_max_producers",
]

_byref = ctypes.byref


# -- tasks ------------------------------------------------------------------------------------------
class NativeComchConsumerTaskPostRecv(EngineTask):
    """``doca_comch_consumer_task_post_recv *``."""

    __slots__ = ()

    def set_buf(self, buf: BufHandle) -> None:
        cl().doca_comch_consumer_task_post_recv_set_buf(self.ptr, buf_ptr(buf))

    def get_buf(self) -> int | None:
        """The receive ``doca_buf *``."""
        return cl().doca_comch_consumer_task_post_recv_get_buf(self.ptr)

    @property
    def producer_id(self) -> int:
        """The producer that filled the buffer (0 if none)."""
        return int(cl().doca_comch_consumer_task_post_recv_get_producer_id(self.ptr))

    @property
    def imm(self) -> bytes:
        """A copy of the received immediate data (empty if none, and always on DOCA 2.x)."""
        l = cl()
        if not has_imm_api(l):
            return b""
        n = int(l.doca_comch_consumer_task_post_recv_get_imm_data_len(self.ptr))
        p = l.doca_comch_consumer_task_post_recv_get_imm_data(self.ptr) if n else None
        return ctypes.string_at(p, n) if p else b""


class NativeComchProducerTaskSend(EngineTask):
    """``doca_comch_producer_task_send *``."""

    __slots__ = ("imm_keep",)

    def __init__(self, ptr: int, pool: EngineTaskPool) -> None:
        super().__init__(ptr, pool)
        self.imm_keep = b""  # the immediate data passed to DOCA, kept alive with the task

    def set_buf(self, buf: BufHandle) -> None:
        cl().doca_comch_producer_task_send_set_buf(self.ptr, buf_ptr(buf))

    def get_buf(self) -> int | None:
        """The source ``doca_buf *``."""
        return cl().doca_comch_producer_task_send_get_buf(self.ptr)

    @property
    def consumer_id(self) -> int:
        return int(cl().doca_comch_producer_task_send_get_consumer_id(self.ptr))

    def set_consumer_id(self, consumer_id: int) -> None:
        if not 0 < consumer_id <= U32_MAX:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        cl().doca_comch_producer_task_send_set_consumer_id(self.ptr, consumer_id)

    @property
    def imm(self) -> bytes:
        """A copy of the task's immediate data (always empty on DOCA 2.x)."""
        l = cl()
        if not has_imm_api(l):
            return b""
        n = int(l.doca_comch_producer_task_send_get_imm_data_len(self.ptr))
        p = l.doca_comch_producer_task_send_get_imm_data(self.ptr) if n else None
        return ctypes.string_at(p, n) if p else b""

    def set_imm_data(self, imm: bytes) -> None:
        data = bytes(imm)
        l = cl()
        if not has_imm_api(l):
            if data:
                raise need_imm("doca_comch_producer_task_send_set_imm_data")
            return
        self.imm_keep = data
        l.doca_comch_producer_task_send_set_imm_data(self.ptr, data or None, len(data))

_S = TypeVar("_S", bound="NativeCtx")  # typing.Self is 3.11+


def _on_conn(cls: Any, ptr: int, conn: Any, borrowed: bool) -> Any:
    """``cls.from_ptr`` of a consumer or producer: like ``Borrowable.from_ptr``, and the ctx needs its
    connection (DOCA cannot tell it: there is no ``doca_comch_consumer_get_connection``)."""
    non_null(f"{cls.__name__}.from_ptr", ptr)
    if conn is None:
        raise DocaInvalidValue(f"{cls.__name__}.from_ptr needs the comch connection it was created on")
    c = _conn(conn)
    obj = cls.__new__(cls)
    obj.borrowed = borrowed  # before __init__: init_ctx reads it
    obj.__init__(ptr, c)
    return obj


# -- fast path --------------------------------------------------------------------------------------
class NativeComchConsumer(NativeCtx):
    """``doca_comch_consumer *`` and its ctx."""

    def __init__(self, ptr: int | None, conn: NativeComchConnection) -> None:
        l = cl()
        self.ptr = ptr
        self.conn = conn
        init_ctx(self, ptr, l.doca_comch_consumer_as_ctx, l.doca_comch_consumer_destroy, "doca_comch_consumer")
        name = "doca_comch_consumer_task_post_recv"
        self.post_recv = EngineTaskPool(self, partial(l.doca_comch_consumer_task_post_recv_set_conf, ptr), name,
                                        l.doca_comch_consumer_task_post_recv_as_task,
                                        NativeComchConsumerTaskPostRecv, "post_recv")
        self._id: int | None = None

    @classmethod
    def from_ptr(cls: type[_S], ptr: int, conn: Any = None, *, borrowed: bool = True) -> _S:
        """Wrap the ``doca_comch_consumer *`` at *ptr*, made on *conn* (required); borrowed unless told otherwise."""
        obj: _S = _on_conn(cls, ptr, conn, borrowed)
        return obj

    def get_id(self) -> int:
        if self._id is None:
            self._id = get_u32(cl().doca_comch_consumer_get_id, self.ptr)
        return self._id

    def set_imm_data_len(self, n: int) -> None:
        v = u32(n, "imm_data_len")
        l = cl()
        if not has_imm_api(l):
            if v == 0:
                return  # what DOCA 2.x has
            raise need_imm(f"imm_data_len={v}")
        check(l.doca_comch_consumer_set_imm_data_len(self.ptr, v), "doca_comch_consumer_set_imm_data_len")

    def get_imm_data_len(self) -> int:
        l = cl()
        if not has_imm_api(l):
            return 0
        return get_u32(l.doca_comch_consumer_get_imm_data_len, self.ptr)

    def task_post_recv_alloc_init(self, buf: BufHandle) -> NativeComchConsumerTaskPostRecv:
        pool = self.post_recv
        what = "doca_comch_consumer_task_post_recv_alloc_init"
        rc = cl().doca_comch_consumer_task_post_recv_alloc_init(self.ptr, buf_ptr(buf), _byref(pool.out))
        return cast(NativeComchConsumerTaskPostRecv, pool.take(rc, what))


class NativeComchProducer(NativeCtx):
    """``doca_comch_producer *`` and its ctx."""

    def __init__(self, ptr: int | None, conn: NativeComchConnection) -> None:
        l = cl()
        self.ptr = ptr
        self.conn = conn
        init_ctx(self, ptr, l.doca_comch_producer_as_ctx, l.doca_comch_producer_destroy, "doca_comch_producer")
        name = "doca_comch_producer_task_send"
        self.send = EngineTaskPool(self, partial(l.doca_comch_producer_task_send_set_conf, ptr), name,
                                   l.doca_comch_producer_task_send_as_task, NativeComchProducerTaskSend, "send")
        self._id: int | None = None

    @classmethod
    def from_ptr(cls: type[_S], ptr: int, conn: Any = None, *, borrowed: bool = True) -> _S:
        """Wrap the ``doca_comch_producer *`` at *ptr*, made on *conn* (required); borrowed unless told otherwise."""
        obj: _S = _on_conn(cls, ptr, conn, borrowed)
        return obj

    def get_id(self) -> int:
        if self._id is None:
            self._id = get_u32(cl().doca_comch_producer_get_id, self.ptr)
        return self._id

    def task_send_alloc_init(self, buf: BufHandle, imm: bytes, consumer_id: int) -> NativeComchProducerTaskSend:
        """A send of *buf* (with *imm*, DOCA 3.x only) to the remote consumer *consumer_id*."""
        if not 0 < consumer_id <= U32_MAX:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        data = bytes(imm)
        l = cl()
        pool = self.send
        what = "doca_comch_producer_task_send_alloc_init"
        if has_imm_api(l):
            rc = l.doca_comch_producer_task_send_alloc_init(self.ptr, buf_ptr(buf), data or None, len(data),
                                                            consumer_id, _byref(pool.out))
        elif data:
            raise need_imm(f"a producer send with {len(data)} bytes of immediate data")
        else:
            rc = l.doca_comch_producer_task_send_alloc_init(self.ptr, buf_ptr(buf), consumer_id, _byref(pool.out))
        t = cast(NativeComchProducerTaskSend, pool.take(rc, what))
        t.imm_keep = data
        return t

# -- factories --------------------------------------------------------------------------------------
def _conn(conn: Any) -> NativeComchConnection:
    if conn.__class__ is not NativeComchConnection:
        raise DocaInvalidValue("not a native comch connection")
    return conn


def _established(conn: Any, what: str) -> NativeComchConnection:
    # A closed connection's pointer may be gone: answer as DOCA does for one not established. A client's
    # connection goes with its ctx's RUNNING state (DOCA frees it at the stop), not only at a disconnect.
    c = _conn(conn)
    if not c.is_connected():
        raise DocaBadState(f"{what}: the comch connection is not established")
    return c


def consumer_create(conn: Any, mmap: MmapHandle) -> NativeComchConsumer:
    """``doca_comch_consumer_create`` on a connection and a native mmap."""
    c = _established(conn, "doca_comch_consumer_create")
    out = ctypes.c_void_p()
    check(cl().doca_comch_consumer_create(c.ptr, getattr(mmap, "ptr"), _byref(out)), "doca_comch_consumer_create")
    return NativeComchConsumer(out.value, c)


def producer_create(conn: Any) -> NativeComchProducer:
    """``doca_comch_producer_create`` on a connection."""
    c = _established(conn, "doca_comch_producer_create")
    out = ctypes.c_void_p()
    check(cl().doca_comch_producer_create(c.ptr, _byref(out)), "doca_comch_producer_create")
    return NativeComchProducer(out.value, c)

# -- capabilities -----------------------------------------------------------------------------------
def consumer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(cl().doca_comch_consumer_cap_is_supported, devinfo)


def consumer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_consumer_cap_get_max_num_tasks", devinfo)


def consumer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_consumer_cap_get_max_buf_size", devinfo)


def consumer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    """Chained receive buffers; 1 on DOCA 2.6, which has no such capability."""
    return u32_cap_or("doca_comch_consumer_cap_get_max_buf_list_len", devinfo, 1)


def consumer_cap_get_max_consumers(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_consumer_cap_get_max_consumers", devinfo)


def consumer_cap_get_max_imm_data_len(devinfo: DevInfoHandle) -> int:
    """Immediate-data bytes; 0 on DOCA 2.x, which has no immediate data."""
    return u32_cap_or("doca_comch_consumer_cap_get_max_imm_data_len", devinfo, 0)


def producer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(cl().doca_comch_producer_cap_is_supported, devinfo)


def producer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_producer_cap_get_max_num_tasks", devinfo)


def producer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_producer_cap_get_max_buf_size", devinfo)


def producer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    """Chained send buffers; 1 on DOCA 2.6, which has no such capability."""
    return u32_cap_or("doca_comch_producer_cap_get_max_buf_list_len", devinfo, 1)


def producer_cap_get_max_producers(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_producer_cap_get_max_producers", devinfo)
