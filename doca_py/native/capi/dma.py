"""Raw declarations of libdoca_dma (``doca-c-api.md`` §2.15).

Every exported function of the 3.0.0058 ``doca_dma.h``, in header order. Both
completion callbacks of ``doca_dma_task_memcpy_set_conf`` are
[`TaskCompletionCb`][doca_py.native.capi.TaskCompletionCb] instances; ``union doca_data`` is a
``c_uint64``. Use [`load_dma`][doca_py.native.capi.dma.load_dma] for the bound functions:

```python
import ctypes
from doca_py import errors
from doca_py.native.capi.dma import load_dma

lib = load_dma()
dma = ctypes.c_void_p()
errors.check(lib.doca_dma_create(dev_ptr, ctypes.byref(dma)), "doca_dma_create")
```
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_uint8, c_uint32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, cast

from ._decl import Decl, TaskCompletionCb, register

if TYPE_CHECKING:
    from ._raw import DmaLib

__all__ = ["BEYOND_INVENTORY", "DMA", "LIBNAME", "load_dma"]

LIBNAME = "dma"

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
CB = TaskCompletionCb  # doca_dma_task_memcpy_completion_cb_t
U32_P = POINTER(c_uint32)
U64_P = POINTER(c_uint64)

# "—" rows of doca-c-api.md: absent in 2.6.0058, present in 3.0.0058.
_NEW: dict[str, Any] = {"since": (3, 0), "note": "added after 2.6"}


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


DMA: tuple[Decl, ...] = (
    _f("doca_dma_create", ERR, P, OUT),
    _f("doca_dma_destroy", ERR, P),
    _f("doca_dma_cap_task_memcpy_is_supported", ERR, P),
    _f("doca_dma_as_ctx", P, P),
    _f("doca_dma_cap_get_max_num_tasks", ERR, P, U32_P),
    _f("doca_dma_cap_task_memcpy_get_max_buf_list_len", ERR, P, U32_P),
    _f("doca_dma_cap_task_memcpy_get_max_buf_size", ERR, P, U64_P),
    _f("doca_dma_task_memcpy_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_dma_task_memcpy_alloc_init", ERR, P, P, P, DATA, OUT),
    _f("doca_dma_task_memcpy_as_task", P, P),
    _f("doca_dma_task_memcpy_set_src", None, P, P),
    _f("doca_dma_task_memcpy_get_src", P, P),
    _f("doca_dma_task_memcpy_set_dst", None, P, P),
    _f("doca_dma_task_memcpy_get_dst", P, P),
    _f("doca_dma_get_gpu_handle", ERR, P, OUT, **_NEW),
    # Not in the 3.0 headers; first called by the 3.2.0 virtiofs application (doca-c-api.md §2.17). The
    # flag's C type is inferred (uint8_t: callers pass 0, 1, false); uint8_t and bool travel alike, one
    # byte widened in the argument register, on x86_64 and AArch64.
    _f("doca_dma_set_ordered_completions", ERR, P, c_uint8, since=(3, 2),
       note="added after 3.0, first seen in 3.2.0"),
    # Its getter, in DOCA's getter shape (const object, the value through an out-pointer of the setter's
    # type). No public DOCA 3.2 header or sample at hand shows it: the signature is inferred from the setter's.
    _f("doca_dma_get_ordered_completions", ERR, P, POINTER(c_uint8), since=(3, 2),
       note="added after 3.0 with doca_dma_set_ordered_completions; signature inferred from it"),
)
"""Every exported libdoca_dma function (no ABI differences between 2.6 and 3.x; 3.2 adds ordered completions)."""

BEYOND_INVENTORY: frozenset[str] = frozenset({"doca_dma_get_ordered_completions"})
"""Declared functions that ``doca-c-api.md``'s inventory does not list (no DOCA 3.2 header or sample at hand
shows the getter: its signature is inferred from the setter's)."""

register(LIBNAME, DMA)


def load_dma() -> DmaLib:
    """The bound libdoca_dma functions (cached; opens libdoca_common first).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when libdoca_dma cannot be opened.
    """
    from . import load

    return cast("DmaLib", load(LIBNAME))
