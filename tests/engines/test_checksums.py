"""Checksum vectors."""

from __future__ import annotations

import os
import zlib

import pytest

from doca_py.engines import checksums

XXH32_VECTORS = [
    (b"", 0, 0x02CC5D05),
    (b"a", 0, 0x550D7456),
    (b"abc", 0, 0x32D153FF),
    (b"Nobody inspects the spammish repetition", 0, 0xE2293B2F),
]


@pytest.mark.parametrize("impl", [checksums.xxh32, checksums.xxh32_pure])
@pytest.mark.parametrize(("data", "seed", "want"), XXH32_VECTORS)
def test_xxh32_vectors(impl: object, data: bytes, seed: int, want: int) -> None:
    assert impl(data, seed) == want  # type: ignore[operator]


def test_xxh32_fast_matches_pure() -> None:
    for n in (*range(40), 1000, 4099):
        data = os.urandom(n)
        for seed in (0, 1, 0xFFFFFFFF):
            assert checksums.xxh32(data, seed) == checksums.xxh32_pure(data, seed)
    mv = memoryview(bytearray(os.urandom(100)))[3:90]
    assert checksums.xxh32(mv) == checksums.xxh32_pure(bytes(mv))


def test_crc_adler() -> None:
    assert checksums.crc32(b"123456789") == 0xCBF43926
    assert checksums.adler32(b"Wikipedia") == 0x11E60398
    data = os.urandom(5000)
    assert checksums.crc32(data) == zlib.crc32(data)
    assert checksums.adler32(data) == zlib.adler32(data)
    assert checksums.crc32(data[100:], checksums.crc32(data[:100])) == zlib.crc32(data)
