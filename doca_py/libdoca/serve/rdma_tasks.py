"""libdoca_rdma's tasks served by the emulator: receive, send, send-with-immediate, read, write,
write-with-immediate and the two atomics.

A typed task pointer and its ``doca_task`` are one handle. Task types that share an emulated class (send and
send_imm, write and write_imm, the atomics, and the remote sync-event tasks built on read, write and atomic)
are told apart by their pool: a ``doca_rdma_task_send *`` must come from the ctx's send pool. The C names are
spelled out, one registration per function, so a search for a DOCA function finds what serves it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ...emulated.buf import EmuBuf
from ...emulated.ctx import EmuTask
from ...emulated.rdma.remote_tasks import EmuRdmaTaskAtomic, EmuRdmaTaskRead, EmuRdmaTaskWrite
from ...emulated.rdma.tasks import EmuRdmaTaskReceive, EmuRdmaTaskSend
from ...emulated.rdma import cap_task_is_supported as emu_cap_task_is_supported
from ...emulated.dev import EmuDevInfo
from ...errors import DocaInvalidValue, DocaNotSupported
from ._core import handle, impl, obj
from .common import alloc_or_fail, buf_of, opt_buf, task_set_conf
from .rdma import conn_of, opt_conn_handle, rdma_of, split_conn

__all__ = ["task_getter", "buf_handle", "typed_task"]

T = TypeVar("T", bound=EmuTask)
_U64 = (1 << 64) - 1


def typed_task(cls: type[T], pool: str, what: str) -> Callable[[int | None], T]:
    """The resolver of ``doca_rdma_task_<what> *``: a *cls* task of its ctx's *pool*."""

    def get(p: int | None) -> T:
        t = obj(p, cls, what)
        if getattr(t.ctx, pool, None) is not t.pool:
            raise DocaInvalidValue(f"{what}: {p:#x} is a task of another type")
        return t

    return get


def buf_handle(b: EmuBuf | None) -> int | None:
    """A buffer getter's result: the buf's handle, NULL for none."""
    return handle(b) if b is not None else None


def task_getter(name: str, resolve: Callable[[int | None], Any], attr: str,
                conv: Callable[[Any], Any] = int) -> None:
    """Serve getter *name*: the task's attribute *attr* through *conv*."""

    def get(p: int | None) -> Any:
        return conv(getattr(resolve(p), attr))

    impl(name)(get)


def _u32(v: int) -> int:
    if not 0 <= v <= 0xFFFFFFFF:
        raise DocaInvalidValue(f"immediate data {v} does not fit in 32 bits")
    return v


def _cap(name: str, kind: str) -> None:
    def cap(info: int | None) -> None:
        if not emu_cap_task_is_supported(obj(info, EmuDevInfo, "doca_devinfo"), kind):
            raise DocaNotSupported(f"the device has no rdma {kind} task")

    impl(name)(cap)


def _conf(name: str, pool: str) -> None:
    def set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
        task_set_conf(getattr(rdma_of(p), pool), ok, err, num)

    impl(name)(set_conf)


def _as_task(name: str, resolve: Callable[[int | None], EmuTask]) -> None:
    def as_task(p: int | None) -> int:
        return handle(resolve(p))

    impl(name)(as_task)


def _buf_setter(name: str, resolve: Callable[[int | None], Any], method: str, nullable: bool = False) -> None:
    def set_(p: int | None, b: int | None) -> None:
        getattr(resolve(p), method)(opt_buf(b) if nullable else buf_of(b))

    impl(name)(set_)


def _conn_accessors(prefix: str, resolve: Callable[[int | None], Any]) -> None:
    """``<prefix>_set_rdma_connection`` / ``_get_rdma_connection`` (DOCA 3.x)."""

    def set_(p: int | None, c: int | None) -> None:
        t = resolve(p)
        conn = conn_of(c)
        if conn.ctx is not t.ctx:
            raise DocaInvalidValue("the connection does not belong to the task's rdma ctx")
        t.set_rdma_connection(conn)

    def get(p: int | None) -> int | None:
        return opt_conn_handle(resolve(p).conn)

    impl(f"{prefix}_set_rdma_connection")(set_)
    impl(f"{prefix}_get_rdma_connection")(get)


def _value_setter(name: str, resolve: Callable[[int | None], Any], attr: str, conv: Callable[[int], int]) -> None:
    def set_(p: int | None, v: int) -> None:
        setattr(resolve(p), attr, conv(v))

    impl(name)(set_)


# -- receive -----------------------------------------------------------------------------------------

