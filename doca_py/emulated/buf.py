"""Emulated ``doca_buf`` and ``doca_buf_inventory``.

Descriptors are pre-built at inventory creation and recycled, as in DOCA: taking a
buffer allocates nothing.
"""

from __future__ import annotations

from typing import Protocol

from .._backend.protocols.core import BufHandle, MmapHandle
from ..errors import DocaBadState, DocaInUse, DocaInvalidValue, DocaNoMemory, DocaNotPermitted, DocaTooBig
from . import strict
from . import version as emu_version
from .mmap import EmuMmap

__all__ = ["EmuBuf", "EmuBufInventory", "BufHome", "buf_inventory_create", "data_views", "room", "tail_view", "detach"]

_REFCOUNT_MAX = 0xFFFF
#: Engines cache data views (EmuBuf.dview) of 1..VIEW_CACHE_MAX bytes only: small copies, where building
#: a view costs as much as the copy. The DMA's hot path relies on it (a cached view is neither empty nor large).
VIEW_CACHE_MAX = 1 << 16
#: ``doca_buf_inventory_buf_reuse_by_args/_by_addr/_by_data`` exist from DOCA 3.2.
REUSE_SINCE = (3, 2)


class BufHome(Protocol):
    """Where a descriptor returns at reference count 0: an inventory or a buf pool."""

    pins: int

    def _put(self, b: EmuBuf) -> None: ...


class BufOwner(Protocol):
    """The public wrapper of an allocation (``EmuBuf.owner``)."""

    def _freed(self) -> None: ...


