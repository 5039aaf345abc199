"""``doca_buf`` and ``doca_buf_inventory``.

A [`Buf`][doca_py.buf.Buf] is a window ``[head, head+len)`` inside a started mmap with a data
region ``[data, data+data_len)`` inside the window. Sources are read from their
data region; destinations are written after their data, which then grows.
Addresses are in the mmap's address space (``Mmap.get_memrange()``).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, cast

from ._args import caller, expect, wrong_type
from ._backend import backend
from ._lifetime import DocaObject
from ._backend.protocols.core import BufHandle, BufInventoryHandle
from .errors import DocaBadState, DocaInvalidValue, DocaUsageError
from .mmap import Mmap

if TYPE_CHECKING:
    from .buf_pool import BufPool

__all__ = ["BufInventory", "Buf", "BufLane"]



_U32_MAX = (1 << 32) - 1


def _count(where: str, num_elements: object) -> None:
    """A descriptor count: an ``int`` from 1 to ``UINT32_MAX`` (what DOCA counts inventories in)."""
    if not isinstance(num_elements, int):
        raise wrong_type(where, int, num_elements=num_elements)
    if not 0 < num_elements <= _U32_MAX:
        raise DocaInvalidValue(f"{where}: num_elements must be 1..{_U32_MAX}, got {num_elements}")


class BufInventory(DocaObject):
    """``doca_buf_inventory``: a fixed pool of buffer descriptors. Started on creation
    unless ``start=False``."""

    _warn_unclosed = True

    def __init__(self, num_elements: int, *, start: bool = True, _handle: BufInventoryHandle | None = None) -> None:
        super().__init__()
        if _handle is not None:  # from_handle
            self._h: BufInventoryHandle = _handle
            return
        _count("BufInventory", num_elements)
        self._h = backend.buf.buf_inventory_create(num_elements)
        self._arm_finalizer(self._h.destroy)
        if start:
            self._h.start()

    @classmethod
    def from_handle(cls, handle: BufInventoryHandle | int) -> BufInventory:
        """Python-only: wrap an existing ``doca_buf_inventory`` without taking ownership (it is used as it is: started
        or not).

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_buf_inventory`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        inv = cls(0, _handle=backend.borrow_buf_inventory(handle) if isinstance(handle, int) else handle)
        inv._borrow()
        return inv

    def start(self) -> None:
        """``doca_buf_inventory_start``. The constructor starts the inventory already."""
        self._h.start()

    def stop(self) -> None:
        """``doca_buf_inventory_stop``.

        :raises DocaInUse: while buffers of the inventory are held.
        """
        self._h.stop()

    def expand(self, num_elements: int) -> None:
        """``doca_buf_inventory_expand``: add *num_elements* descriptors to the pool.

        :param num_elements: how many to add (``1`` to ``2**32 - 1``: a ``uint32_t``).
        :raises DocaNotSupported: on DOCA 2.6 (``doca_buf_inventory_expand`` exists from 3.0).
        """
        _count("BufInventory.expand", num_elements)
        self._h.expand(num_elements)

    def get_num_elements(self) -> int:
        """``doca_buf_inventory_get_num_elements``: the size of the pool."""
        return self._h.get_num_elements()

    def get_num_free_elements(self) -> int:
        """``doca_buf_inventory_get_num_free_elements``: how many descriptors are free."""
        return self._h.get_num_free_elements()

    def _wrap(self, h: BufHandle, mmap: Mmap) -> Buf:
        return wrap_buf(h, self, mmap)

    def buf_get_by_args(self, mmap: Mmap, addr: int, length: int, data: int, data_len: int) -> Buf:
        """``doca_buf_inventory_buf_get_by_args``: window ``[addr, addr+length)`` with data ``[data,
        data+data_len)``."""
        return self._get(mmap, addr, length, data, data_len)

    def buf_get_by_addr(self, mmap: Mmap, addr: int, length: int) -> Buf:
        """``doca_buf_inventory_buf_get_by_addr``: an empty buffer (destination): data at *addr*, data_len 0."""
        return self._get(mmap, addr, length, addr, 0)

    def buf_get_by_data(self, mmap: Mmap, data: int, data_len: int) -> Buf:
        """``doca_buf_inventory_buf_get_by_data``: a full buffer (source): window = data region."""
        return self._get(mmap, data, data_len, data, data_len)

    def _get(self, mmap: Mmap, addr: int, length: int, data: int, data_len: int) -> Buf:
        self._check_open()
        if not isinstance(mmap, Mmap):
            raise wrong_type(caller(), Mmap, mmap=mmap)  # the buf_get_by_* the user called
        return self._wrap(self._h.get_by_args(mmap._h, addr, length, data, data_len), mmap)

    def buf_dup(self, buf: Buf) -> Buf:
        """``doca_buf_inventory_buf_dup``: a new descriptor list with the same geometry (the bytes are shared)."""
        if not isinstance(buf, Buf):
            raise wrong_type("BufInventory.buf_dup", Buf, buf=buf)
        return self._wrap(self._h.dup(buf._h), buf._mmap)

    def _close(self) -> None:
        self._h.destroy()

    def _repr_facts(self) -> list[str]:
        return [f"elements={self._h.get_num_elements()}", f"free={self._h.get_num_free_elements()}"]

    def __enter__(self) -> BufInventory:
        return self


_FREED = ("this Buf was freed (its reference count reached 0): its descriptor went back to its inventory or "
          "pool and may be another holder's now; take a new buffer")


def freed_buf(where: str, **bufs: Buf | None) -> DocaBadState:
    """The error for the first of *bufs* (name=value) that was freed, given to a task by *where*: refused
    when the task is built, on every backend (the descriptor may be another holder's by the time it runs)."""
    for name, buf in bufs.items():
        if buf is not None and buf._closed:
            return DocaBadState(f"{where}: {name}: {_FREED}")
    raise AssertionError(f"{where}: none of {', '.join(bufs)} was freed")  # the caller's test disagrees: a bug
_tombstones: dict[type, object] = {}
_dead: set[type] = set()  # the tombstones' classes


def _tombstone(h: BufHandle) -> BufHandle:
    """What a freed wrapper holds instead of its descriptor: an instance of the descriptor's own class
    (the backends' type checks pass) whose every attribute raises ``DocaBadState``, so that whatever uses
    the stale wrapper (its methods, a task it is given to) fails at once, without a check on the way."""
    cls = type(h)
    t = _tombstones.get(cls)
    if t is None:
        def refuse(self: object, name: str) -> NoReturn:
            raise DocaBadState(_FREED)

        def look(self: object, name: str) -> Any:
            if name == "__class__":  # isinstance() and the garbage collector's tools may look at any object
                return object.__getattribute__(self, name)
            refuse(self, name)

        dead = type(f"Freed{cls.__name__}", (cls,), {"__getattribute__": look, "__setattr__": refuse,
                                                      "__repr__": lambda self: "<freed doca_buf>"})
        t = _tombstones[cls] = object.__new__(dead)
        _dead.add(dead)
    return cast(BufHandle, t)


def _owner_refs(h: BufHandle | _Probe) -> int:
    return sys.getrefcount(h.owner)


class _Probe:
    __slots__ = ("owner",)

    def __init__(self) -> None:
        self.owner = object()


#: What `_owner_refs` says of a wrapper that only its descriptor references (measured: interpreters differ).
_ALONE = _owner_refs(_Probe())


_knobs: Any = None  # doca_py.emulated.strict (its STRICT can change), once an emulated descriptor was wrapped
_lax: dict[type, bool] = {}  # by descriptor class: whether it is the emulator's (which has a non-strict mode)


def wrap_buf(h: BufHandle, home: BufInventory | BufPool, mmap: Mmap) -> Buf:
    """The public ``Buf`` of a descriptor *home* just handed out.

    A wrapper is retired when its allocation is freed (every use then raises). The descriptor's previous
    wrapper is reused (no allocation per buffer) on the emulator outside its strict mode (the hot path
    stays as cheap as it was; a stale reference is caught until the descriptor is handed out again), or
    when nothing but the descriptor references it (no one can use it stale). Otherwise this allocation
    gets a new wrapper and the old one stays retired: strict mode and the native backend catch every use
    after free. A previous
    wrapper not retired yet (the native backend does not see frees made in C) is retired here."""
    global _knobs
    buf = cast("Buf | None", h.owner)
    if buf is not None:
        lax = _lax.get(type(h))
        if lax is None:
            lax = _lax[type(h)] = type(h).__module__.startswith("doca_py.emulated.")
            if lax:
                _knobs = sys.modules["doca_py.emulated.strict"]  # loaded with the emulated descriptors
        if (lax and not _knobs.STRICT) or _owner_refs(h) <= _ALONE + 1:  # + 1: our own `buf`
            buf._h, buf._mmap, buf._closed = h, mmap, False
            home._adopt(buf)
            mmap._adopt(buf)
            return buf
        buf._freed()
    buf = Buf(h, home, mmap)
    h.owner = buf
    home._adopt(buf)
    mmap._adopt(buf)
    return buf


class BufLane(NamedTuple):
    """Python-only, the fast lane of one buffer ([`Buf.fast_lane`][doca_py.buf.Buf.fast_lane]): its re-aim and
    length operations as the backend's own functions, bound to its descriptor. Each is one call (one Python
    frame; on the native backend one ctypes call) and checks what the [`Buf`][doca_py.buf.Buf] method of the
    same name checks."""

    set_data: Callable[[int, int], None]
    """``set_data(data, data_len)``: ``doca_buf_set_data`` (the data region and its length in one call)."""
    set_data_len: Callable[[int], None]
    """``set_data_len(data_len)``: ``doca_buf_set_data_len`` (DOCA 3.0+)."""
    reset_data_len: Callable[[], None]
    """``reset_data_len()``: ``doca_buf_reset_data_len`` (a destination written from its data again)."""
    reuse_by_args: Callable[[int, int, int, int], None]
    """``reuse_by_args(addr, length, data, data_len)``: ``doca_buf_inventory_buf_reuse_by_args`` (DOCA 3.2+:
    a new window; before, only the window the buffer has)."""
    get_data_len: Callable[[], int]
    """``get_data_len()``: ``doca_buf_get_data_len`` (what a task wrote into a destination)."""


#: A Buf has no children: every Buf shares this (always empty) set instead of building its own.
_NO_CHILDREN: weakref.WeakSet[Any] = weakref.WeakSet()


class Buf(DocaObject):
    """``doca_buf``. Returned to its inventory when the reference count reaches 0;
    [`close`][doca_py.buf.Buf.close] drops every reference.

    Each allocation has its own wrapper. Once the buffer is freed (its reference count reached 0, or its
    inventory, pool or mmap closed) every use of the wrapper raises
    [`DocaBadState`][doca_py.errors.DocaBadState], as does giving it to a task: the descriptor may already
    be another holder's."""

    # DocaObject.__init__'s state as class defaults (no per-object WeakSet): one Buf per allocation stays cheap.
    _closed = False
    _children = _NO_CHILDREN
    _finalizer = None

    def __init__(self, handle: BufHandle, inventory: BufInventory | BufPool, mmap: Mmap) -> None:
        self._h = handle
        self._inv = inventory
        self._mmap = mmap

    def _adopt(self, child: DocaObject) -> None:
        raise DocaUsageError("a Buf has no children")  # _NO_CHILDREN is shared: never add to it

    def _freed(self) -> None:
        """The buffer went back to its home: retire this wrapper (idempotent)."""
        h = self._h
        if type(h) in _dead:
            return
        # Still the descriptor's owner: wrap_buf reuses it if no one else keeps it.
        self._h = _tombstones.get(type(h)) or _tombstone(h)  # type: ignore[assignment]
        self._closed = True

    @classmethod
    def from_handle(cls, inventory: BufInventory, mmap: Mmap, handle: BufHandle | int) -> Buf:
        """Python-only: wrap an existing ``doca_buf`` taken from *inventory* and pointing into *mmap*, without taking a
        reference (its reference count stays what it is).

        *handle* is another wrapper's ``handle``: on the native backend the address of a C ``doca_buf`` (one
        ``doca_buf_inventory_buf_get_by_args`` gave C code, say), on the emulated backend the backend object.
        DOCA cannot tell a buffer's inventory or mmap, so they are arguments: *inventory* wraps the inventory
        the buffer came from, *mmap* the map it points into (checked: the buffer must lie in its range).
        The wrapper is borrowed: its ``close`` never drops a reference, so the buffer returns to its
        inventory only when its holder calls ``doca_buf_dec_refcount``; it closes with *inventory* and *mmap*.

        :raises DocaInvalidValue: when the buffer lies outside *mmap*'s range, or *handle* is NULL.
        """
        expect("Buf.from_handle", BufInventory, inventory=inventory)
        expect("Buf.from_handle", Mmap, mmap=mmap)
        inventory._check_open()
        mmap._check_open()
        h = backend.borrow_buf(handle, inventory._h) if isinstance(handle, int) else handle
        base, n = mmap.get_memrange()
        head, length = h.get_head(), h.get_len()
        if head < base or head + length > base + n:
            raise DocaInvalidValue(f"the buffer [{head:#x}, +{length}) is outside the mmap range [{base:#x}, +{n})")
        # Not recorded as h.owner: the inventory recycles that wrapper for the descriptor's next (owned) use.
        buf = cls(h, inventory, mmap)
        buf._borrow()
        inventory._adopt(buf)
        mmap._adopt(buf)
        return buf

    def get_head(self) -> int:
        """``doca_buf_get_head``: the address where the buffer starts."""
        return self._h.get_head()

    def get_len(self) -> int:
        """``doca_buf_get_len``: the length of the whole buffer."""
        return self._h.get_len()

    def get_data(self) -> int:
        """``doca_buf_get_data``: the address of the data section."""
        return self._h.get_data()

    def get_data_len(self) -> int:
        """``doca_buf_get_data_len``: the length of the data section."""
        return self._h.get_data_len()

    def set_data(self, data: int, data_len: int) -> None:
        """``doca_buf_set_data``: move the data region; it must stay inside the window (checked)."""
        self._h.set_data(data, data_len)

    def set_data_len(self, data_len: int) -> None:
        """``doca_buf_set_data_len``: set the length of the data section (it keeps its start).

        :param data_len: the new length.
        :raises DocaNotSupported: on DOCA 2.6 (``doca_buf_set_data_len`` exists from 3.0; use ``set_data``).
        :raises DocaInvalidValue: when the data would end past the buffer.
        """
        self._h.set_data_len(data_len)

    def reset_data_len(self) -> None:
        """``doca_buf_reset_data_len``: set the data length to 0 (the destination of a task is written from there)."""
        self._h.reset_data_len()

    def fast_lane(self) -> BufLane:
        """Python-only, the fast lane: this buffer's per-IO operations as one-call functions (a
        [`BufLane`][doca_py.buf.BufLane]), to keep with a buffer that is re-aimed for every IO.

        The functions skip this wrapper (no second frame, no freed-wrapper check): they are valid while the
        buffer is held. After its reference count reaches 0 call them no more: the descriptor may be
        another holder's, as in C.

        ```python
        lane = buf.fast_lane()
        lane.set_data(addr, 4096)     # doca_buf_set_data: one call
        lane.reset_data_len()         # doca_buf_reset_data_len: one call
        ```

        :raises DocaBadState: when the buffer was freed.
        """
        h = self._h
        return BufLane(h.set_data, h.set_data_len, h.reset_data_len, h.reuse_by_args, h.get_data_len)

    def reuse_by_addr(self, addr: int, length: int) -> None:
        """``doca_buf_inventory_buf_reuse_by_addr``: re-aim at a new window in the same mmap, with empty data.
        DOCA 3.2+; before, only at the window the buffer has (its data moves), else ``DocaNotSupported``."""
        self._h.reuse_by_args(addr, length, addr, 0)

    def reuse_by_data(self, data: int, data_len: int) -> None:
        """``doca_buf_inventory_buf_reuse_by_data``: re-aim so that window = data region = ``[data, data+data_len)``.
        DOCA 3.2+; before, only at the window the buffer has (its data moves), else ``DocaNotSupported``."""
        self._h.reuse_by_args(data, data_len, data, data_len)

    def inc_refcount(self) -> int:
        """``doca_buf_inc_refcount``: add a reference; returns the count before.

        :raises DocaBadState: when the buffer was freed (no one holds it).
        """
        return self._h.inc_refcount()

    def dec_refcount(self) -> int:
        """``doca_buf_dec_refcount``: drop a reference; returns the count before. At 0 the list returns to the
        inventory and this wrapper is retired.

        :raises DocaBadState: when the buffer was freed already.
        """
        before = self._h.dec_refcount()
        if before == 1 and not self._closed:  # the emulated backend retired it already
            self._freed()
        return before

    def get_refcount(self) -> int:
        """``doca_buf_get_refcount``: the reference count."""
        return self._h.get_refcount()

    def _peer(self, h: BufHandle) -> Buf:
        # List elements made by buf_dup have no wrapper until someone asks for one.
        buf = cast("Buf | None", h.owner)
        if buf is None or buf._closed:  # none yet, or the one of a freed allocation
            buf = Buf(h, self._inv, self._mmap)
            h.owner = buf
        return buf

    def get_next_in_list(self) -> Buf | None:
        """``doca_buf_get_next_in_list``: the next buffer of the chain, ``None`` at the end."""
        nxt = self._h.get_next_in_list()
        return None if nxt is None else self._peer(nxt)

    def get_last_in_list(self) -> Buf:
        """``doca_buf_get_last_in_list``: the last buffer of the chain."""
        return self._peer(self._h.get_last_in_list())

    def get_list_len(self) -> int:
        """``doca_buf_get_list_len``: the number of buffers in the chain."""
        return self._h.get_list_len()

    def is_first_in_list(self) -> bool:
        """``doca_buf_is_first_in_list``: whether this buffer heads its chain."""
        return self._h.is_first_in_list()

    def is_last_in_list(self) -> bool:
        """``doca_buf_is_last_in_list``: whether this buffer ends its chain."""
        return self._h.is_last_in_list()

    def is_in_list(self) -> bool:
        """``doca_buf_is_in_list``: whether the buffer is chained with others."""
        return self._h.is_in_list()

    def chain_list(self, other: Buf) -> None:
        """``doca_buf_chain_list``: append the list headed by *other* (reference count 1) to this list."""
        if not isinstance(other, Buf):
            raise wrong_type("Buf.chain_list", Buf, other=other)
        self._h.chain_list(other._h)

    def unchain_list(self, other: Buf) -> None:
        """``doca_buf_unchain_list``: split this list before *other*, which becomes a head with reference count 1."""
        if not isinstance(other, Buf):
            raise wrong_type("Buf.unchain_list", Buf, other=other)
        self._h.unchain_list(other._h)

    @property
    def mmap(self) -> Mmap:
        """Python-only: the [`Mmap`][doca_py.mmap.Mmap] the buffer points into."""
        return self._mmap

    def data_view(self) -> memoryview:
        """Python-only: a CPU view of the data region (locally backed mmaps only)."""
        return self._mmap.view(self._h.get_data(), self._h.get_data_len())

    def window_view(self) -> memoryview:
        """Python-only: a CPU view of the whole window."""
        return self._mmap.view(self._h.get_head(), self._h.get_len())

    def _close(self) -> None:
        h = self._h
        if h.is_first_in_list() and h.get_refcount():
            while h.dec_refcount() > 1:
                pass
        self._freed()

    def _repr_facts(self) -> list[str]:
        h = self._h
        return [f"head={h.get_head():#x}", f"len={h.get_len()}", f"data={h.get_data():#x}",
                f"data_len={h.get_data_len()}", f"refcount={h.get_refcount()}"]

    def __enter__(self) -> Buf:
        return self
