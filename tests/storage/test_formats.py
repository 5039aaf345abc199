"""io messages, address maths, .sbc files, compressed blocks, LZ4 stream, stats (spec §4–§7)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from apps.storage.wire import compressed_block as cb
from apps.storage.wire import lz4_blocks
from apps.storage.wire.addressing import (
    ChunkLayout, ReadMode, TargetRole, blocks_in_io, doubled_storage_details, doubled_transaction_count,
    half_block_size, segment_workers, split_evenly, target_storage_offset, target_transfer_error,
)
from apps.storage.wire.control import StorageDetails
from apps.common.errors import ProtocolError
from apps.storage.wire.io_message import (
    IO_MESSAGE_SIZE, IoMessage, IoMessageType, make_response_in_place, pack_io_message_into, result_at,
    set_type_in_place, unpack_io_head_from, unpack_io_message_from, user_data_at,
)
from apps.storage.wire.sbc import SbcFormatError, encode_sbc, is_sbc_file, read_sbc, read_sbc_header, write_sbc
from apps.common.runtime.stats import RunStats, WorkerStats, format_pe_hit_rate, format_run_stats, format_worker_stats
from doca_py.errors import ErrorCode

PATTERN = bytes(i % 256 for i in range(4096))


# --------------------------------------------------------------------------- io messages


def test_io_message_layout_and_zero_padding() -> None:
    msg = IoMessage(IoMessageType.WRITE, user_data=0x0102030405060708, result=0x11, io_size=0x1000,
                    requester_offset=0xA0A0A0A0B0B0B0B0, storage_offset=0x0C0D)
    raw = msg.pack()
    assert len(raw) == IO_MESSAGE_SIZE == 64
    assert raw[0:4] == b"\x00\x00\x00\x02" and raw[4:8] == bytes(4)
    assert raw[8:16] == bytes.fromhex("0102030405060708")
    assert raw[16:20] == bytes.fromhex("00000011") and raw[20:24] == bytes.fromhex("00001000")
    assert raw[24:32] == bytes.fromhex("A0A0A0A0B0B0B0B0") and raw[32:40] == bytes.fromhex("0000000000000C0D")
    assert raw[40:] == bytes(24)
    buf = bytearray(b"\xee" * 80)
    msg.pack_into(buf, 8)
    assert bytes(buf[8:72]) == raw and buf[:8] == b"\xee" * 8 and buf[72:] == b"\xee" * 8
    assert IoMessage.unpack(buf, 8) == msg


def test_io_message_data_path_codec_matches_io_message() -> None:
    """The workers' allocation-free functions write and read exactly what IoMessage does."""
    msg = IoMessage(IoMessageType.READ, user_data=(1 << 64) - 2, result=0, io_size=0xFFFFFFFF,
                    requester_offset=1 << 40, storage_offset=(1 << 64) - 1)
    buf = bytearray([0xEE]) * (3 * IO_MESSAGE_SIZE)
    off = IO_MESSAGE_SIZE + 5  # anywhere in a larger buffer
    pack_io_message_into(buf, off, msg.type, msg.user_data, msg.result, msg.io_size, msg.requester_offset,
                         msg.storage_offset)
    assert bytes(buf[off:off + IO_MESSAGE_SIZE]) == msg.pack()  # padding zeroed
    assert buf[:off] == bytearray([0xEE]) * off and set(buf[off + IO_MESSAGE_SIZE:]) == {0xEE}  # nothing else
    view = memoryview(buf)
    assert unpack_io_message_from(view, off) == (msg.type, msg.user_data, msg.result, msg.io_size,
                                                 msg.requester_offset, msg.storage_offset)
    assert unpack_io_head_from(view, off) == (msg.type, msg.user_data, msg.result)
    assert (user_data_at(view, off), result_at(view, off)) == (msg.user_data, 0)
    make_response_in_place(view, ErrorCode.IO_FAILED, off)
    assert IoMessage.unpack(buf, off) == msg.response(ErrorCode.IO_FAILED)
    assert result_at(buf, off) == int(ErrorCode.IO_FAILED)
    set_type_in_place(view, int(IoMessageType.WRITE), off)
    assert unpack_io_head_from(buf, off) == (int(IoMessageType.WRITE), msg.user_data, int(ErrorCode.IO_FAILED))
    with pytest.raises(struct.error):
        unpack_io_message_from(buf, 2 * IO_MESSAGE_SIZE + 1)  # fewer than 64 bytes left
    with pytest.raises(struct.error):
        pack_io_message_into(buf, 0, 1, 1 << 64, 0, 0, 0, 0)  # user_data does not fit in u64