class EmuBuf:
    """Emulated ``doca_buf``: a window and a data region inside an mmap range."""

    __slots__ = ("inv", "mmap", "head", "len", "data", "data_len", "refcount", "next", "prev", "owner", "pins",
                 "dview", "dn", "tail", "tlen", "viewing")

    def __init__(self, inv: BufHome) -> None:
        self.inv = inv
        self.mmap: EmuMmap | None = None
        self.head = self.len = self.data = self.data_len = 0
        self.refcount = 0
        self.next: EmuBuf | None = None
        self.prev: EmuBuf | None = None  # set on every non-head element
        self.owner: object = None  # the public Buf of the allocation (a BufOwner), retired at the free
        self.pins = 0  # strict mode: tasks in flight that use this buffer
        # Copy caches of engines: views of a started local map's mv, registered with _viewed so the map
        # drops them when it stops. dview: the data region as of data_len == dn (built by the DMA engine);
        # tail: [data, head + len), tlen bytes long (room_view). Whatever changes mmap, head, len, data or
        # next clears them (_uncache): a cached view means an unchained buffer of a started local map.
        # data_len moves freely (engines grow it), so dn is checked on use. dn >= 0 exactly when dview
        # is set, tlen >= 0 exactly when tail is.
        self.dview: memoryview | None = None
        self.dn = -1
        self.tail: memoryview | None = None
        self.tlen = -1
        self.viewing = False  # in mmap.viewers (the map drops our views when it stops)

    def __repr__(self) -> str:
        return (f"<doca_buf head={self.head:#x} len={self.len} data={self.data:#x} data_len={self.data_len} "
                f"refcount={self.refcount}>")

    def _busy(self, what: str) -> None:
        raise strict.violation(self, f"{what} while {self.pins} task(s) using this buffer are in flight; "
                                     f"DOCA reads and writes it until their completions")

    def get_head(self) -> int:
        return self.head

    def get_len(self) -> int:
        return self.len

    def get_data(self) -> int:
        return self.data

    def get_data_len(self) -> int:
        return self.data_len

    def set_data(self, data: int, data_len: int) -> None:
        if data < self.head or data_len < 0 or data + data_len > self.head + self.len:
            raise DocaInvalidValue(f"data region [{data:#x}, +{data_len}) leaves the buffer window "
                                   f"[{self.head:#x}, +{self.len})")
        if self.pins:
            self._busy("set_data")
        if data != self.data:
            self.dview, self.dn, self.tail, self.tlen = None, -1, None, -1  # _uncache, inlined (the fast lane)
        self.data, self.data_len = data, data_len

    def set_data_len(self, data_len: int) -> None:
        emu_version.require("doca_buf_set_data_len", (3, 0), "added after 2.6; 2.6 has doca_buf_set_data")
        self.set_data(self.data, data_len)

    def reset_data_len(self) -> None:
        if self.pins:
            self._busy("reset_data_len")
        self.data_len = 0

    def _head_only(self, what: str) -> None:
        if self.prev is not None:
            raise DocaNotPermitted(f"{what}: only the head of a buffer list has a reference count")

    def inc_refcount(self) -> int:
        self._head_only("inc_refcount")
        if self.mmap is None:  # in its home's free list: a reference now would free it a second time
            raise DocaBadState("doca_buf is not allocated (it was returned to its inventory): no reference to add")
        before = self.refcount
        if before >= _REFCOUNT_MAX:
            raise DocaTooBig("doca_buf reference count would exceed UINT16_MAX")
        self.refcount = before + 1
        return before

    def dec_refcount(self) -> int:
        self._head_only("dec_refcount")
        before = self.refcount
        if before == 0:
            raise DocaBadState("doca_buf was already returned to its inventory")
        if before == 1 and strict.STRICT:
            b0: EmuBuf | None = self
            while b0 is not None:
                if b0.pins:
                    b0._busy("dec_refcount to 0 (the buffer returns to its inventory)")
                b0 = b0.next
        self.refcount = before - 1
        if before == 1:
            b: EmuBuf | None = self
            while b is not None:
                nxt = b.next
                b.inv._put(b)
                b = nxt
        return before

    def get_refcount(self) -> int:
        return self.refcount

    def get_next_in_list(self) -> EmuBuf | None:
        return self.next

    def get_last_in_list(self) -> EmuBuf:
        b = self
        while b.next is not None:
            b = b.next
        return b

    def get_list_len(self) -> int:
        if self.prev is not None:
            raise DocaNotPermitted("get_list_len: the buffer is not the head of a list")
        n, b = 1, self.next
        while b is not None:
            n, b = n + 1, b.next
        return n

    def is_first_in_list(self) -> bool:
        return self.prev is None

    def is_last_in_list(self) -> bool:
        return self.next is None

    def is_in_list(self) -> bool:
        return self.prev is not None or self.next is not None

    def chain_list(self, other: BufHandle) -> None:
        assert isinstance(other, EmuBuf)
        if self.prev is not None or other.prev is not None:
            raise DocaNotPermitted("chain_list joins list heads only")
        if other.refcount != 1:
            raise DocaNotPermitted("chain_list: the appended list must have reference count 1")
        if other is self or other.get_last_in_list() is self.get_last_in_list():
            raise DocaInvalidValue("chain_list: a list cannot be appended to itself")
        if self.pins or other.pins:
            (self if self.pins else other)._busy("chain_list")
        tail = self.get_last_in_list()
        tail.next, other.prev = other, tail
        tail._uncache()

    def unchain_list(self, other: BufHandle) -> None:
        assert isinstance(other, EmuBuf)
        b = self.next
        while b is not None and b is not other:
            b = b.next
        if b is None or self.prev is not None:
            raise DocaInvalidValue("unchain_list: the buffer is not an element of this list")
        assert other.prev is not None
        if self.pins:
            self._busy("unchain_list")
        other.prev.next, other.prev = None, None
        other.refcount = 1

    def reuse_by_args(self, addr: int, length: int, data: int, data_len: int) -> None:
        if self.refcount == 0 or self.mmap is None:
            raise DocaBadState("doca_buf is not allocated")
        if emu_version.VERSION < REUSE_SINCE and (addr != self.head or length != self.len):
            # Before 3.2 there is no re-aim at another window (the native backend moves the data region with
            # doca_buf_set_data when the window stays, as here, and refuses the rest).
            raise emu_version.absent("doca_buf_inventory_buf_reuse_by_args", since=REUSE_SINCE,
                                     note="older DOCA moves the data region inside the buffer's window only "
                                          "(doca_buf_set_data); take a new buffer for another window")
        _check_geometry(self.mmap, addr, length, data, data_len)
        if self.pins:
            self._busy("reuse_by_args (re-aimed)")
        self.head, self.len, self.data, self.data_len = addr, length, data, data_len
        self.dview, self.dn, self.tail, self.tlen = None, -1, None, -1  # _uncache, inlined (per IO in apps)

    def _uncache(self) -> None:
        self.dview, self.dn, self.tail, self.tlen = None, -1, None, -1

    def room_view(self) -> memoryview:
        """``[data, head + len)`` as a view of its map's bytes, cached (with its length, ``tlen``) until the
        buffer is re-aimed or the map stops: an engine appends at ``[data_len, data_len + k)`` once
        ``data_len + k <= tlen``. For engines, once they checked the map is started, local and writable."""
        v = self.tail
        if v is None:
            m = self.mmap
            assert m is not None and m.mv is not None
            o, e = self.data - m.addr, self.head + self.len - m.addr
            v = m.mv[o:e]
            if self.next is None:
                self._viewed(m)
                self.tail, self.tlen = v, e - o
        return v

    def _viewed(self, m: EmuMmap) -> None:
        if not self.viewing:
            m.viewers.add(self)
            self.viewing = True


def data_views(buf: EmuBuf) -> list[memoryview]:
    """Views of the data regions of a buffer list (sources of a task)."""
    out = []
    b: EmuBuf | None = buf
    while b is not None:
        assert b.mmap is not None
        out.append(b.mmap.view(b.data, b.data_len, False))
        b = b.next
    return out


def room(buf: EmuBuf) -> int:
    """Bytes free after the data of a destination buffer (its tail, for lists)."""
    b = buf.get_last_in_list()
    return b.head + b.len - b.data - b.data_len


