"""DOCA's LZ4 "block stream" (storage-apps-spec §6.3), in software.

The stream is the data blocks of an LZ4 frame without the frame header and end mark:
per 64 KiB chunk of input a little-endian u32 size word (bit 31 set = stored raw)
and the block bytes. Compression matches the C++ apps' liblz4 frame settings
(independent 64 KiB blocks, no checksums, level 1); the hardware path for
decompression is ``doca_py.Compress``'s ``decompress_lz4_stream`` task, and
`decompress` is the software equivalent used for diagnostics and fallbacks.
"""

from __future__ import annotations

from doca_py.engines import lz4_stream
from doca_py.errors import DocaError

from apps.common.errors import ProtocolError

__all__ = ["STORED_FLAG", "compress", "decompress"]

STORED_FLAG = lz4_stream.STORED_FLAG


def compress(plain: bytes | bytearray | memoryview) -> bytes:
    """The LZ4 block stream of *plain* (64 KiB independent blocks, level 1)."""
    return lz4_stream.compress_stream(plain)


def decompress(stream: bytes | bytearray | memoryview, capacity: int) -> bytes:
    """Decode a block stream into at most *capacity* bytes.

    Raise `ProtocolError` for a corrupt or truncated stream or output larger than
    *capacity*.
    """
    out = bytearray(capacity)
    try:
        n = lz4_stream.decompress_stream_into(stream, out)
    except DocaError as exc:
        raise ProtocolError(f"bad LZ4 block stream: {exc}", exc.code) from None
    return bytes(out[:n])
