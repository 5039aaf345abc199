"""The public raw layer: DOCA's C functions through ``ctypes``, one attribute per function.

For power users and for the object layer (like ``cuda.bindings`` under ``cuda.core``).
Functions keep their C names, argument order and raw return values: a
``doca_error_t`` comes back as an ``int`` to pass to [`doca_py.errors.check`][doca_py.errors.check];
out-parameters are passed with ``ctypes.byref``; ``union doca_data`` is a plain
integer (``c_uint64``); callbacks are instances of the ``CFUNCTYPE`` classes exported
here and must be kept alive while DOCA may call them.

Signatures follow the loaded runtime (``doca_version_runtime()``): where DOCA 2.6 and
3.x differ under one symbol name the 2.6 ``argtypes`` are installed on a 2.6 runtime.
A function the loaded library does not export is a falsy stub raising
[`DocaNotSupported`][doca_py.errors.DocaNotSupported] that says which DOCA versions have it.

Example:

```python
import ctypes
from doca_py import errors
from doca_py.native import capi

lib = capi.load_common()
devs, n = ctypes.POINTER(ctypes.c_void_p)(), ctypes.c_uint32()
errors.check(lib.doca_devinfo_create_list(ctypes.byref(devs), ctypes.byref(n)))
```

Tables: [`COMMON`][doca_py.native.capi.common.COMMON] for libdoca_common. A new library's table is a module in this
package that calls [`register`][doca_py.native.capi.register]; [`tables`][doca_py.native.capi.tables] (used by the probe) finds it.
Each C function is one literal row (``_f("doca_rdma_set_mtu", ERR, P, ENUM)``), so ``grep`` finds it
with its signature and DOCA versions.

GIL: the data path's never-blocking calls (``doca_pe_progress``, ``doca_task_submit``, task and buffer
getters/setters, task and buffer allocation) keep the GIL during the call (bound through ``ctypes.PyDLL``),
everything else releases it (``ctypes.CDLL``); [`keeps_gil`][doca_py.native.capi.keeps_gil] decides.

Typing: ``load_common()``, ``load_rdma()`` … return the ``Protocol`` of their library from the
generated ``_raw.pyi`` (``python -m doca_py.native.capi.gen_stubs`` regenerates it after editing
a table), so mypy checks each call's arity, argument kinds and result.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from .. import loader
from ._decl import (
    BoundLib,
    KEEPS_GIL,
    MAY_BLOCK,
    CtxStateChangedCb,
    Decl,
    GraphCompletionCb,
    GraphUserNodeCb,
    LogFlushCb,
    MissingFunction,
    MmapMemrangeFreeCb,
    TaskCompletionCb,
    Variant,
    Version,
    bind,
    format_version,
    keeps_gil,
    pre3,
    register,
    registered,
)
from .common import COMMON, INLINE, load_common

__all__ = [
    "BoundLib",
    "Decl",
    "Variant",
    "Version",
    "MissingFunction",
    "TaskCompletionCb",
    "CtxStateChangedCb",
    "MmapMemrangeFreeCb",
    "LogFlushCb",
    "GraphCompletionCb",
    "GraphUserNodeCb",
    "COMMON",
    "INLINE",
    "bind",
    "keeps_gil",
    "KEEPS_GIL",
    "MAY_BLOCK",
    "format_version",
    "pre3",
    "register",
    "tables",
    "load",
    "load_common",
]

_lock = threading.Lock()
# libname -> (the CDLL it was bound on, the binding). Compared by identity with the
# loader's cached CDLL so loader.reset() invalidates it without a hook.
_bound: dict[str, tuple[object, BoundLib]] = {}


def tables() -> dict[str, tuple[Decl, ...]]:
    """Every declaration table, by short library name (imports all modules of this package)."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return registered()


def load(libname: str) -> BoundLib:
    """The bound functions of ``libdoca_<libname>``, cached per loaded library.

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when the library cannot be opened, ``ValueError`` when no table exists for it.
    """
    cdll = loader.load(libname)
    hit = _bound.get(libname)
    if hit is not None and hit[0] is cdll:
        return hit[1]
    decls = tables().get(libname)
    if decls is None:
        raise ValueError(f"no declaration table for libdoca_{libname}")
    with _lock:
        hit = _bound.get(libname)
        if hit is not None and hit[0] is cdll:
            return hit[1]
        lib = bind(cdll, decls, loader.runtime_version(), libname=libname)
        if libname == "common":
            from ..inline import install

            install(lib)
        _bound[libname] = (cdll, lib)
    return lib