def tail_view(buf: EmuBuf, n: int) -> memoryview:
    """Writable view of *n* bytes after the data of a destination (single buffer)."""
    assert buf.mmap is not None
    return buf.mmap.view(buf.data + buf.data_len, n, True)


def _check_geometry(mmap: EmuMmap, addr: int, length: int, data: int, data_len: int) -> None:
    lo, n = mmap.addr, mmap.length
    if length < 0 or addr < lo or addr + length > lo + n:
        raise DocaInvalidValue(f"buffer window [{addr:#x}, +{length}) is outside the mmap range [{lo:#x}, +{n})")
    if data_len < 0 or data < addr or data + data_len > addr + length:
        raise DocaInvalidValue(f"data region [{data:#x}, +{data_len}) is outside the window [{addr:#x}, +{length})")


class EmuBufInventory:
    """Emulated ``doca_buf_inventory``: a fixed pool of descriptors."""

    def __init__(self, num_elements: int) -> None:
        if num_elements <= 0:
            raise DocaInvalidValue("a buffer inventory needs at least one element")
        self.total = num_elements
        self.free: list[EmuBuf] = [EmuBuf(self) for _ in range(num_elements)]
        self.started = False
        self.pins = 0  # strict mode: bufs of this inventory used by tasks in flight

    def start(self) -> None:
        if self.started:
            raise DocaBadState("buffer inventory is already started")
        self.started = True

    def stop(self) -> None:
        if not self.started:
            raise DocaBadState("buffer inventory is not started")
        if self.pins:
            raise strict.violation(self, f"stop while {self.pins} of its buffers are used by tasks in flight")
        self.started = False

    def expand(self, n: int) -> None:
        emu_version.require("doca_buf_inventory_expand", (3, 0), "added after 2.6")
        if not self.started:
            raise DocaBadState("expand grows a started buffer inventory: start it first")
        if n <= 0:
            raise DocaInvalidValue("expand needs a positive number of elements")
        self.free.extend(EmuBuf(self) for _ in range(n))
        self.total += n

    def get_num_elements(self) -> int:
        return self.total

    def get_num_free_elements(self) -> int:
        return len(self.free)

    def get_by_args(self, mmap: MmapHandle, addr: int, length: int, data: int, data_len: int) -> EmuBuf:
        assert isinstance(mmap, EmuMmap)
        if not self.started:
            raise DocaBadState("buffer inventory is not started")
        if not (mmap.started or mmap.from_export) or mmap.destroyed:
            raise DocaBadState("mmap is not started")
        _check_geometry(mmap, addr, length, data, data_len)
        if not self.free:
            raise DocaNoMemory(f"buffer inventory is empty (all {self.total} descriptors in use)")
        b = self.free.pop()
        b.mmap, b.head, b.len, b.data, b.data_len, b.refcount = mmap, addr, length, data, data_len, 1
        b.dview, b.dn, b.tail, b.tlen = None, -1, None, -1  # _uncache, inlined (a buffer per IO, in some apps)
        mmap.num_bufs += 1
        return b

    def dup(self, buf: BufHandle) -> EmuBuf:
        assert isinstance(buf, EmuBuf)
        if buf.prev is not None:
            raise DocaNotPermitted("buf_dup copies whole lists: pass the list head")
        src: EmuBuf | None = buf
        head: EmuBuf | None = None
        try:
            while src is not None:
                assert src.mmap is not None
                b = self.get_by_args(src.mmap, src.head, src.len, src.data, src.data_len)
                if head is None:
                    head = b
                else:
                    tail = head.get_last_in_list()
                    tail.next, b.prev = b, tail
                    tail._uncache()
                    b.refcount = 0
                src = src.next
        except Exception:
            if head is not None:
                head.refcount = 1
                head.dec_refcount()
            raise
        assert head is not None
        return head

    def _put(self, b: EmuBuf) -> None:
        detach(b)
        self.free.append(b)

    def destroy(self) -> None:
        if len(self.free) != self.total:
            raise DocaInUse(f"{self.total - len(self.free)} buffer(s) of this inventory are still in use")
        self.started = False


def detach(b: EmuBuf) -> None:
    """Unhook a descriptor that returns to its home from its map and its list, and retire the public
    wrapper of the allocation (whatever freed it: a list head, a borrowed wrapper, C code's handle)."""
    o: BufOwner | None = b.owner  # type: ignore[assignment]  # owner is typed object for the protocol
    if o is not None:
        o._freed()
    if b.mmap is not None:
        b.mmap.num_bufs -= 1
        if b.viewing:
            b.mmap.viewers.discard(b)
            b.viewing = False
    b.mmap, b.next, b.prev, b.refcount = None, None, None, 0
    b._uncache()


def buf_inventory_create(num_elements: int) -> EmuBufInventory:
    """``doca_buf_inventory_create``."""
    return EmuBufInventory(num_elements)