_receive = typed_task(EmuRdmaTaskReceive, "receive", "doca_rdma_task_receive")
_cap("doca_rdma_cap_task_receive_is_supported", "receive")
_conf("doca_rdma_task_receive_set_conf", "receive")
_as_task("doca_rdma_task_receive_as_task", _receive)
_buf_setter("doca_rdma_task_receive_set_dst_buf", _receive, "set_dst_buf", nullable=True)
task_getter("doca_rdma_task_receive_get_dst_buf", _receive, "dst", buf_handle)
task_getter("doca_rdma_task_receive_get_result_opcode", _receive, "opcode")
task_getter("doca_rdma_task_receive_get_result_len", _receive, "result_len")
task_getter("doca_rdma_task_receive_get_result_immediate_data", _receive, "imm")
task_getter("doca_rdma_task_receive_get_result_rdma_connection", _receive, "result_conn", opt_conn_handle)


@impl("doca_rdma_task_receive_allocate_init")
def _receive_alloc(p: int | None, dst: int | None, ud: int, out: int | None) -> None:
    r = rdma_of(p)
    d = opt_buf(dst)
    alloc_or_fail(lambda: r.task_receive_allocate_init(d), ud, out)


# -- send / send with immediate ----------------------------------------------------------------------

_send = typed_task(EmuRdmaTaskSend, "send", "doca_rdma_task_send")
_cap("doca_rdma_cap_task_send_is_supported", "send")
_conf("doca_rdma_task_send_set_conf", "send")
_as_task("doca_rdma_task_send_as_task", _send)
_buf_setter("doca_rdma_task_send_set_src_buf", _send, "set_src_buf", nullable=True)
task_getter("doca_rdma_task_send_get_src_buf", _send, "src", buf_handle)
_conn_accessors("doca_rdma_task_send", _send)


@impl("doca_rdma_task_send_allocate_init")
def _send_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (src, ud, out) = split_conn(r, args, 3)
    s = opt_buf(src)
    alloc_or_fail(lambda: r.task_send_allocate_init(conn, s), ud, out)


_send_imm = typed_task(EmuRdmaTaskSend, "send_imm", "doca_rdma_task_send_imm")
_cap("doca_rdma_cap_task_send_imm_is_supported", "send_imm")
_conf("doca_rdma_task_send_imm_set_conf", "send_imm")
_as_task("doca_rdma_task_send_imm_as_task", _send_imm)
_buf_setter("doca_rdma_task_send_imm_set_src_buf", _send_imm, "set_src_buf", nullable=True)
task_getter("doca_rdma_task_send_imm_get_src_buf", _send_imm, "src", buf_handle)
_value_setter("doca_rdma_task_send_imm_set_immediate_data", _send_imm, "imm", _u32)
task_getter("doca_rdma_task_send_imm_get_immediate_data", _send_imm, "imm")
_conn_accessors("doca_rdma_task_send_imm", _send_imm)


@impl("doca_rdma_task_send_imm_allocate_init")
def _send_imm_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (src, imm, ud, out) = split_conn(r, args, 4)
    s = opt_buf(src)
    alloc_or_fail(lambda: r.task_send_imm_allocate_init(conn, s, imm), ud, out)


# -- read --------------------------------------------------------------------------------------------

_read = typed_task(EmuRdmaTaskRead, "read", "doca_rdma_task_read")
_cap("doca_rdma_cap_task_read_is_supported", "read")
_conf("doca_rdma_task_read_set_conf", "read")
_as_task("doca_rdma_task_read_as_task", _read)
_buf_setter("doca_rdma_task_read_set_src_buf", _read, "set_src_buf")
task_getter("doca_rdma_task_read_get_src_buf", _read, "src", buf_handle)
_buf_setter("doca_rdma_task_read_set_dst_buf", _read, "set_dst_buf")
task_getter("doca_rdma_task_read_get_dst_buf", _read, "dst", buf_handle)
_conn_accessors("doca_rdma_task_read", _read)


@impl("doca_rdma_task_read_get_result_len")
def _read_result_len(p: int | None) -> int:
    t = _read(p)
    return t.nbytes if t.status == 0 and not t.inflight else 0  # the bytes of its last successful run


@impl("doca_rdma_task_read_allocate_init")
def _read_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (src, dst, ud, out) = split_conn(r, args, 4)
    s, d = buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: r.task_read_allocate_init(conn, s, d), ud, out)


# -- write / write with immediate --------------------------------------------------------------------

_write = typed_task(EmuRdmaTaskWrite, "write", "doca_rdma_task_write")
_cap("doca_rdma_cap_task_write_is_supported", "write")
_conf("doca_rdma_task_write_set_conf", "write")
_as_task("doca_rdma_task_write_as_task", _write)
_buf_setter("doca_rdma_task_write_set_src_buf", _write, "set_src_buf")
task_getter("doca_rdma_task_write_get_src_buf", _write, "src", buf_handle)
_buf_setter("doca_rdma_task_write_set_dst_buf", _write, "set_dst_buf")
task_getter("doca_rdma_task_write_get_dst_buf", _write, "dst", buf_handle)
_conn_accessors("doca_rdma_task_write", _write)


@impl("doca_rdma_task_write_allocate_init")
def _write_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (src, dst, ud, out) = split_conn(r, args, 4)
    s, d = buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: r.task_write_allocate_init(conn, s, d), ud, out)


