"""DEFLATE compress/decompress into caller buffers, using ISA-L (python-isal).

DOCA's deflate engine works on raw DEFLATE (RFC 1951, no zlib or gzip wrapper); the
tasks report CRC-32 and Adler-32 of the uncompressed data so software can add a
wrapper itself (see `.checksums`). ``wrapper="zlib"`` is offered for convenience.

Errors, the same as `.lz4_stream`: output larger than the destination raises
[`DocaTooBig`][doca_py.errors.DocaTooBig], corrupt or truncated input [`DocaInvalidValue`][doca_py.errors.DocaInvalidValue]. Nothing
is written outside the destination; on error nothing is written at all.
python-isal has no decompress-into API, so the result is produced once and copied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from isal import isal_zlib

from doca_py.errors import DocaInvalidValue, DocaTooBig

from . import byte_view, writable_view

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["Wrapper", "compress_deflate", "decompress_deflate_into"]

Wrapper = Literal["raw", "zlib"]
"""``"raw"`` (DOCA's deflate tasks) or ``"zlib"`` (RFC 1950 framing)."""
_WBITS: dict[str, int] = {"raw": -15, "zlib": 15}
# python-isal's stub types ``error`` as an Exception instance; it is the class.
_IsalError = cast("type[Exception]", isal_zlib.error)


def _wbits(wrapper: str) -> int:
    try:
        return _WBITS[wrapper]
    except KeyError:
        raise DocaInvalidValue(f"unknown deflate wrapper {wrapper!r}; use 'raw' or 'zlib'") from None


def compress_deflate(src: Buffer, dst: Buffer, *, level: int = 1, wrapper: Wrapper = "raw") -> int:
    """Compress *src* into *dst*; return the compressed length.

    *level* is ISA-L's 0..3 (1 is its fast default for hardware-like throughput).
    """
    out = writable_view(dst)
    if not 0 <= level <= 3:
        raise DocaInvalidValue(f"ISA-L compression level must be 0..3, got {level}")
    data = isal_zlib.compress(byte_view(src, "source"), level, _wbits(wrapper))
    if len(data) > out.nbytes:
        raise DocaTooBig(f"compressed output of {len(data)} bytes does not fit in {out.nbytes}")
    out[: len(data)] = data
    return len(data)


def decompress_deflate_into(src: Buffer, dst: Buffer, *, wrapper: Wrapper = "raw") -> int:
    """Decompress one DEFLATE stream from *src* into *dst*; return the bytes written.

    Bytes after the end of the stream are ignored, as zlib does.
    """
    out = writable_view(dst)
    cap = out.nbytes
    d = isal_zlib.decompressobj(_wbits(wrapper))
    try:
        # One byte more than fits tells "too big" apart from "exactly full";
        # max_length bounds the allocation, so corrupt input cannot balloon.
        data = d.decompress(byte_view(src, "source"), cap + 1)
    except _IsalError as exc:
        raise DocaInvalidValue(f"corrupt deflate stream: {exc}") from None
    if len(data) > cap:
        raise DocaTooBig(f"deflate stream decompresses to more than the {cap}-byte destination")
    if not d.eof:
        raise DocaInvalidValue("deflate stream is truncated")
    out[: len(data)] = data
    return len(data)
