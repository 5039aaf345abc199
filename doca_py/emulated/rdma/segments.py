"""Local buffer lists as memory segments: gather, scatter, grow, and the task failure signal."""

from __future__ import annotations

import ctypes
from typing import Protocol

from ...errors import (
    DocaError,
)
from ..buf import EmuBuf
from .config import INVALID, TOO_BIG

_small = 1 << 16
memmove = ctypes.memmove


class ReceiveTarget(Protocol):
    """A posted receive as :func:`recv_segments` sees it (:class:`.tasks.EmuRdmaTaskReceive`)."""

    @property
    def dst(self) -> EmuBuf | None: ...


class Fail(Exception):
    """A task fails with *code* (raised while starting it)."""

    def __init__(self, code: int, detail: str = "") -> None:
        super().__init__(detail)
        self.code = code



def buf_segments(buf: EmuBuf | None, write: bool) -> tuple[list[memoryview], int]:
    """Views of a local buffer list: data regions (sources) or the room after them (destinations)."""
    segs: list[memoryview] = []
    total = 0
    b = buf
    while b is not None:
        mm = b.mmap
        if mm is None:
            raise Fail(INVALID, "buffer is not allocated")
        if write:
            start = b.data + b.data_len
            n = b.head + b.len - start
        else:
            start, n = b.data, b.data_len
        if n:
            try:
                segs.append(mm.view(start, n, write))
            except DocaError as exc:
                raise Fail(exc.code, exc.detail) from None
            total += n
        b = b.next
    return segs, total


def land(dst: EmuBuf | None, src: memoryview | bytearray, start: int, n: int) -> bool:
    """Receive ``src[start:start+n]`` into *dst* the short way: after the data of a single buffer of a
    started local map that has the room, through the map's view (what :func:`recv_segments`,
    :func:`scatter` and :func:`grow_data` do for any list). False, with nothing done, for anything else
    (a chained, short or not writable destination, or another kind of map): the general path decides."""
    if not n:
        return True
    if dst is None or dst.next is not None:
        return False
    dm = dst.mmap
    if dm is None or not dm.writable:
        return False
    dv = dm.mv
    at = dst.data + dst.data_len
    if dv is None or at < dm.addr or at + n > dst.head + dst.len or at + n > dm.hi:
        return False
    at -= dm.addr
    dv[at:at + n] = src[start:start + n]
    dst.data_len += n
    return True


def list_len(buf: EmuBuf | None) -> int:
    n = 0
    while buf is not None:
        n, buf = n + 1, buf.next
    return n


def scatter(segs: list[memoryview], data: memoryview) -> None:
    off = 0
    for s in segs:
        k = min(len(s), len(data) - off)
        if k <= 0:
            break
        s[:k] = data[off:off + k]
        off += k


def grow_data(buf: EmuBuf | None, n: int) -> None:
    """Account *n* bytes written after the data of a destination list."""
    b = buf
    while b is not None and n > 0:
        room = b.head + b.len - b.data - b.data_len
        k = min(room, n)
        b.data_len += k
        n -= k
        b = b.next



def copy_from(segs: list[memoryview], p: int, n: int) -> None:
    """Copy *n* bytes at process address *p* into *segs*."""
    off = 0
    for s in segs:
        k = min(len(s), n - off)
        if k <= 0:
            break
        if k <= _small:
            s[:k] = target_view(p + off, k)
        else:
            memmove((ctypes.c_char * k).from_buffer(s), p + off, k)  # releases the GIL
        off += k


def copy_to(p: int, segs: list[memoryview]) -> int:
    """Copy *segs* to process address *p*."""
    off = 0
    for s in segs:
        k = len(s)
        if k <= _small:
            target_view(p + off, k)[:] = s
        else:
            memmove(p + off, (ctypes.c_char * k).from_buffer(s), k)
        off += k
    return off



def target_view(p: int, n: int) -> memoryview:
    return memoryview((ctypes.c_char * n).from_address(p)).cast("B")



def tail(segs: list[memoryview], skip: int) -> list[memoryview]:
    """The parts of *segs* after the first *skip* bytes."""
    out: list[memoryview] = []
    for s in segs:
        if skip >= len(s):
            skip -= len(s)
            continue
        out.append(s[skip:])
        skip = 0
    return out


def recv_segments(task: ReceiveTarget, n: int) -> tuple[int, list[memoryview]]:
    if not n:
        return 0, []
    try:
        segs, room = buf_segments(task.dst, True)
    except Fail as f:
        return f.code, []
    if room < n:
        return TOO_BIG, []
    return 0, segs
