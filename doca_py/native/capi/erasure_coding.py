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
from typing import Any

from ._decl import BoundLib, Decl, TaskCompletionCb, register

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


def _task(kind: str, matrix: str, src: str, dst: str, dst_getter: str | None = None) -> tuple[Decl, ...]:
    """The ten functions of one EC task type (the getter of the output may be named differently)."""
    t = f"doca_ec_task_{kind}"
    return (
        _f(f"doca_ec_cap_task_{kind}_is_supported", ERR, P),
        _f(f"{t}_set_conf", ERR, P, CB, CB, c_uint32),
        _f(f"{t}_allocate_init", ERR, P, P, P, P, DATA, OUT),
        _f(f"{t}_as_task", P, P),
        _f(f"{t}_set_{matrix}", None, P, P),
        _f(f"{t}_get_{matrix}", P, P),
        _f(f"{t}_set_{src}", None, P, P),
        _f(f"{t}_get_{src}", P, P),
        _f(f"{t}_set_{dst}", None, P, P),
        _f(f"{t}_get_{dst_getter or dst}", P, P),
    )


EC: tuple[Decl, ...] = (
    *_task("galois_mul", "coding_matrix", "src_buf", "dst_buf"),
    *_task("create", "coding_matrix", "original_data_blocks", "rdnc_blocks"),
    *_task("update", "update_matrix", "original_updated_and_rdnc_blocks", "updated_rdnc_blocks"),
    *_task("recover", "recover_matrix", "available_blocks", "recovered_data_blocks", "recovered_data"),
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


def load_ec() -> BoundLib:
    """The bound libdoca_erasure_coding functions (cached; opens libdoca_common first).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when the library cannot be opened.
    """
    from . import load

    return load(LIBNAME)
