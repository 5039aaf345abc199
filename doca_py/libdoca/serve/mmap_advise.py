"""libdoca_common's ``doca_mmap_advise`` (DOCA 2.8 and later) served by the emulator."""

from __future__ import annotations

from ...emulated import mmap_advise as emu
from ...emulated.dev import EmuDev, EmuDevInfo
from ...emulated.mmap_advise import EmuMmapAdvise, EmuMmapAdviseTaskInvalidateCache
from ...errors import DocaNotSupported
from ._core import handle, impl, obj, out_ptr, out_u64
from .common import alloc_or_fail, buf_of, ctx_extra, forget_ctx, task_set_conf


def _advise(p: int | None) -> EmuMmapAdvise:
    return obj(p, EmuMmapAdvise, "doca_mmap_advise")


def _task(p: int | None) -> EmuMmapAdviseTaskInvalidateCache:
    return obj(p, EmuMmapAdviseTaskInvalidateCache, "doca_mmap_advise_task_invalidate_cache")


def _devinfo(p: int | None) -> EmuDevInfo:
    return obj(p, EmuDevInfo, "doca_devinfo")


@impl("doca_mmap_advise_create")
def _create(dev: int | None, out: int | None) -> None:
    out_ptr(out, ctx_extra(emu.mmap_advise_create(obj(dev, EmuDev, "doca_dev"))).handle)


@impl("doca_mmap_advise_destroy")
def _destroy(p: int | None) -> None:
    ma = _advise(p)
    ma.destroy()
    forget_ctx(ma)


@impl("doca_mmap_advise_as_ctx")
def _as_ctx(p: int | None) -> int:
    return handle(_advise(p))


@impl("doca_mmap_advise_cap_task_cache_invalidate_is_supported")
def _cap(info: int | None) -> None:
    if not emu.cap_task_cache_invalidate_is_supported(_devinfo(info)):
        raise DocaNotSupported("the device has no cache invalidate task (DOCA Mmap Advise runs on a BlueField's "
                               "Arm side)")


@impl("doca_mmap_advise_task_cache_invalidate_get_max_buf_size")
def _max_buf_size(info: int | None, out: int | None) -> None:
    out_u64(out, emu.task_cache_invalidate_get_max_buf_size(_devinfo(info)))


@impl("doca_mmap_advise_task_invalidate_cache_set_conf")
def _set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
    task_set_conf(_advise(p).invalidate_cache, ok, err, num)


@impl("doca_mmap_advise_task_invalidate_cache_alloc_init")
def _alloc_init(p: int | None, buf: int | None, ud: int, out: int | None) -> None:
    ma, b = _advise(p), buf_of(buf)
    alloc_or_fail(lambda: ma.task_invalidate_cache_alloc_init(b), ud, out)


@impl("doca_mmap_advise_task_invalidate_cache_as_doca_task")
def _as_task(p: int | None) -> int:
    return handle(_task(p))


@impl("doca_mmap_advise_task_invalidate_cache_set_buf")
def _set_buf(p: int | None, buf: int | None) -> None:
    _task(p).set_buf(buf_of(buf))


@impl("doca_mmap_advise_task_invalidate_cache_get_buf")
def _get_buf(p: int | None) -> int | None:
    b = _task(p).buf
    return handle(b) if b is not None else None
