"""Raw declarations of ``doca_mmap_advise.h`` (libdoca_common), in header order.

DOCA Mmap Advise is a ctx whose one task, cache invalidate, tells a BlueField that the Arm cores'
system-level cache lines holding a buffer need not be written back. The header is not in DOCA
2.6.0058; NVIDIA documents the library from DOCA 2.8.0, and the 3.0.0058 header (every function
``DOCA_EXPERIMENTAL``) is what these rows follow; the ``cache_invalidate`` sample calls the same
functions with the same arguments from 3.0.0 to 3.3.0. Its task callbacks are
[`TaskCompletionCb`][doca_py.native.capi.TaskCompletionCb] instances (the task, then two
``union doca_data``). The header spells the capability and size query ``task_cache_invalidate``
and the task functions ``task_invalidate_cache``: both are kept as they are. Part of
[`COMMON`][doca_py.native.capi.common.COMMON]: bind them with
[`load_common`][doca_py.native.capi.common.load_common].
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_uint32, c_uint64, c_void_p
from typing import Any

from ._decl import Decl, TaskCompletionCb

__all__ = ["MMAP_ADVISE", "SINCE"]

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
U64_P = POINTER(c_uint64)
CB = TaskCompletionCb

SINCE = (2, 8)
"""The first DOCA release that documents ``doca_mmap_advise`` (absent from the 2.6.0058 headers)."""

_NEW: dict[str, Any] = {"since": SINCE, "note": "doca_mmap_advise.h: not in 2.6, documented from 2.8"}


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


MMAP_ADVISE: tuple[Decl, ...] = (
    _f("doca_mmap_advise_create", ERR, P, OUT, **_NEW),
    _f("doca_mmap_advise_destroy", ERR, P, **_NEW),
    _f("doca_mmap_advise_as_ctx", P, P, **_NEW),
    _f("doca_mmap_advise_cap_task_cache_invalidate_is_supported", ERR, P, **_NEW),
    _f("doca_mmap_advise_task_cache_invalidate_get_max_buf_size", ERR, P, U64_P, **_NEW),
    _f("doca_mmap_advise_task_invalidate_cache_set_conf", ERR, P, CB, CB, c_uint32, **_NEW),
    _f("doca_mmap_advise_task_invalidate_cache_alloc_init", ERR, P, P, DATA, OUT, **_NEW),
    _f("doca_mmap_advise_task_invalidate_cache_as_doca_task", P, P, **_NEW),
    _f("doca_mmap_advise_task_invalidate_cache_set_buf", None, P, P, **_NEW),
    _f("doca_mmap_advise_task_invalidate_cache_get_buf", P, P, **_NEW),
)
"""Every function of ``doca_mmap_advise.h``."""
