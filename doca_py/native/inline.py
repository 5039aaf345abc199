"""Python versions of DOCA's header-inline helpers (they have no symbol to bind).

The C headers define these ``static inline`` on top of exported functions
(``doca-c-api.md`` §2, §2.17); here they take the bound library first and otherwise
keep the C argument order and raw ``doca_error_t`` return:

* ``doca_buf_inventory_buf_get_by_addr(inv, mmap, addr, len, &buf)`` =
  ``get_by_args(inv, mmap, addr, len, addr, 0, &buf)`` — an empty destination buffer.
* ``doca_buf_inventory_buf_get_by_data(inv, mmap, data, len, &buf)`` =
  ``get_by_args(inv, mmap, data, len, data, len, &buf)`` — a full source buffer.
* ``doca_version()`` → ``doca_version_runtime()``.
* ``doca_buf_inventory_buf_reuse_by_addr/_by_data`` (DOCA 3.2+): the exported symbol
  if there is one, else ``doca_buf_inventory_buf_reuse_by_args(buf, addr, len, data,
  data_len)``, else :class:`~doca_py.errors.DocaNotSupported`. Older runtimes have no
  in-place re-aim; the caller must ``doca_buf_dec_refcount`` the buf and take a new
  one with ``get_by_args``, which needs the inventory and mmap the raw layer does not
  track (the object layer does).

:func:`install` attaches them to a :class:`~doca_py.native.capi.BoundLib` under
their C names; the reuse implementation is chosen once there, not per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .capi._decl import BoundLib, MissingFunction, format_version

__all__ = [
    "buf_inventory_buf_get_by_addr",
    "buf_inventory_buf_get_by_data",
    "buf_inventory_buf_reuse_by_addr",
    "buf_inventory_buf_reuse_by_data",
    "reuse_by_addr_impl",
    "reuse_by_data_impl",
    "version",
    "install",
]

Fn = Callable[..., Any]


def buf_inventory_buf_get_by_addr(lib: BoundLib, inventory: Any, mmap: Any, addr: Any, length: int, buf_out: Any) -> int:
    """Header-inline ``doca_buf_inventory_buf_get_by_addr``: window ``[addr, addr+len)``, no data."""
    code: int = lib.doca_buf_inventory_buf_get_by_args(inventory, mmap, addr, length, addr, 0, buf_out)
    return code


def buf_inventory_buf_get_by_data(lib: BoundLib, inventory: Any, mmap: Any, data: Any, length: int, buf_out: Any) -> int:
    """Header-inline ``doca_buf_inventory_buf_get_by_data``: window = data = ``[data, data+len)``."""
    code: int = lib.doca_buf_inventory_buf_get_by_args(inventory, mmap, data, length, data, length, buf_out)
    return code


def version(lib: BoundLib | None = None) -> str:
    """``doca_version()``: the runtime version string (``"3.0.0058"``) of *lib* or the loaded libdoca_common."""
    if lib is None:
        from . import loader

        return loader.runtime_version_string()
    raw = lib.doca_version_runtime()
    return raw.decode("ascii", "replace") if raw else ""


def _no_reuse(lib: BoundLib, name: str) -> MissingFunction:
    ver = format_version(lib.version)
    return MissingFunction(
        lib.decls[name],
        lib.libname,
        lib.version,
        f"{name}: DOCA {ver} exports neither {name} nor doca_buf_inventory_buf_reuse_by_args "
        "(both appear in DOCA 3.2); release the buf with doca_buf_dec_refcount and take a new one "
        "with doca_buf_inventory_buf_get_by_args instead",
    )


def reuse_by_addr_impl(lib: BoundLib) -> Fn:
    """The best ``reuse_by_addr(buf, addr, len)`` for *lib*: symbol, ``_by_args`` wrapper or stub."""
    name = "doca_buf_inventory_buf_reuse_by_addr"
    if lib.has(name):
        return getattr(lib, name)  # type: ignore[no-any-return]
    if not lib.has("doca_buf_inventory_buf_reuse_by_args"):
        return _no_reuse(lib, name)
    by_args = lib.doca_buf_inventory_buf_reuse_by_args

    def reuse_by_addr(buf: Any, addr: Any, length: int) -> int:
        code: int = by_args(buf, addr, length, addr, 0)
        return code

    return reuse_by_addr


def reuse_by_data_impl(lib: BoundLib) -> Fn:
    """The best ``reuse_by_data(buf, data, len)`` for *lib*: symbol, ``_by_args`` wrapper or stub."""
    name = "doca_buf_inventory_buf_reuse_by_data"
    if lib.has(name):
        return getattr(lib, name)  # type: ignore[no-any-return]
    if not lib.has("doca_buf_inventory_buf_reuse_by_args"):
        return _no_reuse(lib, name)
    by_args = lib.doca_buf_inventory_buf_reuse_by_args

    def reuse_by_data(buf: Any, data: Any, length: int) -> int:
        code: int = by_args(buf, data, length, data, length)
        return code

    return reuse_by_data


def buf_inventory_buf_reuse_by_addr(lib: BoundLib, buf: Any, addr: Any, length: int) -> int:
    """Re-aim *buf* at ``[addr, addr+len)`` with no data (see the module doc for the fallbacks)."""
    code: int = reuse_by_addr_impl(lib)(buf, addr, length)
    return code


def buf_inventory_buf_reuse_by_data(lib: BoundLib, buf: Any, data: Any, length: int) -> int:
    """Re-aim *buf* so window = data = ``[data, data+len)`` (see the module doc for the fallbacks)."""
    code: int = reuse_by_data_impl(lib)(buf, data, length)
    return code


def install(lib: BoundLib) -> BoundLib:
    """Attach the inline helpers to a libdoca_common binding under their C names.

    ``doca_version`` returns ``bytes`` like the C ``const char *``; the reuse helpers
    replace the stubs of absent symbols when ``_by_args`` is exported.
    """
    by_args = lib.doca_buf_inventory_buf_get_by_args

    def doca_buf_inventory_buf_get_by_addr(inventory: Any, mmap: Any, addr: Any, length: int, buf_out: Any) -> int:
        code: int = by_args(inventory, mmap, addr, length, addr, 0, buf_out)
        return code

    def doca_buf_inventory_buf_get_by_data(inventory: Any, mmap: Any, data: Any, length: int, buf_out: Any) -> int:
        code: int = by_args(inventory, mmap, data, length, data, length, buf_out)
        return code

    added = {
        "doca_version": lib.doca_version_runtime,
        "doca_buf_inventory_buf_get_by_addr": doca_buf_inventory_buf_get_by_addr,
        "doca_buf_inventory_buf_get_by_data": doca_buf_inventory_buf_get_by_data,
    }
    if not lib.has("doca_buf_inventory_buf_get_by_args"):
        # Keep the get_by_args stub's message: it names the real missing symbol.
        added["doca_buf_inventory_buf_get_by_addr"] = by_args
        added["doca_buf_inventory_buf_get_by_data"] = by_args
    for name, impl in (
        ("doca_buf_inventory_buf_reuse_by_addr", reuse_by_addr_impl(lib)),
        ("doca_buf_inventory_buf_reuse_by_data", reuse_by_data_impl(lib)),
    ):
        if impl is not getattr(lib, name):
            added[name] = impl
    for name, impl in added.items():
        setattr(lib, name, impl)
    lib.python_impl = frozenset(name for name, impl in added.items() if not isinstance(impl, MissingFunction))
    return lib
