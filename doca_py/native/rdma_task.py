"""Native ``doca_rdma_task_*`` (part of :mod:`doca_py.native.rdma`).

One wrapper class for every task type; :data:`TASK_FNS` names, per task type, the C
functions it calls. The names are spelled out (not built from the type name) so a
``grep`` for a DOCA function finds where it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from .._backend.protocols.core import BufHandle
from ..errors import DocaInvalidValue
from .engine import EngineTask, EngineTaskPool, buf_ptr
from .rdma_connection import NativeRdmaConnection, rd

if TYPE_CHECKING:
    from .rdma import NativeRdma

__all__ = ["NativeRdmaTask", "TASK_TYPES", "TASK_FNS"]

#: Task types of the public API, as in the C names.
TASK_TYPES = ("receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cmp_swp", "atomic_fetch_add")

#: Per task type: operation → C function (``cap_*`` are the device capability probes).
TASK_FNS: dict[str, dict[str, str]] = {
    "receive": {
        "cap_is_supported": "doca_rdma_cap_task_receive_is_supported",
        "cap_get_max_dst_buf_list_len": "doca_rdma_cap_task_receive_get_max_dst_buf_list_len",
        "set_conf": "doca_rdma_task_receive_set_conf",
        "set_dst_buf_list_len": "doca_rdma_task_receive_set_dst_buf_list_len",
        "get_dst_buf_list_len": "doca_rdma_task_receive_get_dst_buf_list_len",
        "allocate_init": "doca_rdma_task_receive_allocate_init",
        "as_task": "doca_rdma_task_receive_as_task",
        "set_dst_buf": "doca_rdma_task_receive_set_dst_buf",
        "get_dst_buf": "doca_rdma_task_receive_get_dst_buf",
        "get_result_opcode": "doca_rdma_task_receive_get_result_opcode",
        "get_result_len": "doca_rdma_task_receive_get_result_len",
        "get_result_immediate_data": "doca_rdma_task_receive_get_result_immediate_data",
        "get_result_rdma_connection": "doca_rdma_task_receive_get_result_rdma_connection",
    },
    "send": {
        "cap_is_supported": "doca_rdma_cap_task_send_is_supported",
        "set_conf": "doca_rdma_task_send_set_conf",
        "allocate_init": "doca_rdma_task_send_allocate_init",
        "as_task": "doca_rdma_task_send_as_task",
        "set_src_buf": "doca_rdma_task_send_set_src_buf",
        "get_src_buf": "doca_rdma_task_send_get_src_buf",
        "set_rdma_connection": "doca_rdma_task_send_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_send_get_rdma_connection",
    },
    "send_imm": {
        "cap_is_supported": "doca_rdma_cap_task_send_imm_is_supported",
        "set_conf": "doca_rdma_task_send_imm_set_conf",
        "allocate_init": "doca_rdma_task_send_imm_allocate_init",
        "as_task": "doca_rdma_task_send_imm_as_task",
        "set_src_buf": "doca_rdma_task_send_imm_set_src_buf",
        "get_src_buf": "doca_rdma_task_send_imm_get_src_buf",
        "set_immediate_data": "doca_rdma_task_send_imm_set_immediate_data",
        "get_immediate_data": "doca_rdma_task_send_imm_get_immediate_data",
        "set_rdma_connection": "doca_rdma_task_send_imm_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_send_imm_get_rdma_connection",
    },
    "read": {
        "cap_is_supported": "doca_rdma_cap_task_read_is_supported",
        "set_conf": "doca_rdma_task_read_set_conf",
        "allocate_init": "doca_rdma_task_read_allocate_init",
        "as_task": "doca_rdma_task_read_as_task",
        "set_src_buf": "doca_rdma_task_read_set_src_buf",
        "get_src_buf": "doca_rdma_task_read_get_src_buf",
        "set_dst_buf": "doca_rdma_task_read_set_dst_buf",
        "get_dst_buf": "doca_rdma_task_read_get_dst_buf",
        "get_result_len": "doca_rdma_task_read_get_result_len",
        "set_rdma_connection": "doca_rdma_task_read_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_read_get_rdma_connection",
    },
    "write": {
        "cap_is_supported": "doca_rdma_cap_task_write_is_supported",
        "set_conf": "doca_rdma_task_write_set_conf",
        "allocate_init": "doca_rdma_task_write_allocate_init",
        "as_task": "doca_rdma_task_write_as_task",
        "set_src_buf": "doca_rdma_task_write_set_src_buf",
        "get_src_buf": "doca_rdma_task_write_get_src_buf",
        "set_dst_buf": "doca_rdma_task_write_set_dst_buf",
        "get_dst_buf": "doca_rdma_task_write_get_dst_buf",
        "set_rdma_connection": "doca_rdma_task_write_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_write_get_rdma_connection",
    },
    "write_imm": {
        "cap_is_supported": "doca_rdma_cap_task_write_imm_is_supported",
        "set_conf": "doca_rdma_task_write_imm_set_conf",
        "allocate_init": "doca_rdma_task_write_imm_allocate_init",
        "as_task": "doca_rdma_task_write_imm_as_task",
        "set_src_buf": "doca_rdma_task_write_imm_set_src_buf",
        "get_src_buf": "doca_rdma_task_write_imm_get_src_buf",
        "set_dst_buf": "doca_rdma_task_write_imm_set_dst_buf",
        "get_dst_buf": "doca_rdma_task_write_imm_get_dst_buf",
        "set_immediate_data": "doca_rdma_task_write_imm_set_immediate_data",
        "get_immediate_data": "doca_rdma_task_write_imm_get_immediate_data",
        "set_rdma_connection": "doca_rdma_task_write_imm_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_write_imm_get_rdma_connection",
    },
    "atomic_cmp_swp": {
        "cap_is_supported": "doca_rdma_cap_task_atomic_cmp_swp_is_supported",
        "set_conf": "doca_rdma_task_atomic_cmp_swp_set_conf",
        "allocate_init": "doca_rdma_task_atomic_cmp_swp_allocate_init",
        "as_task": "doca_rdma_task_atomic_cmp_swp_as_task",
        "set_dst_buf": "doca_rdma_task_atomic_cmp_swp_set_dst_buf",
        "get_dst_buf": "doca_rdma_task_atomic_cmp_swp_get_dst_buf",
        "set_result_buf": "doca_rdma_task_atomic_cmp_swp_set_result_buf",
        "get_result_buf": "doca_rdma_task_atomic_cmp_swp_get_result_buf",
        "set_cmp_data": "doca_rdma_task_atomic_cmp_swp_set_cmp_data",
        "get_cmp_data": "doca_rdma_task_atomic_cmp_swp_get_cmp_data",
        "set_swap_data": "doca_rdma_task_atomic_cmp_swp_set_swap_data",
        "get_swap_data": "doca_rdma_task_atomic_cmp_swp_get_swap_data",
        "set_rdma_connection": "doca_rdma_task_atomic_cmp_swp_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_atomic_cmp_swp_get_rdma_connection",
    },
    "atomic_fetch_add": {
        "cap_is_supported": "doca_rdma_cap_task_atomic_fetch_add_is_supported",
        "set_conf": "doca_rdma_task_atomic_fetch_add_set_conf",
        "allocate_init": "doca_rdma_task_atomic_fetch_add_allocate_init",
        "as_task": "doca_rdma_task_atomic_fetch_add_as_task",
        "set_dst_buf": "doca_rdma_task_atomic_fetch_add_set_dst_buf",
        "get_dst_buf": "doca_rdma_task_atomic_fetch_add_get_dst_buf",
        "set_result_buf": "doca_rdma_task_atomic_fetch_add_set_result_buf",
        "get_result_buf": "doca_rdma_task_atomic_fetch_add_get_result_buf",
        "set_add_data": "doca_rdma_task_atomic_fetch_add_set_add_data",
        "get_add_data": "doca_rdma_task_atomic_fetch_add_get_add_data",
        "set_rdma_connection": "doca_rdma_task_atomic_fetch_add_set_rdma_connection",
        "get_rdma_connection": "doca_rdma_task_atomic_fetch_add_get_rdma_connection",
    },
}


class NativeRdmaTask(EngineTask):
    """A ``doca_rdma_task_* *`` of any type; ``kind`` is its C task type (``"send"`` …).

    Buffer, connection, immediate and atomic operands are reached through the
    library's setters and getters; receive results through ``opcode``,
    ``result_len``, ``imm`` and ``result_conn``.
    """

    __slots__ = ()
    pool: EngineTaskPool  # the task type's pool: its kind and its C functions (resolved by NativeRdma)

    @property
    def kind(self) -> str:
        return self.pool.kind

    @property
    def rdma(self) -> NativeRdma:
        return cast("NativeRdma", self.pool.ctx)

    def _fn(self, what: str) -> Any:
        try:
            return self.pool.fns[what]
        except KeyError:
            raise AttributeError(f"rdma {self.kind} tasks have no {what}") from None

    def _call(self, what: str, *args: Any) -> Any:
        return self._fn(what)(self.ptr, *args)

    # -- buffers
    def set_src_buf(self, buf: BufHandle | None) -> None:
        self._call("set_src_buf", buf_ptr(buf))

    def get_src_buf(self) -> int | None:
        return cast("int | None", self._call("get_src_buf"))

    def set_dst_buf(self, buf: BufHandle | None) -> None:
        self._call("set_dst_buf", buf_ptr(buf))

    def get_dst_buf(self) -> int | None:
        return cast("int | None", self._call("get_dst_buf"))

    def set_result_buf(self, buf: BufHandle) -> None:
        self._call("set_result_buf", buf_ptr(buf))

    def get_result_buf(self) -> int | None:
        return cast("int | None", self._call("get_result_buf"))

    # -- connection
    def set_rdma_connection(self, conn: Any) -> None:
        r = self.rdma
        if not r.conn_api:
            r.check_implicit(conn)
            return
        self._call("set_rdma_connection", r.conn_ptr(conn))

    def get_rdma_connection(self) -> NativeRdmaConnection | None:
        r = self.rdma
        if not r.conn_api:
            return r.implicit
        ptr = self._call("get_rdma_connection")
        return None if not ptr else r.conn_for(ptr)

    # -- immediate data (doca_be32_t, passed through unchanged)
    @property
    def imm(self) -> int:
        if self.kind == "receive":
            return int(self._call("get_result_immediate_data"))
        return int(self._call("get_immediate_data"))

    @imm.setter
    def imm(self, value: int) -> None:
        if not 0 <= value <= 0xFFFFFFFF:
            raise DocaInvalidValue(f"immediate data {value} does not fit in 32 bits")
        self._call("set_immediate_data", value)

    # -- results
    @property
    def opcode(self) -> int:
        """``doca_rdma_task_receive_get_result_opcode``."""
        return int(self._call("get_result_opcode"))

    @property
    def result_len(self) -> int:
        """Bytes received (receive) or read (read)."""
        try:  # read per received message: one frame and the C call
            fn = self.pool.fns["get_result_len"]
        except KeyError:
            raise AttributeError(f"rdma {self.kind} tasks have no get_result_len") from None
        return int(fn(self.ptr))

    def result_len_reader(self) -> Callable[[], int]:
        """The C getter bound to this task's pointer: each read is the ctypes call alone (the getter's
        ``uint32_t`` comes back as an ``int``)."""
        return cast("Callable[[], int]", partial(self._fn("get_result_len"), self.ptr))

    @property
    def result_conn(self) -> NativeRdmaConnection | None:
        """The connection a receive arrived on (DOCA 2.6: the implicit one)."""
        r = self.rdma
        if not r.conn_api:
            return r.implicit
        ptr = self._call("get_result_rdma_connection")
        return None if not ptr else r.conn_for(ptr)

    # -- atomics (uint64_t operands)
    @property
    def cmp(self) -> int:
        return int(self._call("get_cmp_data"))

    @cmp.setter
    def cmp(self, value: int) -> None:
        self._call("set_cmp_data", value & _U64)

    @property
    def swap(self) -> int:
        return int(self._call("get_swap_data"))

    @swap.setter
    def swap(self, value: int) -> None:
        self._call("set_swap_data", value & _U64)

    @property
    def add(self) -> int:
        return int(self._call("get_add_data"))

    @add.setter
    def add(self, value: int) -> None:
        self._call("set_add_data", value & _U64)


_U64 = (1 << 64) - 1
