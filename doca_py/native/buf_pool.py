"""Native ``doca_buf_pool`` (libdoca_common)."""

from __future__ import annotations

import ctypes

from .._backend.protocols.core import MmapHandle
from ..errors import DocaInvalidValue, check
from ._common import lib
from .buf import BufCache, NativeBuf
from .mmap import NativeMmap

__all__ = ["NativeBufPool", "buf_pool_create"]

_byref = ctypes.byref


class NativeBufPool(BufCache):
    """``doca_buf_pool *``."""

    def start(self) -> None:
        check(lib().doca_buf_pool_start(self.ptr), "doca_buf_pool_start")

    def stop(self) -> None:
        check(lib().doca_buf_pool_stop(self.ptr), "doca_buf_pool_stop")

    def set_element_alignment(self, alignment: int) -> None:
        if alignment < 1:
            raise DocaInvalidValue(f"element alignment must be a power of 2 (at least 1), got {alignment}")
        check(lib().doca_buf_pool_set_element_alignment(self.ptr, alignment), "doca_buf_pool_set_element_alignment")

    def get_element_alignment(self) -> int:
        v = ctypes.c_size_t()
        check(lib().doca_buf_pool_get_element_alignment(self.ptr, _byref(v)), "doca_buf_pool_get_element_alignment")
        return v.value

    def get_num_elements(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_buf_pool_get_num_elements(self.ptr, _byref(v)), "doca_buf_pool_get_num_elements")
        return v.value

    def get_num_free_elements(self) -> int:
        v = ctypes.c_uint32()
        check(lib().doca_buf_pool_get_num_free_elements(self.ptr, _byref(v)), "doca_buf_pool_get_num_free_elements")
        return v.value

    def buf_alloc(self) -> NativeBuf:
        out = ctypes.c_void_p()
        check(lib().doca_buf_pool_buf_alloc(self.ptr, _byref(out)), "doca_buf_pool_buf_alloc")
        return self.wrap(out.value or 0)

    def destroy(self) -> None:
        if not self.borrowed:
            check(lib().doca_buf_pool_destroy(self.ptr), "doca_buf_pool_destroy")


def buf_pool_create(num_elements: int, element_size: int, mmap: MmapHandle) -> NativeBufPool:
    """``doca_buf_pool_create``."""
    assert isinstance(mmap, NativeMmap)
    if num_elements <= 0 or element_size <= 0:  # size_t in C: a negative count would wrap
        raise DocaInvalidValue(f"a buf pool needs a positive number of elements of a positive size, got "
                               f"{num_elements} of {element_size}")
    out = ctypes.c_void_p()
    check(lib().doca_buf_pool_create(num_elements, element_size, mmap.ptr, _byref(out)), "doca_buf_pool_create")
    return NativeBufPool(out.value)
