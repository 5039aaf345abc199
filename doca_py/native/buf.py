"""Native ``doca_buf`` and ``doca_buf_inventory``.

Descriptor wrappers are cached per ``doca_buf *`` so recycled descriptors keep
their Python objects (no allocation per buffer on the hot path).
"""

from __future__ import annotations

import ctypes
from typing import NoReturn

from .._backend.protocols.core import BufHandle, MmapHandle
from ..errors import DocaInvalidValue, check
from ._common import flag, lib
from .borrow import Borrowable
from .mmap import NativeMmap

__all__ = ["BufCache", "BufFns", "NativeBuf", "NativeBufInventory", "buf_inventory_create"]

_byref = ctypes.byref


class BufFns:
    """The ``doca_buf`` functions of one loaded libdoca_common, resolved once (per inventory or pool):
    a buffer operation is one ctypes call, not a trip through the loader per call."""

    __slots__ = ("get_head", "get_len", "get_data", "get_data_len", "set_data", "set_data_len", "reset_data_len",
                 "inc_refcount", "dec_refcount", "get_refcount", "reuse", "lib")

    def __init__(self) -> None:
        l = self.lib = lib()
        self.get_head, self.get_len = l.doca_buf_get_head, l.doca_buf_get_len
        self.get_data, self.get_data_len = l.doca_buf_get_data, l.doca_buf_get_data_len
        self.set_data, self.set_data_len = l.doca_buf_set_data, l.doca_buf_set_data_len
        self.reset_data_len = l.doca_buf_reset_data_len
        self.inc_refcount, self.dec_refcount = l.doca_buf_inc_refcount, l.doca_buf_dec_refcount
        self.get_refcount = l.doca_buf_get_refcount
        name = "doca_buf_inventory_buf_reuse_by_args"
        #: ``doca_buf_inventory_buf_reuse_by_args`` when exported (DOCA 3.2), else ``None``.
        self.reuse = l.doca_buf_inventory_buf_reuse_by_args if l.has(name) and name not in l.missing else None


