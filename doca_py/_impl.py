"""Backend selection: ``DOCA_PY_IMPL=native|emulated|auto`` (psycopg's PSYCOPG_IMPL).

``auto`` (the default) uses ``native`` when libdoca_common loads, else ``emulated``.
An explicit choice that cannot be honoured raises ``ImportError`` listing every
attempt. Backend modules are looked up by DOCA library name: the public
``doca_py.mmap`` uses ``doca_py.<impl>.mmap``, so a new DOCA library is a new
module on each backend, not a change here.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["IMPLEMENTATIONS", "select", "impl", "backend_module"]

IMPLEMENTATIONS = ("native", "emulated")


def _native_available() -> str | None:
    """``None`` if the native backend can be used, else why not."""
    try:
        loader = importlib.import_module("doca_py.native.loader")
    except ImportError as exc:  # the native layer itself is broken
        return f"cannot import doca_py.native.loader: {exc}"
    try:
        loader.load("common")
    except Exception as exc:  # noqa: BLE001 - report whatever the loader says
        return str(exc)
    return None


def select(requested: str | None = None) -> str:
    """Resolve *requested* (default: ``$DOCA_PY_IMPL`` or ``auto``) to a backend name."""
    choice = (requested if requested is not None else os.environ.get("DOCA_PY_IMPL", "auto")).strip().lower()
    if choice in ("", "auto"):
        return "native" if _native_available() is None else "emulated"
    if choice == "emulated":
        return "emulated"
    if choice == "native":
        why = _native_available()
        if why is not None:
            raise ImportError(f"DOCA_PY_IMPL=native requested but the DOCA libraries are not usable:\n  {why}")
        return "native"
    raise ImportError(f"DOCA_PY_IMPL={choice!r} is not one of: auto, {', '.join(IMPLEMENTATIONS)}")


impl: str = select()
"""The backend in use, ``"native"`` or ``"emulated"`` (chosen at import from ``DOCA_PY_IMPL``)."""

_modules: dict[str, ModuleType] = {}


def backend_module(name: str) -> ModuleType:
    """The selected backend's module for the DOCA library *name* (``"mmap"``, ``"dma"`` …)."""
    mod = _modules.get(name)
    if mod is None:
        mod = _modules[name] = importlib.import_module(f"doca_py.{impl}.{name}")
    return mod
