"""Emulated ``doca_dma``: memcpy between any two buffers the device can reach.

PCI-imported maps (another process's exported memory), big copies and stopped maps
resolve through :meth:`EmuMmap.ptr`, which enforces range, permission and revocation;
the copy itself is one ``memmove``. Small copies between started local maps go through
views of the maps, cached on the buffers between runs (see ``_execute``).
"""

from __future__ import annotations

import ctypes

from .._backend.protocols.core import BufHandle, DevHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotSupported, ErrorCode
from . import version as emu_version
from .buf import VIEW_CACHE_MAX, EmuBuf
from .ctx import OFFLOAD, EmuCtx, EmuSrcDstTask, EmuTask, TaskPool, unreachable_ok
from .mmap import EmuMmap, dev_key
from .pe import Lane

__all__ = ["EmuDma", "EmuDmaTaskMemcpy", "dma_create", "cap_task_memcpy_is_supported",
           "cap_task_memcpy_get_max_buf_size", "cap_task_memcpy_get_max_buf_list_len",
           "cap_get_max_num_tasks", "MAX_BUF_SIZE", "MAX_BUF_LIST_LEN"]

MAX_BUF_SIZE = 1 << 31
MAX_BUF_LIST_LEN = 1
MAX_NUM_TASKS = 1 << 16
_memmove = ctypes.memmove
_INVALID = int(ErrorCode.INVALID_VALUE)
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
_SMALL = VIEW_CACHE_MAX  # copies up to this go through views (cached: see the hot path)


class EmuDmaTaskMemcpy(EmuSrcDstTask):
    """``doca_dma_task_memcpy``."""

    __slots__ = ("reached_src", "reached_dst", "hot_src", "hot_dst")
    offload_bytes = 16 << 20  # copies run at tens of GB/s: a thread hop costs more below this
    kind = "dma_memcpy"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        # The maps last found reachable by the ctx's device, as _execute keys them (never None).
        self.reached_src: object = None
        self.reached_dst: object = None
        # The bufs' cached views (EmuBuf.dview, EmuBuf.room_view) this task last copied through, after
        # finding their maps reachable and the destination's writable.
        self.hot_src: memoryview | None = None
        self.hot_dst: memoryview | None = None

    def _validate(self) -> None:
        src, dst = self.src, self.dst
        if src is None or dst is None or not src.refcount or not dst.refcount:
            raise DocaInvalidValue("memcpy task needs a source and a destination buffer")
        if src.next is not None or dst.next is not None:
            raise DocaInvalidValue(f"memcpy supports buffer lists of at most {MAX_BUF_LIST_LEN} element")
        if not src.data_len:
            raise DocaInvalidValue("memcpy source has no data")
        if src.data_len > MAX_BUF_SIZE:
            raise DocaInvalidValue(f"memcpy source exceeds the maximum buffer size {MAX_BUF_SIZE}")
        if dst.data + dst.data_len + src.data_len > dst.head + dst.len:
            raise DocaInvalidValue(f"memcpy destination has {dst.head + dst.len - dst.data - dst.data_len} "
                                   f"bytes free after its data, source holds {src.data_len}")

    def _execute(self) -> int:
        src, dst = self.src, self.dst
        if src is None or dst is None:
            self.reason = "memcpy needs one source and one destination buffer (no lists)"
            return _INVALID
        # Hot path: both bufs hold the views this task checked and copied through last time. Small ints
        # and one slice: 47-bit address arithmetic and a second slice cost more than the 64-byte copy.
        # A cached view means an unchained buf of a started local map (the same start: writability too),
        # its window inside the map; tlen is the room after dst's data; src.dn == n means its view is
        # of the data as it is now, and 0 < n <= _SMALL (VIEW_CACHE_MAX). No call here, nor below
        # once the maps are known reachable and dst's view is cached.
        n, dl = src.data_len, dst.data_len
        sv, tv = src.dview, dst.tail
        if sv is self.hot_src and tv is self.hot_dst and src.dn == n and (end := dl + n) <= dst.tlen:
            tv[dl:end] = sv  # type: ignore[index, assignment]  # tlen >= 0 and dn >= 0: both are set
            dst.data_len = end
            return 0
        # Every check, on absolute addresses (also the path of a source re-aimed for every IO, as in
        # the storage apps: one slice, as before the views were cached).
        if src.next is not None or dst.next is not None:
            self.reason = "memcpy needs one source and one destination buffer (no lists)"
            return _INVALID
        s = src.data
        d = dst.data + dl
        sm, dm = src.mmap, dst.mmap
        if not 0 < n <= MAX_BUF_SIZE or d + n > dst.head + dst.len or sm is None or dm is None:
            self.reason = (f"memcpy of {n} bytes: the source must hold 1..{MAX_BUF_SIZE} bytes and the "
                           f"destination has {dst.head + dst.len - d} bytes free after its data")
            return _INVALID
        # The reachability memo knows a started local map by its byte view (a new one per start: its devices
        # may have changed while it was stopped), any other map by itself (an imported map's device is fixed;
        # a stopped map fails its access check below). mv is set exactly while a local map is started.
        smv, dmv = sm.mv, dm.mv
        ks, kd = sm if smv is None else smv, dm if dmv is None else dmv
        if ks is not self.reached_src or kd is not self.reached_dst:  # checked once per pair of maps
            if not unreachable_ok(self, src, dst):
                return _NOT_PERMITTED
            self.reached_src, self.reached_dst = ks, kd
        # Two started local maps: a buf lies inside its map (checked when the buf is set up; a map's range
        # never changes), so with the room check above the copy needs no bounds check.
        if n <= _SMALL and smv is not None and dmv is not None and dm.writable:
            if sv is None or src.dn != n:  # (re)build src's cached view (EmuBuf: unchained, n <= VIEW_CACHE_MAX)
                o = s - sm.addr
                sv = smv[o:o + n]
                if not src.viewing:
                    src._viewed(sm)
                src.dview, src.dn = sv, n
            if tv is None:
                tv = dst.room_view()
            self.hot_src, self.hot_dst = sv, tv
            tv[dl:dl + n] = sv
        elif self._offload(n):
            return OFFLOAD
        else:
            _memmove(dm.ptr(d, n, True), sm.ptr(s, n, False), n)  # releases the GIL for big copies
        dst.data_len = dl + n
        return 0


