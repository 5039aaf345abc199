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
from typing import TYPE_CHECKING, Any, cast

from ._decl import Decl, TaskCompletionCb, register

if TYPE_CHECKING:
    from ._raw import CompressLib

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


COMPRESS_26: tuple[Decl, ...] = (
    _f("doca_compress_cap_task_decompress_lz4_is_supported", ERR, P, **_LZ4_OLD),
    _f("doca_compress_cap_task_decompress_lz4_get_max_buf_size", ERR, P, U64_P, **_LZ4_OLD),
    _f("doca_compress_cap_task_decompress_lz4_get_max_buf_list_len", ERR, P, U32_P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_set_conf", ERR, P, CB, CB, c_uint32, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_alloc_init", ERR, P, P, P, DATA, OUT, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_as_task", P, P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_set_src", None, P, P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_get_src", P, P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_set_dst", None, P, P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_get_dst", P, P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_get_crc_cs", c_uint32, P, **_LZ4_OLD),
    _f("doca_compress_task_decompress_lz4_get_adler_cs", c_uint32, P, **_LZ4_OLD),
)
"""The twelve DOCA 2.6 ``doca_compress_*decompress_lz4*`` functions (§6.3)."""

COMPRESS: tuple[Decl, ...] = (
    _f("doca_compress_create", ERR, P, OUT),
    _f("doca_compress_destroy", ERR, P),
    _f("doca_compress_as_ctx", P, P),
    _f("doca_compress_cap_get_max_num_tasks", ERR, P, U32_P),
    _f("doca_compress_cap_task_compress_deflate_is_supported", ERR, P),
    _f("doca_compress_cap_task_compress_deflate_get_max_buf_size", ERR, P, U64_P),
    _f("doca_compress_cap_task_compress_deflate_get_max_buf_list_len", ERR, P, U32_P),
    _f("doca_compress_task_compress_deflate_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_compress_task_compress_deflate_alloc_init", ERR, P, P, P, DATA, OUT),
    _f("doca_compress_task_compress_deflate_as_task", P, P),
    _f("doca_compress_task_compress_deflate_set_src", None, P, P),
    _f("doca_compress_task_compress_deflate_get_src", P, P),
    _f("doca_compress_task_compress_deflate_set_dst", None, P, P),
    _f("doca_compress_task_compress_deflate_get_dst", P, P),
    _f("doca_compress_task_compress_deflate_get_crc_cs", c_uint32, P),
    _f("doca_compress_task_compress_deflate_get_adler_cs", c_uint32, P),
    _f("doca_compress_cap_task_decompress_deflate_is_supported", ERR, P),
    _f("doca_compress_cap_task_decompress_deflate_get_max_buf_size", ERR, P, U64_P),
    _f("doca_compress_cap_task_decompress_deflate_get_max_buf_list_len", ERR, P, U32_P),
    _f("doca_compress_task_decompress_deflate_set_conf", ERR, P, CB, CB, c_uint32),
    _f("doca_compress_task_decompress_deflate_alloc_init", ERR, P, P, P, DATA, OUT),
    _f("doca_compress_task_decompress_deflate_as_task", P, P),
    _f("doca_compress_task_decompress_deflate_set_src", None, P, P),
    _f("doca_compress_task_decompress_deflate_get_src", P, P),
    _f("doca_compress_task_decompress_deflate_set_dst", None, P, P),
    _f("doca_compress_task_decompress_deflate_get_dst", P, P),
    _f("doca_compress_task_decompress_deflate_get_crc_cs", c_uint32, P),
    _f("doca_compress_task_decompress_deflate_get_adler_cs", c_uint32, P),
    # LZ4 stream: two uint8_t flags in alloc_init, and their setters/getters.
    _f("doca_compress_cap_task_decompress_lz4_stream_is_supported", ERR, P, **_LZ4_NEW),
    _f("doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size", ERR, P, U64_P, **_LZ4_NEW),
    _f("doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len", ERR, P, U32_P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_set_conf", ERR, P, CB, CB, c_uint32, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_alloc_init", ERR, P, c_uint8, c_uint8, P, P, DATA, OUT, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_as_task", P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_set_has_block_checksum", None, P, c_uint8, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_get_has_block_checksum", c_uint8, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_set_are_blocks_independent", None, P, c_uint8, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_get_are_blocks_independent", c_uint8, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_set_src", None, P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_get_src", P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_set_dst", None, P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_get_dst", P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_get_crc_cs", c_uint32, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_stream_get_xxh_cs", c_uint32, P, **_LZ4_NEW),
    _f("doca_compress_cap_task_decompress_lz4_block_is_supported", ERR, P, **_LZ4_NEW),
    _f("doca_compress_cap_task_decompress_lz4_block_get_max_buf_size", ERR, P, U64_P, **_LZ4_NEW),
    _f("doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len", ERR, P, U32_P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_set_conf", ERR, P, CB, CB, c_uint32, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_alloc_init", ERR, P, P, P, DATA, OUT, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_as_task", P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_set_src", None, P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_get_src", P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_set_dst", None, P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_get_dst", P, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_get_crc_cs", c_uint32, P, **_LZ4_NEW),
    _f("doca_compress_task_decompress_lz4_block_get_xxh_cs", c_uint32, P, **_LZ4_NEW),
    *COMPRESS_26,
)
"""Every exported libdoca_compress function: the 3.x API, then the 2.6-only LZ4 API."""

register(LIBNAME, COMPRESS)


def load_compress() -> CompressLib:
    """The bound libdoca_compress functions (cached; opens libdoca_common first).

    Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an ``ImportError``)
    when libdoca_compress cannot be opened.
    """
    from . import load

    return cast("CompressLib", load(LIBNAME))
