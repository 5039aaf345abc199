"""libdoca_erasure_coding served by the emulator: the ctx, its matrices and the four task types."""

from __future__ import annotations

import ctypes
from typing import Any

from ...emulated import ec as emu
from ...emulated.ctx import TaskPool
from ...emulated.dev import EmuDev, EmuDevInfo
from ...emulated.ec import EmuEc, EmuEcMatrix, EmuEcTask
from ...errors import DocaInvalidValue, DocaNotSupported
from ._core import forget, handle, impl, obj, out_ptr, out_u32, out_u64
from .common import alloc_or_fail, buf_of, ctx_extra, forget_ctx, task_set_conf

#: Per task type: the names its C functions give the matrix, the source and the destination.
FIELDS = {
    "create": ("coding_matrix", "original_data_blocks", "rdnc_blocks"),
    "recover": ("recover_matrix", "available_blocks", "recovered_data_blocks"),
    "update": ("update_matrix", "original_updated_and_rdnc_blocks", "updated_rdnc_blocks"),
    "galois_mul": ("coding_matrix", "src_buf", "dst_buf"),
}
#: Getters whose name differs from their setter's (``doca_erasure_coding.h``).
GETTER_NAMES = {("recover", "recovered_data_blocks"): "recovered_data"}
_CAPS = {"create": emu.cap_task_create_is_supported, "recover": emu.cap_task_recover_is_supported,
         "update": emu.cap_task_update_is_supported, "galois_mul": emu.cap_task_galois_mul_is_supported}


def _ec(p: int | None) -> EmuEc:
    return obj(p, EmuEc, "doca_ec")


def _matrix(p: int | None) -> EmuEcMatrix:
    m = obj(p, EmuEcMatrix, "doca_ec_matrix")
    if m.destroyed:
        raise DocaInvalidValue("doca_ec_matrix: destroyed")
    return m


def _devinfo(p: int | None) -> EmuDevInfo:
    return obj(p, EmuDevInfo, "doca_devinfo")


@impl("doca_ec_create")
def _create(dev: int | None, out: int | None) -> None:
    ec = emu.ec_create(obj(dev, EmuDev, "doca_dev"))
    out_ptr(out, ctx_extra(ec).handle)


@impl("doca_ec_destroy")
def _destroy(p: int | None) -> None:
    ec = _ec(p)
    live = list(ec.matrices)
    ec.destroy()
    for m in live:  # the matrices go with their ctx
        m.destroy()
        forget(m)
    forget_ctx(ec)


@impl("doca_ec_as_ctx")
def _as_ctx(p: int | None) -> int:
    return handle(_ec(p))


@impl("doca_ec_cap_get_max_block_size")
def _cap_block(info: int | None, out: int | None) -> None:
    out_u64(out, emu.cap_get_max_block_size(_devinfo(info)))


@impl("doca_ec_cap_get_max_buf_list_len")
def _cap_list(info: int | None, out: int | None) -> None:
    out_u32(out, emu.cap_get_max_buf_list_len(_devinfo(info)))


# -- matrices ------------------------------------------------------------------------------------

@impl("doca_ec_matrix_create")
def _matrix_create(p: int | None, matrix_type: int, k: int, m: int, out: int | None) -> None:
    ec = _ec(p)
    if not out:
        raise DocaInvalidValue("NULL output pointer for the matrix")
    out_ptr(out, handle(ec.matrix_create(matrix_type, k, m)))


@impl("doca_ec_matrix_create_from_raw")
def _matrix_from_raw(p: int | None, data: int | None, k: int, m: int, out: int | None) -> None:
    ec = _ec(p)
    if not data or not out:
        raise DocaInvalidValue("doca_ec_matrix_create_from_raw: NULL data or output pointer")
    if not 0 < k * m <= 255 * 255:
        raise DocaInvalidValue(f"doca_ec_matrix_create_from_raw: k={k}, m={m}")
    out_ptr(out, handle(ec.matrix_create_from_raw(ctypes.string_at(data, k * m), k, m)))


