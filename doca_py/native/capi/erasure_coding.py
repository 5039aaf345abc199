"""Raw declarations of libdoca_erasure_coding, the ``doca_ec_*`` API (``doca-c-api.md`` §2.13).

Every exported function of the 3.0.0058 ``doca_erasure_coding.h``, in header order;
2.6.0058 has the same names and ABI. Index arrays (``uint32_t *``) are
``(c_uint32 * n)`` arrays, the raw matrix of ``doca_ec_matrix_create_from_raw`` a
``(c_uint8 * (k * m))`` array. Use [`load_ec`][doca_py.native.capi.erasure_coding.load_ec] for the bound functions:

```python
import ctypes
from doca_py import errors
from doca_py.native.capi.erasure_coding import load_ec

lib = load_ec()
ec = ctypes.c_void_p()
errors.check(lib.doca_ec_create(dev_ptr, ctypes.byref(ec)), "doca_ec_create")
```
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, cast

from ._decl import Decl, TaskCompletionCb, register

if TYPE_CHECKING:
    from ._raw import ErasureCodingLib

__all__ = ["EC", "LIBNAME", "TASK_TYPES", "load_ec"]

LIBNAME = "erasure_coding"

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
CB = TaskCompletionCb  # doca_ec_task_*_completion_cb_t
U8_P = POINTER(c_uint8)
U32_P = POINTER(c_uint32)
U64_P = POINTER(c_uint64)

TASK_TYPES = ("galois_mul", "create", "update", "recover")
"""EC task types as they appear in the function names."""


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


EC: tuple[Decl, ...] = (
    # -- galois_mul
    _f("doca_ec_cap_task_galois_mul_is_supported", ERR, P),
    _f("doca_ec_task_galois_mul_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_ec_task_galois_mul_allocate_init", ERR, P, P, P, P, DATA, OUT),
    _f("doca_ec_task_galois_mul_as_task", P, P),
    _f("doca_ec_task_galois_mul_set_coding_matrix", None, P, P),
    _f("doca_ec_task_galois_mul_get_coding_matrix", P, P),
    _f("doca_ec_task_galois_mul_set_src_buf", None, P, P),
    _f("doca_ec_task_galois_mul_get_src_buf", P, P),
    _f("doca_ec_task_galois_mul_set_dst_buf", None, P, P),
    _f("doca_ec_task_galois_mul_get_dst_buf", P, P),
    # -- create
    _f("doca_ec_cap_task_create_is_supported", ERR, P),
    _f("doca_ec_task_create_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_ec_task_create_allocate_init", ERR, P, P, P, P, DATA, OUT),
    _f("doca_ec_task_create_as_task", P, P),
    _f("doca_ec_task_create_set_coding_matrix", None, P, P),
    _f("doca_ec_task_create_get_coding_matrix", P, P),
    _f("doca_ec_task_create_set_original_data_blocks", None, P, P),
    _f("doca_ec_task_create_get_original_data_blocks", P, P),
    _f("doca_ec_task_create_set_rdnc_blocks", None, P, P),
    _f("doca_ec_task_create_get_rdnc_blocks", P, P),
    # -- update
    _f("doca_ec_cap_task_update_is_supported", ERR, P),
    _f("doca_ec_task_update_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_ec_task_update_allocate_init", ERR, P, P, P, P, DATA, OUT),
    _f("doca_ec_task_update_as_task", P, P),
    _f("doca_ec_task_update_set_update_matrix", None, P, P),
    _f("doca_ec_task_update_get_update_matrix", P, P),
    _f("doca_ec_task_update_set_original_updated_and_rdnc_blocks", None, P, P),
    _f("doca_ec_task_update_get_original_updated_and_rdnc_blocks", P, P),
    _f("doca_ec_task_update_set_updated_rdnc_blocks", None, P, P),
    _f("doca_ec_task_update_get_updated_rdnc_blocks", P, P),
    # -- recover
    _f("doca_ec_cap_task_recover_is_supported", ERR, P),
    _f("doca_ec_task_recover_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_ec_task_recover_allocate_init", ERR, P, P, P, P, DATA, OUT),
    _f("doca_ec_task_recover_as_task", P, P),
    _f("doca_ec_task_recover_set_recover_matrix", None, P, P),
    _f("doca_ec_task_recover_get_recover_matrix", P, P),
    _f("doca_ec_task_recover_set_available_blocks", None, P, P),
    _f("doca_ec_task_recover_get_available_blocks", P, P),
    _f("doca_ec_task_recover_set_recovered_data_blocks", None, P, P),
    _f("doca_ec_task_recover_get_recovered_data", P, P),
    _f("doca_ec_create", ERR, P, OUT),
    _f("doca_ec_destroy", ERR, P),
    _f("doca_ec_as_ctx", P, P),
    _f("doca_ec_cap_get_max_block_size", ERR, P, U64_P),
    _f("doca_ec_cap_get_max_buf_list_len", ERR, P, U32_P),
    _f("doca_ec_matrix_create", ERR, P, c_int, c_size_t, c_size_t, OUT),
    _f("doca_ec_matrix_create_from_raw", ERR, P, U8_P, c_size_t, c_size_t, OUT),
    _f("doca_ec_matrix_create_update", ERR, P, P, U32_P, c_size_t, OUT),
    _f("doca_ec_matrix_create_recover", ERR, P, P, U32_P, c_size_t, OUT),
    _f("doca_ec_matrix_destroy", ERR, P),
)
"""Every exported libdoca_erasure_coding function (same ABI in 2.6 and 3.x)."""

register(LIBNAME, EC)


def load_ec() -> ErasureCodingLib:
    """The bound libdoca_erasure_coding functions (cached; opens libdoca_common first).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when the library cannot be opened.
    """
    from . import load

    return cast("ErasureCodingLib", load(LIBNAME))