def test_io_message_padding_ignored_and_unknown_type_kept() -> None:
    raw = bytearray(IoMessage(IoMessageType.READ, 3, 0, 2048, 30720, 20480).pack())
    raw[4:8] = b"junk"
    raw[40:64] = b"J" * 24
    assert IoMessage.unpack(raw) == IoMessage(IoMessageType.READ, 3, 0, 2048, 30720, 20480)
    struct.pack_into(">I", raw, 0, 9)
    odd = IoMessage.unpack(raw)
    assert odd.type == 9 and odd.kind is None
    with pytest.raises(ProtocolError, match="64 bytes"):
        IoMessage.unpack(raw[:63])
    with pytest.raises(ValueError):
        IoMessage(IoMessageType.READ, user_data=1 << 64)


def test_response_in_place_only_touches_type_and_result() -> None:
    req = IoMessage(IoMessageType.READ, 7, 0, 4096, 12288, 40960)
    buf = bytearray(req.pack())
    make_response_in_place(buf, ErrorCode.IO_FAILED)
    assert IoMessage.unpack(buf) == IoMessage(IoMessageType.RESULT, 7, 17, 4096, 12288, 40960)
    assert req.response() == IoMessage(0, 7, 0, 4096, 12288, 40960)


# --------------------------------------------------------------------------- addressing


def test_worked_example_5_4() -> None:
    target = StorageDetails(128 * 2048, 2048)
    seen = doubled_storage_details(target)
    assert (seen.total_size, seen.block_size) == (2 * 128 * 2048, 4096)
    n = doubled_transaction_count(64)
    layout = ChunkLayout(block_size=seen.block_size, transactions_per_worker=n)
    assert (n, layout.chunk_size, layout.chunk_base(0, 3)) == (128, 10240, 30720)
    req = IoMessage(IoMessageType.READ, user_data=5, io_size=4096, requester_offset=12288, storage_offset=40960)
    normal = layout.read_requests(req, worker=0, transaction=3, block_index=0)
    assert list(normal) == [TargetRole.DATA_1, TargetRole.DATA_2]
    assert normal[TargetRole.DATA_1] == IoMessage(IoMessageType.READ, 3, 0, 2048, 30720, 20480)
    assert normal[TargetRole.DATA_2] == IoMessage(IoMessageType.READ, 3, 0, 2048, 32768, 20480)
    rb = layout.read_requests(req, worker=0, transaction=3, block_index=0, mode=ReadMode.RECOVER_B)
    assert {r: m.requester_offset for r, m in rb.items()} == {TargetRole.DATA_1: 30720, TargetRole.DATA_P: 34816}
    ra = layout.read_requests(req, worker=0, transaction=3, block_index=0, mode=ReadMode.RECOVER_A)
    assert {r: m.requester_offset for r, m in ra.items()} == {TargetRole.DATA_P: 34816, TargetRole.DATA_2: 32768}
    # decompress: source at chunk + 8, length word at chunk + 4; destination host + 12288
    base = layout.chunk_base(0, 3)
    assert (base + 8, base + 4) == (30728, 30724)
    assert ChunkLayout.host_offset(req.requester_offset, 0, 4096) == 12288


def test_multi_block_write_and_other_workers() -> None:
    layout = ChunkLayout(block_size=4096, transactions_per_worker=8, write_flow=False)
    assert layout.chunk_size == 6144 and layout.region_size(2) == 2 * 8 * 6144
    assert layout.chunk_base(1, 2) == (8 + 2) * 6144
    req = IoMessage(IoMessageType.WRITE, 0, 0, 3 * 4096, 0, 5 * 4096)
    writes = layout.write_requests(req, worker=1, transaction=2, block_index=2)
    base = layout.chunk_base(1, 2)
    assert {r: (m.type, m.requester_offset, m.storage_offset, m.io_size) for r, m in writes.items()} == {
        TargetRole.DATA_1: (2, base, 7 * 2048, 2048), TargetRole.DATA_2: (2, base + 2048, 7 * 2048, 2048),
        TargetRole.DATA_P: (2, base + 4096, 7 * 2048, 2048)}
    assert ChunkLayout.host_offset(100, 2, 4096) == 100 + 8192


def test_address_validation() -> None:
    assert target_storage_offset(40960, 4096, 1) == 22528
    with pytest.raises(ValueError, match="not a multiple"):
        target_storage_offset(4097, 4096)
    with pytest.raises(ValueError):
        half_block_size(4095)
    assert blocks_in_io(4096 * 255, 4096) == 255
    for bad in (0, 4095, 4096 * 256):
        with pytest.raises(ValueError):
            blocks_in_io(bad, 4096)
    with pytest.raises(ValueError, match="u16"):
        doubled_transaction_count(40000)
    layout = ChunkLayout(4096, 4)
    with pytest.raises(ValueError, match="out of range"):
        layout.chunk_base(0, 4)


