"""The sbc generator end to end on the emulated backend (spec §2.5, §6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apps.sbc_generator import generate, main, pad_to_blocks, parse_args, verify
from apps.storage.wire import compressed_block as cb
from apps.storage.wire.sbc import read_sbc

DEVICE = "03:00.0"  # the emulated BlueField PF (doca_ec capable)


def _plain(size: int) -> bytes:
    """Compressible but not trivial: text with a counter, plus a run of zeros."""
    text = b"".join(b"storage block %08d " % i for i in range(size // 20 + 1))
    return (text[: size // 2] + bytes(size))[:size]


def _argv(tmp: Path, src: Path, *extra: str) -> list[str]:
    return ["-d", DEVICE, "--original-input-data", str(src), "--data-1", str(tmp / "d1.sbc"),
            "--data-2", str(tmp / "d2.sbc"), "--data-p", str(tmp / "dp.sbc"), *extra]


@pytest.mark.parametrize("matrix", ["vandermonde", "cauchy"])
@pytest.mark.parametrize(("block_size", "size"), [(128, 1000), (4096, 3 * 4096), (8192, 5 * 8192 + 17),
                                                   (131072, 131072 + 5)])
def test_three_file_round_trip(tmp_path: Path, matrix: str, block_size: int, size: int) -> None:
    if block_size == 128:
        plain = bytes(size)  # 128-byte blocks only fit highly compressible data
    else:
        plain = _plain(size)
    src = tmp_path / "in.bin"
    src.write_bytes(plain)
    lines: list[str] = []
    cfg = parse_args(_argv(tmp_path, src, "--block-size", str(block_size), "--matrix-type", matrix))
    result = generate(cfg, out=lines.append)
    padded = pad_to_blocks(plain, block_size)
    n = len(padded) // block_size
    assert result.block_count == n and len(padded) == n * block_size
    assert lines[:3] == ["Output info:", f"\tBlock size: {block_size}", f"\tOut block count: {n}"]
    assert sum("created successfully" in line for line in lines) == 3
    h = block_size // 2
    d1, d2, dp = (read_sbc(tmp_path / f) for f in ("d1.sbc", "d2.sbc", "dp.sbc"))
    for s in (d1, d2, dp):
        assert (s.block_size, s.block_count) == (h, n)
    for b in range(n):
        block = d1.content[b * h:(b + 1) * h] + d2.content[b * h:(b + 1) * h]
        assert cb.canonical_problem(block) is None
        assert cb.decompress_block(block) == padded[b * block_size:(b + 1) * block_size]
    if matrix == "vandermonde":  # the 2+1 Vandermonde parity row is (1, 1): XOR (spec §6.4)
        assert dp.content == bytes(x ^ y for x, y in zip(d1.content, d2.content))
    else:
        assert dp.content != bytes(x ^ y for x, y in zip(d1.content, d2.content))
    report = verify(cfg, out=lines.append)
    assert report.ok and report.block_count == n, report.problems


def test_main_generate_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(_plain(40000))
    assert main(_argv(tmp_path, src, "--verify")) == 0
    out = capsys.readouterr().out
    assert "doca_storage_gga_offload_sbc_generator: v" in out and "Verified 10 blocks" in out


@pytest.mark.parametrize(("victim", "needle"), [
    ("dp.sbc", "the parity in"),
    ("d1.sbc", "d1.sbc is corrupt"),
    ("d2.sbc", "d2.sbc is corrupt"),
])
@pytest.mark.parametrize("matrix", ["vandermonde", "cauchy"])
def test_verify_detects_corruption(tmp_path: Path, capsys: pytest.CaptureFixture[str], victim: str, needle: str,
                                   matrix: str) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(_plain(6 * 4096))
    assert main(_argv(tmp_path, src, "--matrix-type", matrix)) == 0
    path = tmp_path / victim
    raw = bytearray(path.read_bytes())
    raw[16 + 2 * 2048 + 40] ^= 0x5A  # block 2 (a byte inside the stream for data_1, padding for data_2)
    path.write_bytes(raw)
    capsys.readouterr()
    assert main(_argv(tmp_path, src, "--verify-only", "--matrix-type", matrix)) == 1
    err = capsys.readouterr().err
    assert f"block 2 (input bytes 8192-12287): " in err and needle in err, err
    assert "EXCEPTION: Verification failed: 1 of 6 blocks are bad" in err


def test_verify_wrong_input_and_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(_plain(3 * 4096))
    assert main(_argv(tmp_path, src)) == 0
    other = tmp_path / "other.bin"
    other.write_bytes(_plain(3 * 4096)[::-1])
    capsys.readouterr()
    assert main(_argv(tmp_path, other, "--verify-only")) == 1
    assert "the three files agree with each other but do not reproduce the input" in capsys.readouterr().err
    assert main(_argv(tmp_path, src, "--verify-only", "--block-size", "8192")) == 1
    assert "--block-size is 8192" in capsys.readouterr().err
    src.write_bytes(_plain(5 * 4096))
    assert main(_argv(tmp_path, src, "--verify-only")) == 1
    assert "the padded input is 5 blocks of 4096 bytes but the .sbc files hold 3" in capsys.readouterr().err


def test_incompressible_input_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(_plain(2 * 4096) + os.urandom(4096))
    assert main(_argv(tmp_path, src)) == 1
    err = capsys.readouterr().err
    assert "EXCEPTION: block 2 (input bytes 8192-12287): Data was not compressible enough" in err
    assert not any(p.suffix == ".sbc" for p in tmp_path.iterdir())  # nothing half-written


def test_empty_input_and_unknown_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(b"")
    assert main(_argv(tmp_path, src)) == 1
    assert "is empty" in capsys.readouterr().err
    src.write_bytes(b"abc")
    argv = _argv(tmp_path, src)
    argv[1] = "mlx5_99"
    assert main(argv) == 1
    assert "no DOCA device matches 'mlx5_99'" in capsys.readouterr().err
