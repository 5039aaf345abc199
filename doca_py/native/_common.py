"""Shared plumbing of the native object layer: the bound library and out-parameters."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

from ..errors import check
from .capi import load_common

if TYPE_CHECKING:
    from .capi._raw import CommonLib

__all__ = ["lib", "check", "out_ptr", "out_u8", "flag"]


def lib() -> CommonLib:
    """libdoca_common, bound for the loaded version (opened on first use, then cached
    by :mod:`doca_py.native.capi` until ``loader.reset()``)."""
    return load_common()


def out_ptr() -> ctypes.c_void_p:
    return ctypes.c_void_p()


def out_u8() -> ctypes.c_uint8:
    return ctypes.c_uint8()


def flag(fn: object, handle: int | None, what: str) -> bool:
    """Call a ``(handle, uint8_t *out)`` getter and return the flag."""
    v = ctypes.c_uint8()
    check(fn(handle, ctypes.byref(v)), what)  # type: ignore[operator]
    return bool(v.value)