class NativeBuf:
    """``doca_buf *``.

    Its window (``head``, ``wlen``) is cached from the calls this binding made (``get_by_args``,
    ``reuse_by_args``) so that ``set_data``'s bounds check costs no call; ``wlen < 0``: not known (a
    descriptor this binding did not aim, or wrapped again), read from C on first need."""

    __slots__ = ("ptr", "inv", "owner", "f", "head", "wlen", "_p", "_pp", "_sz", "_psz", "_u16", "_pu16")

    def __init__(self, ptr: int, inv: BufCache) -> None:
        self.ptr = ptr
        self.inv = inv
        self.owner: object = None
        self.f = inv.fns
        self.head = 0
        self.wlen = -1
        # Out-parameters and their byref()s, reused across calls (no ctypes object per call).
        self._p = ctypes.c_void_p()
        self._pp = _byref(self._p)
        self._sz = ctypes.c_size_t()
        self._psz = _byref(self._sz)
        self._u16 = ctypes.c_uint16()
        self._pu16 = _byref(self._u16)

    def _window(self) -> None:
        """Read the window from C (once per aim this binding did not make)."""
        self.head, self.wlen = self.get_head(), self.get_len()

    def get_head(self) -> int:
        rc = self.f.get_head(self.ptr, self._pp)
        if rc:
            check(rc, "doca_buf_get_head")
        return self._p.value or 0

    def get_len(self) -> int:
        rc = self.f.get_len(self.ptr, self._psz)
        if rc:
            check(rc, "doca_buf_get_len")
        return self._sz.value

    def get_data(self) -> int:
        rc = self.f.get_data(self.ptr, self._pp)
        if rc:
            check(rc, "doca_buf_get_data")
        return self._p.value or 0

    def get_data_len(self) -> int:
        rc = self.f.get_data_len(self.ptr, self._psz)
        if rc:
            check(rc, "doca_buf_get_data_len")
        return self._sz.value

    def set_data(self, data: int, data_len: int) -> None:
        if self.wlen < 0:
            self._window()
        head = self.head
        if data < head or data_len < 0 or data + data_len > head + self.wlen:
            self._outside(data, data_len)  # unchecked in C (undefined behaviour); checked like the emulator
        rc = self.f.set_data(self.ptr, data, data_len)
        if rc:
            check(rc, "doca_buf_set_data")

    def _outside(self, data: int, data_len: int) -> NoReturn:
        raise DocaInvalidValue(f"data region [{data:#x}, +{data_len}) leaves the window [{self.head:#x}, +{self.wlen})")

    def set_data_len(self, data_len: int) -> None:
        # doca_buf_set_data_len exists from DOCA 3.0: older runtimes refuse it (its stub names the function and
        # the version) rather than serve it through doca_buf_set_data, as the emulator's 2.6 mode does.
        fn = self.f.set_data_len
        if fn:  # else the stub raises below
            if self.wlen < 0:
                self._window()
            data = self.get_data()
            if data_len < 0 or data + data_len > self.head + self.wlen:
                raise DocaInvalidValue(f"data length {data_len} at {data:#x} leaves the window "
                                       f"[{self.head:#x}, +{self.wlen})")
        rc = fn(self.ptr, data_len)
        if rc:
            check(rc, "doca_buf_set_data_len")

    def reset_data_len(self) -> None:
        rc = self.f.reset_data_len(self.ptr)
        if rc:
            check(rc, "doca_buf_reset_data_len")

    def inc_refcount(self) -> int:
        rc = self.f.inc_refcount(self.ptr, self._pu16)
        if rc:
            check(rc, "doca_buf_inc_refcount")
        return self._u16.value

    def dec_refcount(self) -> int:
        rc = self.f.dec_refcount(self.ptr, self._pu16)
        if rc:
            check(rc, "doca_buf_dec_refcount")
        return self._u16.value

    def get_refcount(self) -> int:
        rc = self.f.get_refcount(self.ptr, self._pu16)
        if rc:
            check(rc, "doca_buf_get_refcount")
        return self._u16.value

    def _addr(self, fn_name: str) -> int:
        check(getattr(lib(), fn_name)(self.ptr, _byref(self._p)), fn_name)
        return self._p.value or 0

    def _wrap(self, ptr: int | None) -> NativeBuf | None:
        return None if not ptr else self.inv.wrap(ptr)

    def get_next_in_list(self) -> NativeBuf | None:
        return self._wrap(self._addr("doca_buf_get_next_in_list"))

    def get_last_in_list(self) -> NativeBuf:
        last = self._wrap(self._addr("doca_buf_get_last_in_list"))
        return last if last is not None else self

    def get_list_len(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_buf_get_list_len(self.ptr, _byref(v)), "doca_buf_get_list_len")
        return v.value

    def is_first_in_list(self) -> bool:
        return flag(lib().doca_buf_is_first_in_list, self.ptr, "doca_buf_is_first_in_list")

    def is_last_in_list(self) -> bool:
        return flag(lib().doca_buf_is_last_in_list, self.ptr, "doca_buf_is_last_in_list")

    def is_in_list(self) -> bool:
        return flag(lib().doca_buf_is_in_list, self.ptr, "doca_buf_is_in_list")

    def chain_list(self, other: BufHandle) -> None:
        assert isinstance(other, NativeBuf)
        check(lib().doca_buf_chain_list(self.ptr, other.ptr), "doca_buf_chain_list")

    def unchain_list(self, other: BufHandle) -> None:
        assert isinstance(other, NativeBuf)
        check(lib().doca_buf_unchain_list(self.ptr, other.ptr), "doca_buf_unchain_list")

    def reuse_by_args(self, addr: int, length: int, data: int, data_len: int) -> None:
        reuse = self.f.reuse
        if reuse is not None:
            rc = reuse(self.ptr, addr, length, data, data_len)
            if rc:
                check(rc, "doca_buf_inventory_buf_reuse_by_args")
            self.head, self.wlen = addr, length
            return
        # Older runtimes: re-aim the descriptor with set_data inside the current window
        # when it fits; a new window needs a new descriptor, which would change identity.
        from ..errors import DocaNotSupported

        if addr == self.get_head() and length == self.get_len():
            self.set_data(data, data_len)
            return
        raise DocaNotSupported("re-aiming a doca_buf at a new window needs DOCA 3.2 "
                               "(doca_buf_inventory_buf_reuse_by_args); get a new buffer instead")


