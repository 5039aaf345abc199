"""Native ``doca_buf`` and ``doca_buf_inventory``.

Descriptor wrappers are cached per ``doca_buf *`` so recycled descriptors keep
their Python objects (no allocation per buffer on the hot path).
"""

from __future__ import annotations

import ctypes

from .._backend.protocols.core import BufHandle, MmapHandle
from ..errors import check
from ._common import flag, lib
from .borrow import Borrowable
from .mmap import NativeMmap

__all__ = ["BufCache", "NativeBuf", "NativeBufInventory", "buf_inventory_create"]

_byref = ctypes.byref


class NativeBuf:
    """``doca_buf *``."""

    __slots__ = ("ptr", "inv", "owner", "_sz", "_p", "_u16")

    def __init__(self, ptr: int, inv: BufCache) -> None:
        self.ptr = ptr
        self.inv = inv
        self.owner: object = None
        # Out-parameters reused across calls (no ctypes object per call).
        self._sz = ctypes.c_size_t()
        self._p = ctypes.c_void_p()
        self._u16 = ctypes.c_uint16()

    def _addr(self, fn_name: str) -> int:
        check(getattr(lib(), fn_name)(self.ptr, _byref(self._p)), fn_name)
        return self._p.value or 0

    def _size(self, fn_name: str) -> int:
        check(getattr(lib(), fn_name)(self.ptr, _byref(self._sz)), fn_name)
        return self._sz.value

    def get_head(self) -> int:
        return self._addr("doca_buf_get_head")

    def get_len(self) -> int:
        return self._size("doca_buf_get_len")

    def get_data(self) -> int:
        return self._addr("doca_buf_get_data")

    def get_data_len(self) -> int:
        return self._size("doca_buf_get_data_len")

    def set_data(self, data: int, data_len: int) -> None:
        head, n = self.get_head(), self.get_len()
        if data < head or data_len < 0 or data + data_len > head + n:
            # Unchecked in C (undefined behaviour); checked here like the emulated backend.
            from ..errors import DocaInvalidValue

            raise DocaInvalidValue(f"data region [{data:#x}, +{data_len}) leaves the window [{head:#x}, +{n})")
        check(lib().doca_buf_set_data(self.ptr, data, data_len), "doca_buf_set_data")

    def set_data_len(self, data_len: int) -> None:
        # doca_buf_set_data_len exists from DOCA 3.0: older runtimes refuse it (its stub names the function and
        # the version) rather than serve it through doca_buf_set_data, as the emulator's 2.6 mode does.
        fn = lib().doca_buf_set_data_len
        if fn:  # else the stub raises below
            head, n, data = self.get_head(), self.get_len(), self.get_data()
            if data_len < 0 or data + data_len > head + n:
                from ..errors import DocaInvalidValue

                raise DocaInvalidValue(f"data length {data_len} at {data:#x} leaves the window [{head:#x}, +{n})")
        check(fn(self.ptr, data_len), "doca_buf_set_data_len")

    def reset_data_len(self) -> None:
        check(lib().doca_buf_reset_data_len(self.ptr), "doca_buf_reset_data_len")

    def _count(self, fn_name: str) -> int:
        check(getattr(lib(), fn_name)(self.ptr, _byref(self._u16)), fn_name)
        return self._u16.value

    def inc_refcount(self) -> int:
        return self._count("doca_buf_inc_refcount")

    def dec_refcount(self) -> int:
        return self._count("doca_buf_dec_refcount")

    def get_refcount(self) -> int:
        return self._count("doca_buf_get_refcount")

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
        l = lib()
        if l.has("doca_buf_inventory_buf_reuse_by_args") and "doca_buf_inventory_buf_reuse_by_args" not in l.missing:
            check(l.doca_buf_inventory_buf_reuse_by_args(self.ptr, addr, length, data, data_len),
                  "doca_buf_inventory_buf_reuse_by_args")
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

    def wrap(self, ptr: int) -> NativeBuf:
        b = self._bufs.get(ptr)
        if b is None:
            b = self._bufs[ptr] = NativeBuf(ptr, self)
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
        return self.wrap(out.value or 0)

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