def test_worker_segmentation() -> None:
    assert split_evenly(10, 3) == [4, 3, 3]
    segs = segment_workers(local_region_size=10 * 4096 + 100, capacity=7 * 4096, effective_block_size=4096,
                           workers=3, transaction_count=64)
    assert [(s.local_offset // 4096, s.local_blocks, s.storage_offset // 4096, s.storage_blocks,
             s.transaction_count) for s in segs] == [(0, 4, 0, 3, 3), (4, 3, 3, 2, 2), (7, 3, 5, 2, 2)]
    with pytest.raises(ValueError, match="to small"):
        segment_workers(2 * 4096, 8 * 4096, 4096, 3, 4)


def test_target_transfer_bounds() -> None:
    ok = IoMessage(IoMessageType.READ, 0, 0, 2048, 0, 2048)
    assert target_transfer_error(ok, storage_size=4096, remote_size=2048) is None
    assert "storage range" in str(target_transfer_error(ok, 4095, 4096))
    assert "remote region" in str(target_transfer_error(ok, 4096, 2047))
    assert "not read or write" in str(target_transfer_error(IoMessage(0, io_size=1), 10, 10))
    assert "io_size is 0" in str(target_transfer_error(IoMessage(1), 10, 10))


# --------------------------------------------------------------------------- .sbc


def test_sbc_round_trip_and_header_bytes(tmp_path: Path) -> None:
    path = tmp_path / "x.sbc"
    content = os.urandom(3 * 128)
    write_sbc(path, 128, 3, content)
    raw = path.read_bytes()
    assert raw[:16] == bytes.fromhex("DEADF00D1337FADE 00000080 00000003")
    assert is_sbc_file(path) and read_sbc_header(path) == (128, 3)
    sbc = read_sbc(path)
    assert (sbc.block_size, sbc.block_count, sbc.content, sbc.storage_size) == (128, 3, content, 384)
    path.write_bytes(raw + b"trailing")  # ignored, as in the reference
    assert read_sbc(path).content == content
    assert [p.name for p in tmp_path.iterdir()] == ["x.sbc"]  # no temporary left behind


@pytest.mark.parametrize(("data", "needle"), [
    (b"", "shorter than the 16-byte header"),
    (b"\xde\xad", "shorter than the 16-byte header"),
    (bytes.fromhex("DEADF00D1337FADF 00000080 00000001") + bytes(128), "magic"),
    (bytes.fromhex("DEADF00D1337FADE 00000080 00000002") + bytes(200), "the file holds 200"),
    (bytes.fromhex("DEADF00D1337FADE FFFFFFFF FFFFFFFF"), "exceeds"),
])
def test_corrupt_sbc_files(tmp_path: Path, data: bytes, needle: str) -> None:
    path = tmp_path / "bad.sbc"
    path.write_bytes(data)
    with pytest.raises(SbcFormatError, match=needle):
        read_sbc(path)


