"""Emulated ``doca_mmap_advise``: the ctx and its cache invalidate task.

On a BlueField the task tells the Arm cores' system-level cache that the lines holding a buffer
need not be written back to DRAM. Off the hardware there is no such cache to advise: the task
checks what the hardware checks — the buffer is a live one of a started (or imported) mmap the
ctx's device was added to, within the device's maximum size — and completes without touching
the bytes, as on hardware (the advice changes performance, never the memory's contents).
"""

from __future__ import annotations

from .._backend.protocols.core import BufHandle, DevHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotPermitted, DocaNotSupported, ErrorCode
from . import version as emu_version
from .buf import EmuBuf
from .ctx import EmuCtx, EmuTask, TaskPool, unreachable_ok
from .mmap import dev_key

__all__ = ["EmuMmapAdvise", "EmuMmapAdviseTaskInvalidateCache", "mmap_advise_create",
           "cap_task_cache_invalidate_is_supported", "task_cache_invalidate_get_max_buf_size", "MAX_BUF_SIZE"]

#: ``doca_mmap_advise_task_cache_invalidate_get_max_buf_size`` of every emulated device (as DMA's).
MAX_BUF_SIZE = 1 << 31
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
_CAP = "mmap_advise_cache_invalidate"
#: The first DOCA release with ``doca_mmap_advise.h`` (as the native declarations say).
SINCE = (2, 8)


class EmuMmapAdviseTaskInvalidateCache(EmuTask):
    """``doca_mmap_advise_task_invalidate_cache``."""

    __slots__ = ("buf",)
    kind = "mmap_advise_invalidate_cache"
    released_ok = True  # doca_mmap_advise.h: a released buffer fails the task (INVALID_VALUE), no undefined use

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.buf: EmuBuf | None = None

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.buf,)

    def set_buf(self, buf: object) -> None:
        self._settable("set_buf")
        assert isinstance(buf, EmuBuf)
        self.buf = buf

    def _validate(self) -> None:
        b = self.buf
        if b is None or not b.refcount:
            raise DocaInvalidValue("cache invalidate task needs a buffer that is not released")
        if b.next is not None:
            raise DocaInvalidValue("cache invalidate takes one buffer, not a list")
        if b.len > MAX_BUF_SIZE:
            raise DocaInvalidValue(f"cache invalidate buffer of {b.len} bytes exceeds the maximum {MAX_BUF_SIZE}")

    def _execute(self) -> int:
        self._validate()
        b = self.buf
        assert b is not None
        m = b.mmap
        if m is None:
            raise DocaInvalidValue("cache invalidate buffer belongs to no mmap")
        if not unreachable_ok(self, b):
            return _NOT_PERMITTED
        # Every check of an access to the buf's window (range, a started or live imported map), but no
        # access: there are no cache lines to drop here, and the bytes stay as they are.
        m.ptr(b.head, b.len, False)
        return 0


class EmuMmapAdvise(EmuCtx):
    """Emulated ``doca_mmap_advise`` context."""

    def __init__(self) -> None:
        super().__init__()
        self.invalidate_cache = TaskPool(self, EmuMmapAdviseTaskInvalidateCache)
        self.supported = True  # the device's cache invalidate capability

    def _configurable(self, what: str) -> None:
        if self.state != 0:  # doca_mmap_advise.h: a task set_conf of a ctx not idle is NOT_PERMITTED
            raise DocaNotPermitted(f"{what}: configure the mmap advise ctx while it is idle")

    def _on_start(self) -> None:
        if self.invalidate_cache.size and not self.supported:
            raise DocaNotSupported(f"the device {self.dev_key} does not support the cache invalidate task "
                                   f"(MmapAdvise.cap_task_cache_invalidate_is_supported): DOCA Mmap Advise runs "
                                   f"on a BlueField's Arm side")

    def task_invalidate_cache_alloc_init(self, buf: BufHandle) -> EmuMmapAdviseTaskInvalidateCache:
        t = self.invalidate_cache.alloc()
        assert isinstance(t, EmuMmapAdviseTaskInvalidateCache) and isinstance(buf, EmuBuf)
        t.buf = buf
        return t


def mmap_advise_create(dev: DevHandle) -> EmuMmapAdvise:
    """``doca_mmap_advise_create`` (``DocaNotSupported`` when the emulator presents DOCA 2.6, which has no
    ``doca_mmap_advise.h``)."""
    if not emu_version.at_least(*SINCE):
        raise DocaNotSupported(f"doca_mmap_advise_create: DOCA {emu_version.VERSION[0]}.{emu_version.VERSION[1]} "
                               f"(DOCA_PY_EMU_VERSION) has no doca_mmap_advise; it exists from DOCA "
                               f"{SINCE[0]}.{SINCE[1]}")
    ctx = EmuMmapAdvise()
    ctx.dev_key = dev_key(dev)
    ctx.supported = cap_task_cache_invalidate_is_supported(dev.devinfo)
    return ctx


def cap_task_cache_invalidate_is_supported(devinfo: DevInfoHandle) -> bool:
    """The device's ``mmap_advise_cache_invalidate`` capability: the default DPU-side device has it, the
    host-side one not (DOCA Mmap Advise runs on the BlueField target); none before DOCA 2.8."""
    return emu_version.at_least(*SINCE) and devinfo.cap(_CAP)


def task_cache_invalidate_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    emu_version.require("doca_mmap_advise_task_cache_invalidate_get_max_buf_size", SINCE,
                        "doca_mmap_advise.h exists from DOCA 2.8")
    return MAX_BUF_SIZE
