"""Raw declarations of libdoca_compress (``doca-c-api.md`` §2.14 and §6.3).

[`COMPRESS`][doca_py.native.capi.compress.COMPRESS] holds every exported function of the 3.0.0058 ``doca_compress.h``
in header order, followed by the twelve ``doca_compress_*decompress_lz4*``
functions of DOCA 2.6.0058, which 3.x replaced with ``…decompress_lz4_stream…``
and ``…decompress_lz4_block…`` (§6.3). The 2.6 task takes no LZ4 flags and reports
CRC and Adler-32 checksums; the 3.x tasks report CRC and xxHash-32. Presence is
decided by looking the symbol up, so a runtime exporting both sets (some later
2.x releases deprecate the 2.6 names next to the new ones) binds both; on any
other runtime the names it lacks are [`MissingFunction`][doca_py.native.capi.MissingFunction]
stubs that say which DOCA versions have them.

Use [`load_compress`][doca_py.native.capi.compress.load_compress] for the bound functions.
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_uint8, c_uint32, c_uint64, c_void_p
from typing import Any

from ._decl import BoundLib, Decl, TaskCompletionCb, register

__all__ = ["COMPRESS", "COMPRESS_26", "LIBNAME", "load_compress"]

LIBNAME = "compress"

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
CB = TaskCompletionCb  # doca_compress_task_*_completion_cb_t
U32_P = POINTER(c_uint32)
U64_P = POINTER(c_uint64)

# The split LZ4 API: absent in 2.6.0058, present in 3.0.0058 (and in some later 2.x).
_LZ4_NEW: dict[str, Any] = {
    "since": (3, 0),
    "note": "DOCA 2.6 has doca_compress_*decompress_lz4* instead; some later 2.x releases export both",
}
# The 2.6 LZ4 API: deprecated by later 2.x releases, absent from the 3.0 headers.
_LZ4_OLD: dict[str, Any] = {
    "until": (2, 6),
    "note": "deprecated in later 2.x releases and removed in 3.0; use decompress_lz4_stream or _block",
}


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


def _caps(kind: str, **kw: Any) -> tuple[Decl, ...]:
    c = f"doca_compress_cap_task_{kind}"
    return (
        _f(f"{c}_is_supported", ERR, P, **kw),
        _f(f"{c}_get_max_buf_size", ERR, P, U64_P, **kw),
        _f(f"{c}_get_max_buf_list_len", ERR, P, U32_P, **kw),
    )


def _bufs(t: str, **kw: Any) -> tuple[Decl, ...]:
    return (
        _f(f"{t}_set_src", None, P, P, **kw),
        _f(f"{t}_get_src", P, P, **kw),
        _f(f"{t}_set_dst", None, P, P, **kw),
        _f(f"{t}_get_dst", P, P, **kw),
    )


def _task(kind: str, second_cs: str, **kw: Any) -> tuple[Decl, ...]:
    """A task type without extra parameters: caps, set_conf, alloc_init, as_task, bufs, checksums."""
    t = f"doca_compress_task_{kind}"
    return (
        *_caps(kind, **kw),
        _f(f"{t}_set_conf", ERR, P, CB, CB, c_uint32, **kw),
        _f(f"{t}_alloc_init", ERR, P, P, P, DATA, OUT, **kw),
        _f(f"{t}_as_task", P, P, **kw),
        *_bufs(t, **kw),
        _f(f"{t}_get_crc_cs", c_uint32, P, **kw),
        _f(f"{t}_get_{second_cs}_cs", c_uint32, P, **kw),
    )


_STREAM = "doca_compress_task_decompress_lz4_stream"

COMPRESS_26: tuple[Decl, ...] = _task("decompress_lz4", "adler", **_LZ4_OLD)
"""The twelve DOCA 2.6 ``doca_compress_*decompress_lz4*`` functions (§6.3)."""

COMPRESS: tuple[Decl, ...] = (
    _f("doca_compress_create", ERR, P, OUT),
    _f("doca_compress_destroy", ERR, P),
    _f("doca_compress_as_ctx", P, P),
    _f("doca_compress_cap_get_max_num_tasks", ERR, P, U32_P),
    *_task("compress_deflate", "adler"),
    *_task("decompress_deflate", "adler"),
    # LZ4 stream: two uint8_t flags in alloc_init, and their setters/getters.
    *_caps("decompress_lz4_stream", **_LZ4_NEW),
    _f(f"{_STREAM}_set_conf", ERR, P, CB, CB, c_uint32, **_LZ4_NEW),
    _f(f"{_STREAM}_alloc_init", ERR, P, c_uint8, c_uint8, P, P, DATA, OUT, **_LZ4_NEW),
    _f(f"{_STREAM}_as_task", P, P, **_LZ4_NEW),
    _f(f"{_STREAM}_set_has_block_checksum", None, P, c_uint8, **_LZ4_NEW),
    _f(f"{_STREAM}_get_has_block_checksum", c_uint8, P, **_LZ4_NEW),
    _f(f"{_STREAM}_set_are_blocks_independent", None, P, c_uint8, **_LZ4_NEW),
    _f(f"{_STREAM}_get_are_blocks_independent", c_uint8, P, **_LZ4_NEW),
    *_bufs(_STREAM, **_LZ4_NEW),
    _f(f"{_STREAM}_get_crc_cs", c_uint32, P, **_LZ4_NEW),
    _f(f"{_STREAM}_get_xxh_cs", c_uint32, P, **_LZ4_NEW),
    *_task("decompress_lz4_block", "xxh", **_LZ4_NEW),
    *COMPRESS_26,
)
"""Every exported libdoca_compress function: the 3.x API, then the 2.6-only LZ4 API."""

register(LIBNAME, COMPRESS)


def load_compress() -> BoundLib:
    """The bound libdoca_compress functions (cached; opens libdoca_common first).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when libdoca_compress cannot be opened.
    """
    from . import load

    return load(LIBNAME)