_write_imm = typed_task(EmuRdmaTaskWrite, "write_imm", "doca_rdma_task_write_imm")
_cap("doca_rdma_cap_task_write_imm_is_supported", "write_imm")
_conf("doca_rdma_task_write_imm_set_conf", "write_imm")
_as_task("doca_rdma_task_write_imm_as_task", _write_imm)
_buf_setter("doca_rdma_task_write_imm_set_src_buf", _write_imm, "set_src_buf")
task_getter("doca_rdma_task_write_imm_get_src_buf", _write_imm, "src", buf_handle)
_buf_setter("doca_rdma_task_write_imm_set_dst_buf", _write_imm, "set_dst_buf")
task_getter("doca_rdma_task_write_imm_get_dst_buf", _write_imm, "dst", buf_handle)
_value_setter("doca_rdma_task_write_imm_set_immediate_data", _write_imm, "imm", _u32)
task_getter("doca_rdma_task_write_imm_get_immediate_data", _write_imm, "imm")
_conn_accessors("doca_rdma_task_write_imm", _write_imm)


@impl("doca_rdma_task_write_imm_allocate_init")
def _write_imm_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (src, dst, imm, ud, out) = split_conn(r, args, 5)
    s, d = buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: r.task_write_imm_allocate_init(conn, s, d, imm), ud, out)


# -- atomics -----------------------------------------------------------------------------------------

def _u64(v: int) -> int:
    return v & _U64


_cas = typed_task(EmuRdmaTaskAtomic, "atomic_cmp_swp", "doca_rdma_task_atomic_cmp_swp")
_cap("doca_rdma_cap_task_atomic_cmp_swp_is_supported", "atomic_cmp_swp")
_conf("doca_rdma_task_atomic_cmp_swp_set_conf", "atomic_cmp_swp")
_as_task("doca_rdma_task_atomic_cmp_swp_as_task", _cas)
_buf_setter("doca_rdma_task_atomic_cmp_swp_set_dst_buf", _cas, "set_dst_buf")
task_getter("doca_rdma_task_atomic_cmp_swp_get_dst_buf", _cas, "dst", buf_handle)
_buf_setter("doca_rdma_task_atomic_cmp_swp_set_result_buf", _cas, "set_result_buf")
task_getter("doca_rdma_task_atomic_cmp_swp_get_result_buf", _cas, "result", buf_handle)
_value_setter("doca_rdma_task_atomic_cmp_swp_set_cmp_data", _cas, "cmp", _u64)
task_getter("doca_rdma_task_atomic_cmp_swp_get_cmp_data", _cas, "cmp")
_value_setter("doca_rdma_task_atomic_cmp_swp_set_swap_data", _cas, "swap", _u64)
task_getter("doca_rdma_task_atomic_cmp_swp_get_swap_data", _cas, "swap")
_conn_accessors("doca_rdma_task_atomic_cmp_swp", _cas)


@impl("doca_rdma_task_atomic_cmp_swp_allocate_init")
def _cas_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (dst, result, cmp, swap, ud, out) = split_conn(r, args, 6)
    d, res = buf_of(dst), buf_of(result)
    alloc_or_fail(lambda: r.task_atomic_cmp_swp_allocate_init(conn, d, res, cmp, swap), ud, out)


_fadd = typed_task(EmuRdmaTaskAtomic, "atomic_fetch_add", "doca_rdma_task_atomic_fetch_add")
_cap("doca_rdma_cap_task_atomic_fetch_add_is_supported", "atomic_fetch_add")
_conf("doca_rdma_task_atomic_fetch_add_set_conf", "atomic_fetch_add")
_as_task("doca_rdma_task_atomic_fetch_add_as_task", _fadd)
_buf_setter("doca_rdma_task_atomic_fetch_add_set_dst_buf", _fadd, "set_dst_buf")
task_getter("doca_rdma_task_atomic_fetch_add_get_dst_buf", _fadd, "dst", buf_handle)
_buf_setter("doca_rdma_task_atomic_fetch_add_set_result_buf", _fadd, "set_result_buf")
task_getter("doca_rdma_task_atomic_fetch_add_get_result_buf", _fadd, "result", buf_handle)
_value_setter("doca_rdma_task_atomic_fetch_add_set_add_data", _fadd, "add", _u64)
task_getter("doca_rdma_task_atomic_fetch_add_get_add_data", _fadd, "add")
_conn_accessors("doca_rdma_task_atomic_fetch_add", _fadd)


@impl("doca_rdma_task_atomic_fetch_add_allocate_init")
def _fadd_alloc(p: int | None, *args: Any) -> None:
    r = rdma_of(p)
    conn, (dst, result, add, ud, out) = split_conn(r, args, 5)
    d, res = buf_of(dst), buf_of(result)
    alloc_or_fail(lambda: r.task_atomic_fetch_add_allocate_init(conn, d, res, add), ud, out)
