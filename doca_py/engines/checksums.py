"""Checksums that DOCA compress tasks report: CRC-32, Adler-32 and xxHash-32.

All three are of the *uncompressed* data (inferred, doca-c-api §2.14). CRC-32 and
Adler-32 come from ISA-L (python-isal); xxHash-32 calls liblz4's exported ``XXH32``
through ctypes (python-lz4's frame extension or the system liblz4) and falls back to a
small pure-Python implementation of the published algorithm.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from isal import isal_zlib

from . import byte_view, view_address

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["crc32", "adler32", "xxh32", "xxh32_pure"]

_M32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


def crc32(data: Buffer, value: int = 0) -> int:
    """CRC-32 (the gzip/zlib polynomial) of *data*, continuing from *value*."""
    return isal_zlib.crc32(data, value)


def adler32(data: Buffer, value: int = 1) -> int:
    """Adler-32 of *data*, continuing from *value* (1 for a fresh checksum)."""
    return isal_zlib.adler32(data, value)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32_pure(data: Buffer, seed: int = 0) -> int:
    """xxHash-32 in pure Python (reference algorithm; slow, used only without liblz4)."""
    mv = byte_view(data, "data")
    n = mv.nbytes
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        stop = n - n % 16
        for a, b, c, d in struct.iter_unpack("<4I", mv[:stop]):
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
        pos = stop
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (w,) = struct.unpack_from("<I", mv, pos)
        h = (_rotl((h + w * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + mv[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


@functools.cache
def _xxh32_c() -> Callable[[int, int, int], int] | None:
    paths: list[str] = []
    spec = importlib.util.find_spec("lz4.frame._frame")
    if spec and spec.origin:
        paths.append(spec.origin)
    system = ctypes.util.find_library("lz4")
    if system:
        paths.append(system)
    for path in paths:
        try:
            fn = ctypes.CDLL(path).XXH32
        except (OSError, AttributeError):
            continue  # Debian's liblz4 does not export XXH32; python-lz4's frame module does
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        fn.restype = ctypes.c_uint
        f: Callable[[int, int, int], int] = fn
        return f
    return None


def xxh32(data: Buffer, seed: int = 0) -> int:
    """xxHash-32 of *data* (liblz4's ``XXH32`` when loadable, else [`xxh32_pure`][doca_py.engines.checksums.xxh32_pure])."""
    fn = _xxh32_c()
    if fn is None:
        return xxh32_pure(data, seed)
    mv = byte_view(data, "data")
    return int(fn(view_address(mv), mv.nbytes, seed & _M32))
