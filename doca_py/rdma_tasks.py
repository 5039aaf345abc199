"""The ``doca_rdma`` task types: receive, send, read, write and atomics (DOCA 3.x API).

Import these names from [`doca_py.rdma`][doca_py.rdma] (or ``doca_py``); this module is where they live.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ._args import caller, wrong_type
from ._backend.protocols.rdma import (
    RdmaTaskAtomicCmpSwpHandle,
    RdmaTaskAtomicFetchAddHandle,
    RdmaTaskAtomicHandle,
    RdmaTaskConnHandle,
    RdmaTaskReadWriteHandle,
    RdmaTaskReceiveHandle,
    RdmaTaskSendHandle,
    RdmaTaskSendImmHandle,
    RdmaTaskWriteImmHandle,
)
from .buf import Buf, freed_buf
from .ctx import Task, TaskCallback, TaskT
from .errors import DocaInvalidValue
from .rdma_connection import RdmaConnection
from .types import NamedIntEnum

if TYPE_CHECKING:
    from collections.abc import Callable

    from ._backend.protocols.core import TaskHandle, TaskPoolHandle
    from ._backend.protocols.rdma import RdmaConnectionHandle, RdmaHandle

__all__ = [
    "RdmaOpcode", "RdmaTaskReceive", "RdmaTaskSend", "RdmaTaskSendImm", "RdmaTaskRead", "RdmaTaskWrite",
    "RdmaTaskWriteImm", "RdmaTaskAtomicCmpSwp", "RdmaTaskAtomicFetchAdd", "RdmaTransferTasks",
]


class RdmaOpcode(NamedIntEnum):
    """``enum doca_rdma_opcode``: what filled a receive task."""

    RECV_SEND = 0
    """``DOCA_RDMA_OPCODE_RECV_SEND``."""
    RECV_SEND_WITH_IMM = 1
    """``DOCA_RDMA_OPCODE_RECV_SEND_WITH_IMM``."""
    RECV_WRITE_WITH_IMM = 2
    """``DOCA_RDMA_OPCODE_RECV_WRITE_WITH_IMM``."""


class _ConnTask(Task):
    __slots__ = ("_conn",)
    _h: RdmaTaskConnHandle
    _conn: RdmaConnection

    def get_rdma_connection(self) -> RdmaConnection:
        """``doca_rdma_task_<type>_get_rdma_connection``: the rdma connection."""
        return self._conn

    def set_rdma_connection(self, connection: RdmaConnection) -> None:
        """``doca_rdma_task_<type>_set_rdma_connection``: set the rdma connection to *connection*."""
        if not isinstance(connection, RdmaConnection):
            raise wrong_type(f"{type(self).__name__}.set_rdma_connection", RdmaConnection, connection=connection)
        self._h.set_rdma_connection(connection._h)
        self._conn = connection


class RdmaTaskReceive(Task):
    """``doca_rdma_task_receive``: a posted receive, filled by the peer's send (or write
    with immediate). The received bytes are appended after the destination's data."""

    __slots__ = ("_dst",)
    _h: RdmaTaskReceiveHandle
    _dst: Buf | None

    def get_dst_buf(self) -> Buf | None:
        """``doca_rdma_task_receive_get_dst_buf``: the dst buf."""
        return self._dst

    def set_dst_buf(self, dst: Buf | None) -> None:
        """``doca_rdma_task_receive_set_dst_buf``: set the dst buf to *dst*."""
        if not isinstance(dst, (Buf, type(None))):
            raise wrong_type("RdmaTaskReceive.set_dst_buf", (Buf, type(None)), dst=dst)
        if dst is not None and dst._closed:
            raise freed_buf("RdmaTaskReceive.set_dst_buf", dst=dst)
        self._h.set_dst_buf(None if dst is None else dst._h)
        self._dst = dst

    def get_result_opcode(self) -> RdmaOpcode:
        """``doca_rdma_task_receive_get_result_opcode``: which peer operation filled the receive (valid after
        success)."""
        return RdmaOpcode(self._h.opcode)

    def get_result_len(self) -> int:
        """``doca_rdma_task_receive_get_result_len``: bytes received (for ``RECV_WRITE_WITH_IMM``: bytes the peer
        wrote)."""
        return int(self._h.result_len)

    def result_len_reader(self) -> Callable[[], int]:
        """Python-only, the fast lane: a function returning what
        [`get_result_len`][doca_py.rdma_tasks.RdmaTaskReceive.get_result_len] returns, in one call.

        It is the backend's getter bound to this task (the C function and the task's pointer on the native
        path), so a read runs no Python frame: keep it with the task, as
        [`submitter`][doca_py.ctx.Task.submitter], and call it from the completion callback. Valid until the
        task is freed.

        ```python
        received_len = task.result_len_reader()
        n = received_len()            # in the receive callback, per message
        ```
        """
        return self._h.result_len_reader()

    def get_result_immediate_data(self) -> int:
        """``doca_rdma_task_receive_get_result_immediate_data``: the immediate of a ``*_WITH_IMM`` opcode
        (``doca_be32_t``, as sent)."""
        return int(self._h.imm)

    def get_result_rdma_connection(self) -> RdmaConnection | None:
        """``doca_rdma_task_receive_get_result_rdma_connection``: the connection the message arrived on."""
        h = self._h.result_conn
        return None if h is None else cast(RdmaConnection, h.owner)