def test_sbc_detection_and_writer_checks(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_bytes(b"\xde\xad\xf0")
    assert not is_sbc_file(short)
    with pytest.raises(SbcFormatError, match="expected 2 x 2 = 4"):
        encode_sbc(2, 2, b"abc")
    with pytest.raises(SbcFormatError, match="exceeds"):
        encode_sbc(1 << 16, 1 << 16, b"")
    with pytest.raises(SbcFormatError, match="Failed to open"):
        read_sbc(tmp_path / "missing.sbc")
    with pytest.raises(SbcFormatError, match="Failed to write"):
        write_sbc(tmp_path / "no" / "dir.sbc", 1, 1, b"x")


# --------------------------------------------------------------------------- compressed blocks


def test_spec_lz4_example_and_compressed_block_layout() -> None:
    stream = lz4_blocks.compress(PATTERN)
    assert len(stream) == 285 and struct.unpack_from("<I", stream)[0] == 281
    block = cb.compress_block(PATTERN)
    assert len(block) == 4096
    assert block[:8] == struct.pack(">II", 4096, 285) and block[8:8 + 285] == stream
    assert block[8 + 285:] == bytes(4096 - 8 - 285)
    assert cb.canonical_problem(block) is None
    assert cb.decompress_block(block) == PATTERN
    parsed = cb.parse_compressed_block(block)
    assert (parsed.original_size, parsed.compressed_size, parsed.trailer) == (4096, 285, 0)


def test_incompressible_block_refused() -> None:
    with pytest.raises(cb.NotCompressibleError, match="4100 compressed bytes"):
        cb.compress_block(os.urandom(4096))
    stream = lz4_blocks.compress(os.urandom(4096))
    assert struct.unpack_from("<I", stream)[0] == 0x80001000  # stored raw, as liblz4 does
    assert len(cb.pack_compressed_block(4096 + 16, stream)) == 4112


def test_large_block_has_several_lz4_blocks() -> None:
    plain = (b"0123456789abcdef" * 9000)[:131072]
    block = cb.compress_block(plain)
    stream = cb.parse_compressed_block(block).stream
    first = struct.unpack_from("<I", stream)[0] & 0x7FFFFFFF
    assert len(stream) > 4 + first  # a second 64 KiB block follows
    assert cb.decompress_block(block) == plain


def test_bad_compressed_blocks() -> None:
    good = bytearray(cb.compress_block(PATTERN))
    bad_size = bytearray(good)
    struct.pack_into(">I", bad_size, 4, 4085)
    with pytest.raises(ProtocolError, match="at most 4084"):
        cb.parse_compressed_block(bad_size)
    assert "at most 4084" in str(cb.canonical_problem(bad_size))
    with pytest.raises(ProtocolError):
        cb.parse_compressed_block(b"short")
    padded = bytearray(good)
    padded[-1] = 1
    assert "non-zero padding" in str(cb.canonical_problem(padded))
    orig = bytearray(good)
    struct.pack_into(">I", orig, 0, 1)
    assert "original_size is 1" in str(cb.canonical_problem(orig))
    broken = bytearray(good)
    struct.pack_into("<I", broken, 8, 4000)  # size word points past the stream
    with pytest.raises(ProtocolError, match="bad LZ4 block stream"):
        cb.decompress_block(broken)
    with pytest.raises(ProtocolError, match="bad LZ4"):
        lz4_blocks.decompress(lz4_blocks.compress(PATTERN), 100)  # does not fit


# --------------------------------------------------------------------------- stats


def test_worker_stats_block() -> None:
    text = format_worker_stats([WorkerStats(3, 100, 3, 1, recovery_count=2), WorkerStats(5, 0, 0, 0)])
    assert text.splitlines() == [
        "+================================================+", "| Core: 3", "| Operation count: 100",
        "| Recovery count: 2", "| PE hit rate: 75.000% (3:1)",
        "+================================================+", "| Core: 5", "| Operation count: 0",
        "| PE hit rate: 0.000% (0:0)"]
    assert format_pe_hit_rate(1, 2) == "33.333% (1:2)"


def test_run_stats_block() -> None:
    s = RunStats(duration_s=2.0, operation_count=1 << 20, effective_block_size=4096, pe_hits=9, pe_misses=1,
                 latency_min_us=3, latency_max_us=90, latency_sum_us=(1 << 20) * 10 + 5)
    lines = format_run_stats(s).splitlines()
    assert lines[3] == "| Duration (seconds): 2.000000"
    assert lines[5] == "| Data rate: 2.000 GiB/s" and lines[6] == "| IO rate: 0.524 MIOP/s"
    assert lines[7] == "| PE hit rate: 90.000% (9:1)" and lines[9:12] == ["| \tMin: 3us", "| \tMax: 90us",
                                                                            "| \tMean: 10us"]


def test_target_content_loading(tmp_path: Path) -> None:
    from apps.storage.wire.addressing import merge_target_details
    from apps.common.errors import StorageAppError
    from apps.storage.wire.sbc import load_storage_content

    sbc = tmp_path / "c.sbc"
    write_sbc(sbc, 2048, 2, bytes(4096))
    got = load_storage_content(sbc, 4096, 128)  # sizes come from the .sbc header
    assert (got.block_size, got.block_count, len(got.content)) == (2048, 2, 4096)
    raw = tmp_path / "c.raw"
    raw.write_bytes(b"r" * 1024)
    assert load_storage_content(raw, 512, 2).content == b"r" * 1024
    with pytest.raises(SbcFormatError, match="does not match the storage size of 1536 bytes"):
        load_storage_content(raw, 512, 3)
    assert load_storage_content(None, 4096, 128).storage_size == 4096 * 128
    with pytest.raises(SbcFormatError, match="non-zero"):
        load_storage_content(None, 0, 128)
    d = StorageDetails(8192, 2048)
    assert merge_target_details([d, d, d]) == d
    with pytest.raises(StorageAppError, match="Mismatch in block_size: 2048 vs 1024") as info:
        merge_target_details([d, d, StorageDetails(8192, 1024)])
    assert info.value.code is ErrorCode.BAD_STATE
    with pytest.raises(StorageAppError, match="Mismatch in storage capacity: 8192 vs 4096"):
        merge_target_details([d, StorageDetails(4096, 2048)])
