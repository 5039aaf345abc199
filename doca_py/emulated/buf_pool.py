"""Emulated ``doca_buf_pool``: fixed-size elements of one mmap, each with its own descriptor.

As in DOCA, an element's memory is fixed from start to destruction (``doca_buf_pool.h``): a descriptor
comes back from :meth:`EmuBufPool.buf_alloc` pointing at its element with empty data, however the
previous holder moved its data region.
"""

from __future__ import annotations

from .._backend.protocols.core import MmapHandle
from ..errors import DocaBadState, DocaEmpty, DocaInitialization, DocaInUse, DocaInvalidValue
from . import strict
from .buf import EmuBuf, detach
from .mmap import EmuMmap

__all__ = ["EmuBufPool", "buf_pool_create"]


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) & ~(a - 1)


class EmuBufPool:
    """Emulated ``doca_buf_pool``."""

    def __init__(self, num_elements: int, element_size: int, mmap: EmuMmap) -> None:
        self.mmap = mmap
        self.total = num_elements
        self.size = element_size
        self.alignment = 1
        self.started = False
        self.pins = 0  # strict mode: bufs of this pool used by tasks in flight
        self.free: list[EmuBuf] = []
        self.heads: dict[EmuBuf, int] = {}  # each descriptor's element, fixed at start

    def _idle(self, what: str) -> None:
        if self.started:
            raise DocaBadState(f"{what}: the buf pool is started; configure it before start")

    def set_element_alignment(self, alignment: int) -> None:
        self._idle("set_element_alignment")
        if alignment < 1 or alignment & (alignment - 1):
            raise DocaInvalidValue(f"element alignment must be a power of 2 (at least 1), got {alignment}")
        self.alignment = alignment

    def get_element_alignment(self) -> int:
        return self.alignment

    def start(self) -> None:
        m = self.mmap
        if self.started:
            raise DocaBadState("the buf pool is already started")
        if m.destroyed or not (m.started or m.from_export):
            raise DocaBadState("the buf pool's mmap is not started")
        first = _align_up(m.addr, self.alignment)
        stride = _align_up(self.size, self.alignment)
        need = first - m.addr + (self.total - 1) * stride + self.size
        if need > m.length:
            raise DocaInitialization(f"{self.total} elements of {self.size} bytes aligned to {self.alignment} need "
                                     f"{need} bytes; the mmap range has {m.length}")
        if not self.heads:  # descriptors are built once; their elements move only with the alignment
            self.free = [EmuBuf(self) for _ in range(self.total)]
        bufs = list(self.heads) or self.free
        self.heads = {b: first + i * stride for i, b in enumerate(bufs)}
        self.free = list(reversed(bufs))  # the lowest element first
        self.started = True

    def stop(self) -> None:
        if not self.started:
            raise DocaBadState("the buf pool is not started")
        self._all_home("stop")
        self.started = False

    def _all_home(self, what: str) -> None:
        out = self.total - len(self.free) if self.heads else 0
        if out:
            raise DocaInUse(f"{what}: {out} buffer(s) of this buf pool are still held")
        if self.pins:
            raise strict.violation(self, f"{what} while {self.pins} of its buffers are used by tasks in flight")

    def get_num_elements(self) -> int:
        return self.total

    def get_num_free_elements(self) -> int:
        return len(self.free) if self.heads else self.total

    def buf_alloc(self) -> EmuBuf:
        if not self.started:
            raise DocaBadState("the buf pool is not started")
        if not self.free:
            raise DocaEmpty(f"the buf pool is empty (all {self.total} elements are allocated)")
        m = self.mmap
        if m.destroyed or not (m.started or m.from_export):
            raise DocaBadState("the buf pool's mmap is not started")
        b = self.free.pop()
        head = self.heads[b]
        b.mmap, b.head, b.len, b.data, b.data_len, b.refcount = m, head, self.size, head, 0, 1
        m.num_bufs += 1
        return b

    def _put(self, b: EmuBuf) -> None:
        detach(b)
        self.free.append(b)

    def destroy(self) -> None:
        self._all_home("destroy")  # DOCA: destroy implicitly stops, but not with buffers out
        self.started = False


def buf_pool_create(num_elements: int, element_size: int, mmap: MmapHandle) -> EmuBufPool:
    """``doca_buf_pool_create``."""
    if not isinstance(mmap, EmuMmap):
        raise DocaInvalidValue("doca_buf_pool_create needs an mmap")
    if num_elements <= 0 or element_size <= 0 or num_elements > 0xFFFFFFFF:
        raise DocaInvalidValue(f"a buf pool needs 1..2^32-1 elements of a positive size, got {num_elements} "
                               f"of {element_size}")
    if not mmap.length or mmap.destroyed:
        raise DocaInvalidValue("the buf pool's mmap has no memory range")
    return EmuBufPool(num_elements, element_size, mmap)