class RdmaTaskSend(_ConnTask):
    """``doca_rdma_task_send``: the source's data to the peer's next posted receive."""

    __slots__ = ("_src",)
    _h: RdmaTaskSendHandle
    _src: Buf | None

    def get_src_buf(self) -> Buf | None:
        """``doca_rdma_task_send_get_src_buf``: the src buf."""
        return self._src

    def set_src_buf(self, src: Buf | None) -> None:
        """``doca_rdma_task_send_set_src_buf``: set the src buf to *src*."""
        if not isinstance(src, (Buf, type(None))):
            raise wrong_type(f"{type(self).__name__}.set_src_buf", (Buf, type(None)), src=src)
        if src is not None and src._closed:
            raise freed_buf(f"{type(self).__name__}.set_src_buf", src=src)
        self._h.set_src_buf(None if src is None else src._h)
        self._src = src


def _imm32(imm: int) -> int:
    if not 0 <= imm <= 0xFFFFFFFF:
        raise DocaInvalidValue("immediate data is 32 bits")
    return imm


class RdmaTaskSendImm(RdmaTaskSend):
    """``doca_rdma_task_send_imm``: a send carrying 32 bits of immediate data."""

    __slots__ = ()
    _h: RdmaTaskSendImmHandle

    def get_immediate_data(self) -> int:
        """``doca_rdma_task_send_imm_get_immediate_data``: the immediate data."""
        return int(self._h.imm)

    def set_immediate_data(self, imm: int) -> None:
        """``doca_rdma_task_send_imm_set_immediate_data``: set the immediate data to *imm* (32 bits)."""
        self._h.imm = _imm32(imm)


class _OneSidedTask(_ConnTask):
    __slots__ = ("_src", "_dst")
    _h: RdmaTaskReadWriteHandle
    _src: Buf
    _dst: Buf

    def get_src_buf(self) -> Buf:
        """``doca_rdma_task_<type>_get_src_buf``: the src buf."""
        return self._src

    def set_src_buf(self, src: Buf) -> None:
        """``doca_rdma_task_<type>_set_src_buf``: set the src buf to *src*."""
        if not isinstance(src, Buf):
            raise wrong_type(f"{type(self).__name__}.set_src_buf", Buf, src=src)
        if src._closed:
            raise freed_buf(f"{type(self).__name__}.set_src_buf", src=src)
        self._h.set_src_buf(src._h)
        self._src = src

    def get_dst_buf(self) -> Buf:
        """``doca_rdma_task_<type>_get_dst_buf``: the dst buf."""
        return self._dst

    def set_dst_buf(self, dst: Buf) -> None:
        """``doca_rdma_task_<type>_set_dst_buf``: set the dst buf to *dst*."""
        if not isinstance(dst, Buf):
            raise wrong_type(f"{type(self).__name__}.set_dst_buf", Buf, dst=dst)
        if dst._closed:
            raise freed_buf(f"{type(self).__name__}.set_dst_buf", dst=dst)
        self._h.set_dst_buf(dst._h)
        self._dst = dst


class RdmaTaskRead(_OneSidedTask):
    """``doca_rdma_task_read``: the remote source's data into the local destination."""

    __slots__ = ()


class RdmaTaskWrite(_OneSidedTask):
    """``doca_rdma_task_write``: the local source's data after the remote destination's data."""

    __slots__ = ()


class RdmaTaskWriteImm(RdmaTaskWrite):
    """``doca_rdma_task_write_imm``: a write that also completes a receive on the peer
    (opcode ``RECV_WRITE_WITH_IMM``)."""

    __slots__ = ()
    _h: RdmaTaskWriteImmHandle

    def get_immediate_data(self) -> int:
        """``doca_rdma_task_write_imm_get_immediate_data``: the immediate data."""
        return int(self._h.imm)

    def set_immediate_data(self, imm: int) -> None:
        """``doca_rdma_task_write_imm_set_immediate_data``: set the immediate data to *imm* (32 bits)."""
        self._h.imm = _imm32(imm)


class _AtomicTask(_ConnTask):
    __slots__ = ("_dst", "_result")
    _h: RdmaTaskAtomicHandle
    _dst: Buf
    _result: Buf

    def get_dst_buf(self) -> Buf:
        """``doca_rdma_task_atomic_<type>_get_dst_buf``: the dst buf."""
        return self._dst

    def set_dst_buf(self, dst: Buf) -> None:
        """``doca_rdma_task_atomic_<type>_set_dst_buf``: set the dst buf to *dst*."""
        if not isinstance(dst, Buf):
            raise wrong_type(f"{type(self).__name__}.set_dst_buf", Buf, dst=dst)
        if dst._closed:
            raise freed_buf(f"{type(self).__name__}.set_dst_buf", dst=dst)
        self._h.set_dst_buf(dst._h)
        self._dst = dst

    def get_result_buf(self) -> Buf:
        """``doca_rdma_task_atomic_<type>_get_result_buf``: the result buf."""
        return self._result

    def set_result_buf(self, result: Buf) -> None:
        """``doca_rdma_task_atomic_<type>_set_result_buf``: set the result buf to *result*."""
        if not isinstance(result, Buf):
            raise wrong_type(f"{type(self).__name__}.set_result_buf", Buf, result=result)
        if result._closed:
            raise freed_buf(f"{type(self).__name__}.set_result_buf", result=result)
        self._h.set_result_buf(result._h)
        self._result = result


class RdmaTaskAtomicCmpSwp(_AtomicTask):
    """``doca_rdma_task_atomic_cmp_swp``: 64-bit compare-and-swap at the remote
    destination; the old value (native byte order) is appended to the result buffer."""

    __slots__ = ()
    _h: RdmaTaskAtomicCmpSwpHandle

    def get_cmp_data(self) -> int:
        """``doca_rdma_task_atomic_cmp_swp_get_cmp_data``: the cmp data."""
        return int(self._h.cmp)

    def set_cmp_data(self, cmp: int) -> None:
        """``doca_rdma_task_atomic_cmp_swp_set_cmp_data``: set the cmp data to *cmp*."""
        self._h.cmp = cmp & (1 << 64) - 1

    def get_swap_data(self) -> int:
        """``doca_rdma_task_atomic_cmp_swp_get_swap_data``: the swap data."""
        return int(self._h.swap)

    def set_swap_data(self, swap: int) -> None:
        """``doca_rdma_task_atomic_cmp_swp_set_swap_data``: set the swap data to *swap*."""
        self._h.swap = swap & (1 << 64) - 1


class RdmaTaskAtomicFetchAdd(_AtomicTask):
    """``doca_rdma_task_atomic_fetch_add``: 64-bit fetch-and-add at the remote destination."""

    __slots__ = ()
    _h: RdmaTaskAtomicFetchAddHandle

    def get_add_data(self) -> int:
        """``doca_rdma_task_atomic_fetch_add_get_add_data``: the add data."""
        return int(self._h.add)

    def set_add_data(self, add: int) -> None:
        """``doca_rdma_task_atomic_fetch_add_set_add_data``: set the add data to *add*."""
        self._h.add = add & (1 << 64) - 1


