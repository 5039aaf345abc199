"""DOCA LZ4 stream: the spec vector, round trips, linkage, stored blocks and every failure mode."""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Iterator

import lz4.block
import pytest

from doca_py.engines import lz4_stream as L
from doca_py.engines.checksums import xxh32
from doca_py.errors import DocaInvalidValue, DocaTooBig

SENTINEL = b"\xa5" * 32


@pytest.fixture(params=["ctypes", "fallback"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test through liblz4-via-ctypes and through the lz4.block copying fallback."""
    if request.param == "ctypes":
        if not L._use_ctypes():
            pytest.skip("no liblz4 symbol loadable through ctypes")
    else:
        monkeypatch.setattr(L, "_use_ctypes", lambda: False)
    yield request.param


def _text(n: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"storage", b"block", b"\n"]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words) + b" "
    return bytes(out[:n])


def _into(stream: bytes, cap: int, **kw: bool) -> tuple[int, bytearray]:
    """Decode into a cap-byte window of a larger buffer; check the tail was not touched."""
    buf = bytearray(cap) + bytearray(SENTINEL)
    try:
        n = L.decompress_stream_into(stream, memoryview(buf)[:cap], **kw)
    finally:
        assert buf[cap:] == SENTINEL
    return n, buf


def test_spec_vector_285_bytes(path: str) -> None:
    plain = bytes(i % 256 for i in range(4096))
    stream = L.compress_stream(plain)
    assert len(stream) == 285
    # storage-apps-spec §6.3: LE32(len(raw)) + raw, raw = the plain LZ4 block (281 bytes).
    raw = lz4.block.compress(plain, store_size=False)
    assert stream == struct.pack("<I", 281) + raw
    n, buf = _into(stream, 4096)
    assert n == 4096 and buf[:n] == plain


def test_random_block_is_stored_raw(path: str) -> None:
    plain = os.urandom(4096)
    stream = L.compress_stream(plain)
    assert len(stream) == 4100 and stream[:4] == struct.pack("<I", 0x80001000) and stream[4:] == plain
    n, buf = _into(stream, 4096)
    assert buf[:n] == plain


@pytest.mark.parametrize("checksum", [False, True], ids=["nocsum", "csum"])
@pytest.mark.parametrize("linked", [False, True], ids=["indep", "linked"])
def test_round_trip_multi_block(path: str, checksum: bool, linked: bool) -> None:
    # Several 64 KiB blocks: compressible text, a random (stored) block, zeros, a tail.
    plain = _text(131_072) + os.urandom(65_536) + bytes(90_000) + _text(1234, 1)
    stream = L.compress_stream(plain, block_checksum=checksum, block_linked=linked)
    words = _block_words(stream, checksum)
    assert len(words) == -(-len(plain) // 65536)
    assert any(w & L.STORED_FLAG for w in words) and any(not w & L.STORED_FLAG for w in words)
    n, buf = _into(stream, len(plain) + 7, has_block_checksum=checksum, are_blocks_independent=not linked)
    assert n == len(plain) and buf[:n] == plain


def _block_words(stream: bytes, checksum: bool) -> list[int]:
    words, pos = [], 0
    while pos < len(stream):
        (w,) = struct.unpack_from("<I", stream, pos)
        words.append(w)
        pos += 4 + (w & 0x7FFFFFFF) + (4 if checksum else 0)
    assert pos == len(stream)
    return words


def test_linked_stream_needs_history(path: str) -> None:
    plain = _text(200_000, 3)
    stream = L.compress_stream(plain, block_linked=True)
    with pytest.raises(DocaInvalidValue):  # later blocks reference the previous block's output
        _into(stream, len(plain), are_blocks_independent=True)


def test_block_sizes_and_empty(path: str) -> None:
    plain = _text(600_000, 4)
    for bs in (256 << 10, 1 << 20):
        n, buf = _into(L.compress_stream(plain, block_size=bs), len(plain))
        assert buf[:n] == plain
    assert L.compress_stream(b"") == b""
    assert _into(b"", 0)[0] == 0
    with pytest.raises(DocaInvalidValue):
        L.compress_stream(plain, block_size=1000)


def test_end_mark_stops_decoding(path: str) -> None:
    stream = L.compress_stream(b"hello world" * 50) + b"\x00\x00\x00\x00garbage"
    n, buf = _into(stream, 550)
    assert buf[:n] == b"hello world" * 50


def test_checksum_mismatch(path: str) -> None:
    stream = bytearray(L.compress_stream(_text(5000), block_checksum=True))
    stream[-1] ^= 1
    with pytest.raises(DocaInvalidValue, match="checksum"):
        _into(bytes(stream), 5000, has_block_checksum=True)
    # A stored block with a checksum verifies too.
    plain = os.urandom(100)
    good = struct.pack("<I", 0x80000064) + plain + struct.pack("<I", xxh32(plain))
    assert _into(good, 100, has_block_checksum=True)[1][:100] == plain
    with pytest.raises(DocaInvalidValue, match="checksum"):
        _into(good[:-1] + bytes([good[-1] ^ 0xFF]), 100, has_block_checksum=True)


def test_truncated_streams(path: str) -> None:
    stream = L.compress_stream(_text(100_000))
    for cut in (1, 3, 4, 100, len(stream) - 1):
        with pytest.raises(DocaInvalidValue, match="truncated"):
            _into(stream[:cut], 100_000)


def test_corrupt_block(path: str) -> None:
    # Literal "A", then a match 0xFFFF bytes back: far before the start of the output.
    block = bytes([0x10]) + b"A" + b"\xff\xff" + bytes([0x50]) + b"BCDEF"
    stream = struct.pack("<I", len(block)) + block
    with pytest.raises(DocaInvalidValue):
        _into(stream, 1000)
    with pytest.raises(DocaInvalidValue):
        _into(stream, 1000, are_blocks_independent=False)
    with pytest.raises(DocaInvalidValue):  # a compressed block that is pure garbage
        _into(struct.pack("<I", 8) + b"\xff" * 8, 1000)


@pytest.mark.parametrize("linked", [False, True])
def test_undersized_destination(path: str, linked: bool) -> None:
    plain = _text(140_000, 5) + os.urandom(3000)
    stream = L.compress_stream(plain, block_linked=linked)
    for cap in (0, 1, 1000, 65536, 65537, len(plain) - 3000, len(plain) - 1):
        with pytest.raises(DocaTooBig):
            _into(stream, cap, are_blocks_independent=not linked)
    stored = L.compress_stream(os.urandom(1000))
    with pytest.raises(DocaTooBig):
        _into(stored, 999)


def test_decompress_block_into(path: str) -> None:
    plain = _text(10_000, 6)
    raw = lz4.block.compress(plain, store_size=False)
    buf = bytearray(10_000) + bytearray(SENTINEL)
    assert L.decompress_block_into(raw, memoryview(buf)[:10_000]) == 10_000
    assert buf[:10_000] == plain and buf[10_000:] == SENTINEL
    buf = bytearray(9_999) + bytearray(SENTINEL)
    with pytest.raises(DocaTooBig):
        L.decompress_block_into(raw, memoryview(buf)[:9_999])
    assert buf[9_999:] == SENTINEL
    with pytest.raises(DocaInvalidValue):
        L.decompress_block_into(raw[:-20], bytearray(10_000))


def test_source_and_destination_kinds(path: str) -> None:
    plain = _text(3000, 7)
    stream = L.compress_stream(plain)
    src = memoryview(bytearray(b"xx" + stream))[2:]  # writable, offset source
    dst = bytearray(3000)
    assert L.decompress_stream_into(src, dst) == 3000 and dst == plain
    ro_slice = memoryview(b"yyy" + stream + b"zz")[3:-2]  # read-only, not a whole object
    dst = bytearray(3000)
    assert L.decompress_stream_into(ro_slice, dst) == 3000 and dst == plain
    with pytest.raises(DocaInvalidValue, match="read-only"):
        L.decompress_stream_into(stream, bytes(3000))
    with pytest.raises(DocaInvalidValue, match="contiguous"):
        L.decompress_stream_into(stream, memoryview(bytearray(6000))[::2])


def test_compress_into_and_frame_bounds() -> None:
    plain = bytes(i % 256 for i in range(4096))
    dst = bytearray(300) + bytearray(SENTINEL)
    assert L.compress_stream_into(plain, memoryview(dst)[:300]) == 285
    assert dst[:285] == L.compress_stream(plain)
    with pytest.raises(DocaTooBig):
        L.compress_stream_into(plain, memoryview(dst)[:284])
    assert dst[300:] == SENTINEL
    with pytest.raises(DocaInvalidValue):
        L.frame_body_bounds(b"not a frame at all")
