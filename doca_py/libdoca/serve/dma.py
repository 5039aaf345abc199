"""libdoca_dma served by the emulator."""

from __future__ import annotations

from ...emulated import dma as emu
from ...emulated.dev import EmuDev, EmuDevInfo
from ...emulated.dma import EmuDma, EmuDmaTaskMemcpy
from ...errors import DocaNotSupported
from ._core import handle, impl, obj, out_ptr, out_u8, out_u32, out_u64
from .common import alloc_or_fail, buf_of, ctx_extra, forget_ctx, task_set_conf


def _dma(p: int | None) -> EmuDma:
    return obj(p, EmuDma, "doca_dma")


def _task(p: int | None) -> EmuDmaTaskMemcpy:
    return obj(p, EmuDmaTaskMemcpy, "doca_dma_task_memcpy")


@impl("doca_dma_create")
def _create(dev: int | None, out: int | None) -> None:
    d = emu.dma_create(obj(dev, EmuDev, "doca_dev"))
    out_ptr(out, ctx_extra(d).handle)


@impl("doca_dma_destroy")
def _destroy(p: int | None) -> None:
    d = _dma(p)
    d.destroy()
    forget_ctx(d)


@impl("doca_dma_as_ctx")
def _as_ctx(p: int | None) -> int:
    return handle(_dma(p))


@impl("doca_dma_cap_task_memcpy_is_supported")
def _cap_supported(info: int | None) -> None:
    if not emu.cap_task_memcpy_is_supported(obj(info, EmuDevInfo, "doca_devinfo")):
        raise DocaNotSupported("the device has no DMA memcpy")


@impl("doca_dma_cap_get_max_num_tasks")
def _cap_max_tasks(p: int | None, out: int | None) -> None:
    _dma(p)
    out_u32(out, emu.MAX_NUM_TASKS)


@impl("doca_dma_cap_task_memcpy_get_max_buf_list_len")
def _cap_list_len(info: int | None, out: int | None) -> None:
    out_u32(out, emu.cap_task_memcpy_get_max_buf_list_len(obj(info, EmuDevInfo, "doca_devinfo")))


@impl("doca_dma_cap_task_memcpy_get_max_buf_size")
def _cap_buf_size(info: int | None, out: int | None) -> None:
    out_u64(out, emu.cap_task_memcpy_get_max_buf_size(obj(info, EmuDevInfo, "doca_devinfo")))


@impl("doca_dma_task_memcpy_set_conf")
def _set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
    task_set_conf(_dma(p).memcpy, ok, err, num)


@impl("doca_dma_task_memcpy_alloc_init")
def _alloc_init(p: int | None, src: int | None, dst: int | None, ud: int, out: int | None) -> None:
    d = _dma(p)
    s, t = buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: d.task_memcpy_alloc_init(s, t), ud, out)


@impl("doca_dma_task_memcpy_as_task")
def _as_task(p: int | None) -> int:
    return handle(_task(p))


@impl("doca_dma_task_memcpy_set_src")
def _set_src(p: int | None, b: int | None) -> None:
    _task(p).set_src(buf_of(b))


@impl("doca_dma_task_memcpy_set_dst")
def _set_dst(p: int | None, b: int | None) -> None:
    _task(p).set_dst(buf_of(b))


@impl("doca_dma_task_memcpy_get_src")
def _get_src(p: int | None) -> int | None:
    b = _task(p).src
    return handle(b) if b is not None else None


@impl("doca_dma_task_memcpy_get_dst")
def _get_dst(p: int | None) -> int | None:
    b = _task(p).dst
    return handle(b) if b is not None else None


@impl("doca_dma_set_ordered_completions")
def _set_ordered(p: int | None, ordered: int) -> None:
    _dma(p).set_ordered_completions(bool(ordered))


@impl("doca_dma_get_ordered_completions")
def _get_ordered(p: int | None, out: int | None) -> None:
    out_u8(out, int(_dma(p).get_ordered_completions()))