class RdmaTransferTasks:
    """[`Rdma`][doca_py.rdma.Rdma]'s transfer task methods — receive, send, read, write and atomics: their
    configuration (before start) and allocation (a base of ``Rdma``, as
    [`RdmaSyncEventTasks`][doca_py.rdma_sync_event.RdmaSyncEventTasks] holds the sync-event ones)."""

    #: What errors name its static methods by (``_args.caller``): the public class.
    _public_name = "Rdma"

    if TYPE_CHECKING:
        _h: RdmaHandle

        def _set_conf(self, pool: TaskPoolHandle, success: Any, error: Any, num_tasks: int) -> None: ...
        def _wrap_task(self, h: TaskHandle, factory: Callable[[TaskHandle, Any], TaskT],
                       user_data: Any) -> TaskT: ...

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
    def _check_conn(conn: RdmaConnection) -> RdmaConnectionHandle:
        if not isinstance(conn, RdmaConnection):
            raise wrong_type(caller(), RdmaConnection, connection=conn)
        return conn._h

    def task_receive_allocate_init(self, dst: Buf | None, user_data: Any = None) -> RdmaTaskReceive:
        """``doca_rdma_task_receive_allocate_init``: a receive task posting *dst* (``None``: immediate-only
        messages)."""
        if not isinstance(dst, (Buf, type(None))):
            raise wrong_type("Rdma.task_receive_allocate_init", (Buf, type(None)), dst=dst)
        if dst is not None and dst._closed:
            raise freed_buf("Rdma.task_receive_allocate_init", dst=dst)
        t = self._wrap_task(self._h.task_receive_allocate_init(None if dst is None else dst._h), RdmaTaskReceive,
                            user_data)
        t._dst = dst
        return t

    def task_send_allocate_init(self, connection: RdmaConnection, src: Buf | None,
                                user_data: Any = None) -> RdmaTaskSend:
        """``doca_rdma_task_send_allocate_init``: a send of *src*'s data (``None``: an empty message) on
        *connection*."""
        if not isinstance(src, (Buf, type(None))):
            raise wrong_type("Rdma.task_send_allocate_init", (Buf, type(None)), src=src)
        if src is not None and src._closed:
            raise freed_buf("Rdma.task_send_allocate_init", src=src)
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
        if not isinstance(src, (Buf, type(None))):
            raise wrong_type("Rdma.task_send_imm_allocate_init", (Buf, type(None)), src=src)
        if src is not None and src._closed:
            raise freed_buf("Rdma.task_send_imm_allocate_init", src=src)
        h = self._h.task_send_imm_allocate_init(self._check_conn(connection), None if src is None else src._h,
                                                immediate_data)
        t = self._wrap_task(h, RdmaTaskSendImm, user_data)
        t._conn, t._src = connection, src
        return t

    def task_read_allocate_init(self, connection: RdmaConnection, src: Buf, dst: Buf,
                                user_data: Any = None) -> RdmaTaskRead:
        """``doca_rdma_task_read_allocate_init``: read the remote *src* (a buffer of an RDMA-imported mmap) into local
        *dst*."""
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Rdma.task_read_allocate_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Rdma.task_read_allocate_init", src=src, dst=dst)
        h = self._h.task_read_allocate_init(self._check_conn(connection), src._h, dst._h)
        t = self._wrap_task(h, RdmaTaskRead, user_data)
        t._conn, t._src, t._dst = connection, src, dst
        return t

    def task_write_allocate_init(self, connection: RdmaConnection, src: Buf, dst: Buf,
                                 user_data: Any = None) -> RdmaTaskWrite:
        """``doca_rdma_task_write_allocate_init``: write local *src* into the remote *dst* (a buffer of an
        RDMA-imported mmap)."""
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Rdma.task_write_allocate_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Rdma.task_write_allocate_init", src=src, dst=dst)
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
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Rdma.task_write_imm_allocate_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Rdma.task_write_imm_allocate_init", src=src, dst=dst)
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
        if not (isinstance(dst, Buf) and isinstance(result, Buf)):
            raise wrong_type("Rdma.task_atomic_cmp_swp_allocate_init", Buf, dst=dst, result=result)
        if dst._closed or result._closed:
            raise freed_buf("Rdma.task_atomic_cmp_swp_allocate_init", dst=dst, result=result)
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
        if not (isinstance(dst, Buf) and isinstance(result, Buf)):
            raise wrong_type("Rdma.task_atomic_fetch_add_allocate_init", Buf, dst=dst, result=result)
        if dst._closed or result._closed:
            raise freed_buf("Rdma.task_atomic_fetch_add_allocate_init", dst=dst, result=result)
        h = self._h.task_atomic_fetch_add_allocate_init(self._check_conn(connection), dst._h, result._h, add_data)
        t = self._wrap_task(h, RdmaTaskAtomicFetchAdd, user_data)
        t._conn, t._dst, t._result = connection, dst, result
        return t