class BufCache(Borrowable):
    """What hands out ``doca_buf *`` (an inventory, a buf pool): one wrapper per descriptor."""

    def __init__(self, ptr: int | None) -> None:
        self.ptr = ptr
        self._bufs: dict[int, NativeBuf] = {}
        self.fns = BufFns()

    def wrap(self, ptr: int) -> NativeBuf:
        """The wrapper of *ptr*, its cached window forgotten (C may have aimed it since the last time)."""
        b = self._bufs.get(ptr)
        if b is None:
            b = self._bufs[ptr] = NativeBuf(ptr, self)
        else:
            b.wlen = -1
        return b


class NativeBufInventory(BufCache):
    """``doca_buf_inventory *``."""

    def start(self) -> None:
        check(lib().doca_buf_inventory_start(self.ptr), "doca_buf_inventory_start")

    def stop(self) -> None:
        check(lib().doca_buf_inventory_stop(self.ptr), "doca_buf_inventory_stop")

    def expand(self, n: int) -> None:
        check(lib().doca_buf_inventory_expand(self.ptr, n), "doca_buf_inventory_expand")

    def get_num_elements(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_buf_inventory_get_num_elements(self.ptr, _byref(v)), "doca_buf_inventory_get_num_elements")
        return v.value

    def get_num_free_elements(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_buf_inventory_get_num_free_elements(self.ptr, _byref(v)),
              "doca_buf_inventory_get_num_free_elements")
        return v.value

    def get_by_args(self, mmap: MmapHandle, addr: int, length: int, data: int, data_len: int) -> NativeBuf:
        assert isinstance(mmap, NativeMmap)
        lo, n = mmap.get_memrange()
        if addr < lo or addr + length > lo + n or data < addr or data + data_len > addr + length:
            # Undefined behaviour in C: refuse before DOCA sees it.
            from ..errors import DocaInvalidValue

            raise DocaInvalidValue(f"buffer [{addr:#x}, +{length}) data [{data:#x}, +{data_len}) does not fit "
                                   f"the mmap range [{lo:#x}, +{n})")
        out = ctypes.c_void_p()
        check(lib().doca_buf_inventory_buf_get_by_args(self.ptr, mmap.ptr, addr, length, data, data_len,
                                                       _byref(out)), "doca_buf_inventory_buf_get_by_args")
        b = self.wrap(out.value or 0)
        b.head, b.wlen = addr, length
        return b

    def dup(self, buf: BufHandle) -> NativeBuf:
        assert isinstance(buf, NativeBuf)
        out = ctypes.c_void_p()
        check(lib().doca_buf_inventory_buf_dup(self.ptr, buf.ptr, _byref(out)), "doca_buf_inventory_buf_dup")
        return self.wrap(out.value or 0)

    def destroy(self) -> None:
        if not self.borrowed:
            check(lib().doca_buf_inventory_destroy(self.ptr), "doca_buf_inventory_destroy")


def buf_inventory_create(num_elements: int) -> NativeBufInventory:
    out = ctypes.c_void_p()
    check(lib().doca_buf_inventory_create(num_elements, _byref(out)), "doca_buf_inventory_create")
    return NativeBufInventory(out.value)