class EmuDma(EmuCtx):
    """Emulated ``doca_dma`` context.

    Its memcpy completions are unordered unless ``set_ordered_completions(True)`` ran: the Pe's
    shuffling may then deliver them in any order, as a DMA engine's parallel channels may finish them.
    Ordered, every task goes through the ctx's one :class:`Lane` and completes in submission order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.memcpy = TaskPool(self, EmuDmaTaskMemcpy)
        #: The ctx's work queue while completions are ordered, else ``None`` (each task on its own).
        self.lane: Lane | None = None

    def set_ordered_completions(self, ordered: bool) -> None:
        """``doca_dma_set_ordered_completions`` (DOCA 3.2): a ctx setting, so only while idle."""
        _needs_32("doca_dma_set_ordered_completions")
        self._configurable("doca_dma_set_ordered_completions")
        if not ordered:
            self.lane = None
        elif self.lane is None:
            self.lane = Lane()

    def get_ordered_completions(self) -> bool:
        """``doca_dma_get_ordered_completions`` (DOCA 3.2)."""
        _needs_32("doca_dma_get_ordered_completions")
        return self.lane is not None

    def task_memcpy_alloc_init(self, src: BufHandle, dst: BufHandle) -> EmuDmaTaskMemcpy:
        t = self.memcpy.alloc()
        assert isinstance(t, EmuDmaTaskMemcpy) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.src, t.dst = src, dst
        t.lane = self.lane
        return t


def _needs_32(fn: str) -> None:
    """Before 3.2 DOCA has no ordered completions: refused in the emulator's older modes as the native backend
    refuses the missing function (``DocaNotSupported`` naming the versions)."""
    if not emu_version.at_least(3, 2):
        raise DocaNotSupported(f"{fn} is exported from DOCA 3.2; the emulator presents DOCA "
                               f"{emu_version.VERSION[0]}.{emu_version.VERSION[1]} (DOCA_PY_EMU_VERSION)")


def dma_create(dev: DevHandle) -> EmuDma:
    """``doca_dma_create``."""
    dma = EmuDma()
    dma.dev_key = dev_key(dev)
    return dma


def cap_task_memcpy_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


def cap_task_memcpy_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_SIZE


def cap_task_memcpy_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS
