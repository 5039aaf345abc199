"""Conformance: the Compress context on every backend."""

from __future__ import annotations

import os
import zlib

import pytest

import doca_py as d
from doca_py.engines import checksums, lz4_stream

from .conftest import Bench

SPEC = bytes(i % 256 for i in range(4096))


def _doca_xxh(data: bytes) -> int:
    """xxHash-32 as DOCA reports it: byte-swapped (the decompress_lz4_stream sample compares
    get_xxh_cs() with htobe32() of the LZ4 frame's little-endian content checksum)."""
    return int.from_bytes(checksums.xxh32(data).to_bytes(4, "little"), "big")


def _comp(b: Bench) -> d.Compress:
    c = d.Compress(b.dev)
    b.pe.connect_ctx(c)
    ok, err = b.callbacks()
    c.task_compress_deflate_set_conf(ok, err, 4)
    c.task_decompress_deflate_set_conf(ok, err, 4)
    c.task_decompress_lz4_stream_set_conf(ok, err, 4)
    c.task_decompress_lz4_block_set_conf(ok, err, 4)
    c.start()
    return c


def test_lz4_stream_spec_example_decodes_after_existing_data(bench: Bench) -> None:
    c = _comp(bench)
    stream = lz4_stream.compress_stream(SPEC)
    assert len(stream) == 285
    src = bench.src(0, stream)
    dst = bench.dst(1 << 20, 8192)
    dst.set_data(dst.get_head(), 10)  # output goes after existing data
    t = c.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
    assert bench.run(t) == "ok"
    assert dst.get_data_len() == 10 + 4096
    assert bytes(dst.data_view()[10:]) == SPEC
    assert t.get_crc_cs() == zlib.crc32(SPEC) and t.get_xxh_cs() == _doca_xxh(SPEC)
    assert t.get_are_blocks_independent() and not t.get_has_block_checksum()


@pytest.mark.parametrize(("checksum", "linked"), [(True, False), (False, True), (True, True)])
def test_lz4_stream_variants(bench: Bench, checksum: bool, linked: bool) -> None:
    c = _comp(bench)
    plain = (b"doca " * 30000) + os.urandom(70000)
    src = bench.src(0, lz4_stream.compress_stream(plain, block_checksum=checksum, block_linked=linked))
    dst = bench.dst(1 << 20, len(plain))
    t = c.task_decompress_lz4_stream_alloc_init(checksum, not linked, src, dst)
    assert bench.run(t) == "ok"
    assert bytes(dst.data_view()) == plain


def test_deflate_round_trip_through_tasks(bench: Bench) -> None:
    c = _comp(bench)
    plain = b"storage block " * 5000
    src = bench.src(0, plain)
    packed = bench.dst(1 << 20, len(plain))
    t = c.task_compress_deflate_alloc_init(src, packed)
    assert bench.run(t) == "ok"
    assert t.get_crc_cs() == zlib.crc32(plain) and t.get_adler_cs() == zlib.adler32(plain)
    assert zlib.decompress(bytes(packed.data_view()), -15) == plain  # raw deflate
    out = bench.dst(2 << 20, len(plain))
    t2 = c.task_decompress_deflate_alloc_init(packed, out)
    assert bench.run(t2) == "ok"
    assert bytes(out.data_view()) == plain and t2.get_adler_cs() == zlib.adler32(plain)


def test_lz4_block(bench: Bench) -> None:
    import lz4.block

    c = _comp(bench)
    src = bench.src(0, lz4.block.compress(SPEC, store_size=False))
    dst = bench.dst(1 << 20, 4096)
    t = c.task_decompress_lz4_block_alloc_init(src, dst)
    assert bench.run(t) == "ok" and bytes(dst.data_view()) == SPEC


@pytest.mark.parametrize("case", ["corrupt", "truncated", "undersized"])
def test_bad_input_fails_without_writing_outside(bench: Bench, case: str) -> None:
    c = _comp(bench)
    stream = bytearray(lz4_stream.compress_stream(os.urandom(1000) + SPEC))
    if case == "corrupt":
        stream[8] ^= 0xFF
        stream[0:4] = (200000).to_bytes(4, "little")
    elif case == "truncated":
        del stream[-40:]
    src = bench.src(0, bytes(stream))
    size = 2000 if case == "undersized" else 8192
    bench.mm.buffer[(1 << 20) + size:(1 << 20) + size + 64] = b"\x5a" * 64
    dst = bench.dst(1 << 20, size)
    t = c.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
    assert bench.run(t) == "err"
    assert t.get_status() != d.ErrorCode.SUCCESS and dst.get_data_len() == 0
    assert bytes(bench.mm.buffer[(1 << 20) + size:(1 << 20) + size + 64]) == b"\x5a" * 64


def test_large_task_runs_off_thread_and_completes_through_progress(bench: Bench) -> None:
    c = _comp(bench)
    plain = os.urandom(600_000)  # above the engine-thread threshold
    src = bench.src(0, lz4_stream.compress_stream(plain))
    dst = bench.dst(1 << 20, len(plain))
    t = c.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
    assert bench.run(t) == "ok"
    assert bytes(dst.data_view()) == plain


def test_caps(bench: Bench) -> None:
    info = bench.dev.as_devinfo()
    for task in d.compress.TASK_TYPES:
        assert d.Compress.cap_task_is_supported(info, task)
        assert d.Compress.cap_task_get_max_buf_size(info, task) >= 1 << 20
    with pytest.raises(d.errors.DocaInvalidValue):
        d.Compress.cap_task_is_supported(info, "zstd")


def test_resubmitted_task_reports_the_checksums_of_its_latest_run(bench: Bench) -> None:
    # Regression: the checksums of the first run were reported again after a resubmit.
    c = _comp(bench)
    first, second = b"first payload " * 300, b"another, shorter " * 200
    src = bench.src(0, first)
    out = bench.dst(1 << 20, 1 << 16)
    t = c.task_compress_deflate_alloc_init(src, out)
    assert bench.run(t) == "ok"
    assert t.get_crc_cs() == zlib.crc32(first)
    bench.mm.buffer[:len(second)] = second
    src.set_data(bench.base, len(second))  # within its window: every DOCA version (reuse_by_data is 3.2's)
    out.reset_data_len()
    assert bench.run(t) == "ok"
    assert t.get_crc_cs() == zlib.crc32(second) and t.get_adler_cs() == zlib.adler32(second)


def test_setters_re_aim_a_task_between_runs(bench: Bench) -> None:
    c = _comp(bench)
    first, second = b"alpha " * 700, b"beta, another block " * 300
    src = bench.src(0, lz4_stream.compress_stream(first))
    dst = bench.dst(1 << 20, 8192)
    t = c.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
    assert bench.run(t) == "ok" and bytes(dst.data_view()) == first
    src2 = bench.src(256 << 10, lz4_stream.compress_stream(second))
    dst2 = bench.dst(2 << 20, 8192)
    t.set_src(src2)
    t.set_dst(dst2)
    assert t.get_src() is src2 and t.get_dst() is dst2
    assert bench.run(t) == "ok" and bytes(dst2.data_view()) == second
    assert bytes(dst.data_view()) == first  # the first destination was left alone
    assert t.get_xxh_cs() == _doca_xxh(second)


def test_capabilities_take_a_typed_task_name(bench: Bench) -> None:
    info = bench.dev.as_devinfo()
    assert set(d.CompressTaskType) == {d.CompressTaskType(n) for n in ("compress_deflate", "decompress_deflate",
                                                                      "decompress_lz4_stream", "decompress_lz4_block")}
    for task in d.CompressTaskType:
        assert d.Compress.cap_task_is_supported(info, task)
