"""Raw declarations of ``doca_buf_pool.h`` (libdoca_common), in header order.

The same ABI in DOCA 2.6 and 3.x. Part of [`COMMON`][doca_py.native.capi.common.COMMON]: bind them
with [`load_common`][doca_py.native.capi.common.load_common].
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from typing import Any

from ._decl import Decl

__all__ = ["BUF_POOL"]

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
DATA_P = POINTER(c_uint64)  # union doca_data *
U32_P = POINTER(c_uint32)
SIZE_P = POINTER(c_size_t)


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


BUF_POOL: tuple[Decl, ...] = (
    _f("doca_buf_pool_create", ERR, c_size_t, c_size_t, P, OUT),
    _f("doca_buf_pool_destroy", ERR, P),
    _f("doca_buf_pool_start", ERR, P),
    _f("doca_buf_pool_stop", ERR, P),
    _f("doca_buf_pool_buf_alloc", ERR, P, OUT),
    _f("doca_buf_pool_set_user_data", ERR, P, DATA),
    _f("doca_buf_pool_set_element_alignment", ERR, P, c_size_t),
    _f("doca_buf_pool_get_num_elements", ERR, P, U32_P),
    _f("doca_buf_pool_get_num_free_elements", ERR, P, U32_P),
    _f("doca_buf_pool_get_user_data", ERR, P, DATA_P),
    _f("doca_buf_pool_get_element_alignment", ERR, P, SIZE_P),
)
"""Every function of ``doca_buf_pool.h``."""
