"""The emulator serving libdoca's C functions (see :mod:`doca_py.libdoca`).

``attach`` is what a libdoca library calls, once, on its first call: it fills the library's slot
table with one ``ctypes`` callback per exported function, each the serve function registered for it
(:func:`~doca_py.libdoca.serve._core.impl`) or, for what the emulator does not offer, one returning
``DOCA_ERROR_NOT_SUPPORTED``.
"""

from __future__ import annotations

import ctypes
import importlib
import threading
from typing import Any

from . import _core

__all__ = ["attach", "attached", "MODULES"]

#: The serve modules, one per DOCA library (imported at the first attach).
MODULES = ("common", "log", "dma", "compress", "erasure_coding", "rdma", "rdma_tasks", "rdma_sync_event",
           "rdma_bridge", "comch", "comch_fastpath", "sync_event", "buf_pool", "mmap_advise",
           "graph")

_lock = threading.Lock()
_keep: list[Any] = []  # the slot callbacks: alive for the process, as C holds their addresses
_loaded = False


def _load_modules() -> None:
    global _loaded
    if _loaded:
        return
    for name in MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    _loaded = True


def _present_version(text: str) -> tuple[int, int]:
    from ...emulated import version as emu_version

    # The process's emulator presents the library's version (a library of another version loaded
    # later in the same process, as the conformance tests do, is paired with the emulator by its caller).
    ver = emu_version.parse(text)
    emu_version.VERSION = ver
    return ver


def attached() -> bool:
    """Whether libdoca serves this process's DOCA calls (a libdoca library attached to the emulator)."""
    return bool(_keep)


def attach(slots: int, names: int, count: int, libname: str, version: str) -> None:
    """Fill the *count* slots at address *slots* of ``libdoca_<libname>`` (DOCA *version*); *names*
    is the library's ``const char *[]`` of the functions in slot order."""
    from ...native import capi
    from ..cgen import cb_type

    with _lock:
        ver = _present_version(version)
        _load_modules()
        decls = {d.name: d for table in capi.tables().values() for d in table}
        ledger = _core.ledger()
        name_ptrs = (ctypes.c_char_p * count).from_address(names)
        table = (ctypes.c_void_p * count).from_address(slots)
        for i in range(count):
            name = (name_ptrs[i] or b"").decode()
            decl = decls[name]
            restype, argtypes = decl.signature((*ver, 0))
            proto = ctypes.CFUNCTYPE(cb_type(restype), *(cb_type(t) for t in argtypes))
            fn = _core.IMPLS.get(name)
            target = _core.wrap(name, fn, restype) if fn is not None else _core.unserved(name, restype)
            if ledger is not None:
                target = ledger.timed(target)
            cb = proto(target)
            _keep.append(cb)
            table[i] = ctypes.cast(cb, ctypes.c_void_p).value
        _core.log.debug("libdoca_%s %s attached: %d functions, %d served", libname, version, count,
                        sum(1 for i in range(count) if (name_ptrs[i] or b"").decode() in _core.IMPLS))
