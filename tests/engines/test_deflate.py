"""DEFLATE into caller buffers: round trips, wrappers, corrupt input, undersized destinations."""

from __future__ import annotations

import os
import zlib

import pytest

from doca_py.engines import checksums
from doca_py.engines.deflate import Wrapper, compress_deflate, decompress_deflate_into
from doca_py.errors import DocaInvalidValue, DocaTooBig

SENTINEL = b"\x5a" * 16
PLAIN = b"".join(b"record %06d: the quick brown fox\n" % i for i in range(3000))


def _compress(data: bytes, wrapper: Wrapper = "raw") -> bytes:
    buf = bytearray(len(data) + 1024)
    n = compress_deflate(data, buf, wrapper=wrapper)
    return bytes(buf[:n])


@pytest.mark.parametrize("wrapper", ["raw", "zlib"])
@pytest.mark.parametrize("level", [0, 1, 3])
def test_round_trip(wrapper: Wrapper, level: int) -> None:
    for plain in (PLAIN, os.urandom(5000), b"", b"x"):
        buf = bytearray(2 * len(plain) + 1024)  # ISA-L level 0 can expand random data by ~25 %
        n = compress_deflate(plain, buf, level=level, wrapper=wrapper)
        comp = bytes(buf[:n])
        # Interoperates with zlib: raw DEFLATE is what DOCA's engine produces and consumes.
        assert zlib.decompress(comp, -15 if wrapper == "raw" else 15) == plain
        out = bytearray(len(plain)) + bytearray(SENTINEL)
        assert decompress_deflate_into(comp, memoryview(out)[: len(plain)], wrapper=wrapper) == len(plain)
        assert out[: len(plain)] == plain and out[len(plain) :] == SENTINEL


def test_decompresses_zlib_produced_stream() -> None:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw DEFLATE (zlib.compress takes wbits from 3.11 on)
    comp = c.compress(PLAIN) + c.flush()
    out = bytearray(len(PLAIN))
    assert decompress_deflate_into(comp + b"trailing", out) == len(PLAIN) and out == PLAIN


def test_undersized_destination() -> None:
    comp = _compress(PLAIN)
    for cap in (0, 1, len(PLAIN) // 2, len(PLAIN) - 1):
        out = bytearray(cap) + bytearray(SENTINEL)
        with pytest.raises(DocaTooBig):
            decompress_deflate_into(comp, memoryview(out)[:cap])
        assert out == bytes(cap) + SENTINEL  # nothing written at all
    small = bytearray(10) + bytearray(SENTINEL)
    with pytest.raises(DocaTooBig):
        compress_deflate(os.urandom(100), memoryview(small)[:10])
    assert small == bytes(10) + SENTINEL


def test_corrupt_and_truncated() -> None:
    comp = _compress(PLAIN)
    with pytest.raises(DocaInvalidValue, match="truncated"):
        decompress_deflate_into(comp[: len(comp) // 2], bytearray(len(PLAIN)))
    with pytest.raises(DocaInvalidValue):
        decompress_deflate_into(b"\xff" * 64, bytearray(len(PLAIN)))
    with pytest.raises(DocaInvalidValue):  # a raw stream is not a zlib stream
        decompress_deflate_into(comp, bytearray(len(PLAIN)), wrapper="zlib")
    with pytest.raises(DocaInvalidValue):
        decompress_deflate_into(comp, bytearray(len(PLAIN)), wrapper="gzip")  # type: ignore[arg-type]
    with pytest.raises(DocaInvalidValue):
        compress_deflate(PLAIN, bytearray(10), level=4)
    with pytest.raises(DocaInvalidValue, match="read-only"):
        decompress_deflate_into(comp, bytes(len(PLAIN)))


def test_checksums_of_uncompressed_data() -> None:
    # What the deflate tasks report: CRC-32 and Adler-32 of the plain data; the zlib
    # trailer built from them matches zlib's own.
    comp = _compress(PLAIN)
    wrapped = b"\x78\x01" + comp + checksums.adler32(PLAIN).to_bytes(4, "big")
    assert zlib.decompress(wrapped) == PLAIN
    assert checksums.crc32(PLAIN) == zlib.crc32(PLAIN)