def _indices(p: int | None, n: int, what: str) -> list[int]:
    if not p or n <= 0:
        raise DocaInvalidValue(f"{what}: no block indices")
    if n > 255:
        raise DocaInvalidValue(f"{what}: {n} block indices (at most 255 blocks)")
    return list((ctypes.c_uint32 * n).from_address(p))


@impl("doca_ec_matrix_create_update")
def _matrix_update(p: int | None, coding: int | None, idx: int | None, n: int, out: int | None) -> None:
    ec, c = _ec(p), _matrix(coding)
    if not out:
        raise DocaInvalidValue("NULL output pointer for the matrix")
    out_ptr(out, handle(ec.matrix_create_update(c, _indices(idx, n, "doca_ec_matrix_create_update"))))


@impl("doca_ec_matrix_create_recover")
def _matrix_recover(p: int | None, coding: int | None, idx: int | None, n: int, out: int | None) -> None:
    ec, c = _ec(p), _matrix(coding)
    if not out:
        raise DocaInvalidValue("NULL output pointer for the matrix")
    out_ptr(out, handle(ec.matrix_create_recover(c, _indices(idx, n, "doca_ec_matrix_create_recover"))))


@impl("doca_ec_matrix_destroy")
def _matrix_destroy(p: int | None) -> None:
    m = _matrix(p)
    m.destroy()
    forget(m)


# -- tasks ---------------------------------------------------------------------------------------

def _serve_kind(kind: str) -> None:
    """Register every C function of EC task type *kind* (``doca_ec_*_<kind>_*``)."""
    matrix_name, src_name, dst_name = FIELDS[kind]

    def pool(ec: EmuEc) -> TaskPool[Any]:
        p: TaskPool[Any] = getattr(ec, kind)
        return p

    def task(p: int | None) -> EmuEcTask:
        t = obj(p, EmuEcTask, f"doca_ec_task_{kind}")
        if t.pool is not pool(t.ctx):  # type: ignore[arg-type]
            raise DocaInvalidValue(f"doca_ec_task_{kind}: the task is of another EC task type")
        return t

    def cap(info: int | None) -> None:
        if not _CAPS[kind](_devinfo(info)):
            raise DocaNotSupported(f"the device has no EC {kind} task")

    def set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
        task_set_conf(pool(_ec(p)), ok, err, num)

    def alloc(p: int | None, matrix: int | None, src: int | None, dst: int | None, ud: int,
              out: int | None) -> None:
        ec, m, s, d = _ec(p), _matrix(matrix), buf_of(src), buf_of(dst)
        fn = getattr(ec, f"task_{kind}_allocate_init")
        alloc_or_fail(lambda: fn(m, s, d), ud, out)

    def as_task(p: int | None) -> int:
        return handle(task(p))

    def set_matrix(p: int | None, m: int | None) -> None:
        task(p).set_matrix(_matrix(m))

    def get_matrix(p: int | None) -> int | None:
        m = task(p).matrix
        return handle(m) if m is not None else None

    def set_src(p: int | None, b: int | None) -> None:
        task(p).set_src(buf_of(b))

    def get_src(p: int | None) -> int | None:
        b = task(p).src
        return handle(b) if b is not None else None

    def set_dst(p: int | None, b: int | None) -> None:
        task(p).set_dst(buf_of(b))

    def get_dst(p: int | None) -> int | None:
        b = task(p).dst
        return handle(b) if b is not None else None

    pre = f"doca_ec_task_{kind}"
    impl(f"doca_ec_cap_task_{kind}_is_supported")(cap)
    impl(f"{pre}_set_conf")(set_conf)
    impl(f"{pre}_allocate_init")(alloc)
    impl(f"{pre}_as_task")(as_task)
    impl(f"{pre}_set_{matrix_name}")(set_matrix)
    impl(f"{pre}_get_{matrix_name}")(get_matrix)
    impl(f"{pre}_set_{src_name}")(set_src)
    impl(f"{pre}_get_{src_name}")(get_src)
    impl(f"{pre}_set_{dst_name}")(set_dst)
    impl(f"{pre}_get_{GETTER_NAMES.get((kind, dst_name), dst_name)}")(get_dst)


for _kind in FIELDS:
    _serve_kind(_kind)
