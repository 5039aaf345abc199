"""Generating and verifying the three gga ``.sbc`` files (the work behind ``python -m apps.sbc_generator``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import doca_py as d
from doca_py.errors import ErrorCode

from apps.storage.wire import compressed_block as cb
from apps.common.runtime.device import open_device
from apps.common.errors import ProtocolError, StorageAppError
from apps.storage.runtime.offload import DecompressJob, EcJob, OffloadSession, matrix_type_from_name
from apps.storage.wire.sbc import MAX_CONTENT_SIZE, read_sbc, write_sbc

from .config import SbcGeneratorConfig

__all__ = ["pad_to_blocks", "GenerateResult", "generate", "VerifyReport", "verify", "Printer", "WINDOW_BLOCKS",
           "MAX_REPORTED_PROBLEMS"]

WINDOW_BLOCKS = 256
"""Blocks handled per batch of offload tasks (bounds the task arena to ~256 × 4.5·B)."""
MAX_REPORTED_PROBLEMS = 20

Printer = Callable[[str], None]


def pad_to_blocks(data: bytes, block_size: int) -> bytes:
    """*data* zero-padded up to a multiple of *block_size* (unchanged if already one)."""
    rem = len(data) % block_size
    return data if rem == 0 else data + bytes(block_size - rem)


def _load_input(path: Path, block_size: int) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED,
                              f"Failed to read {str(path)!r}: {exc.strerror or exc}") from None
    if not data:
        raise StorageAppError(ErrorCode.INVALID_VALUE, f"input file {str(path)!r} is empty")
    return pad_to_blocks(data, block_size)


def _check_device(dev: d.Dev, name: str, recover: bool) -> None:
    info = dev.as_devinfo()
    if not d.Ec.cap_task_create_is_supported(info):
        raise StorageAppError(ErrorCode.NOT_SUPPORTED, f"device {name!r} does not support doca_ec create tasks")
    if recover and not d.Ec.cap_task_recover_is_supported(info):
        raise StorageAppError(ErrorCode.NOT_SUPPORTED, f"device {name!r} does not support doca_ec recover tasks")


def _windows(count: int) -> list[tuple[int, int]]:
    return [(s, min(WINDOW_BLOCKS, count - s)) for s in range(0, count, WINDOW_BLOCKS)]


def _rows(arena: memoryview, offset: int, rows: int, width: int) -> np.ndarray:
    return np.frombuffer(arena, dtype=np.uint8, count=rows * width, offset=offset).reshape(rows, width)


@dataclass(frozen=True)
class GenerateResult:
    """What :func:`generate` wrote."""

    block_size: int
    block_count: int
    files: tuple[Path, Path, Path]


def generate(config: SbcGeneratorConfig, *, out: Printer = print) -> GenerateResult:
    """Build and write the three ``.sbc`` files described by *config*."""
    b = config.block_size
    h = b // 2
    plain = _load_input(config.original_input_data, b)
    n = len(plain) // b
    if n * h > MAX_CONTENT_SIZE or n > 0xFFFFFFFF:
        raise StorageAppError(ErrorCode.INVALID_VALUE,
                              f"{n} blocks of {h} bytes per file exceed the .sbc limit of {MAX_CONTENT_SIZE} bytes")
    data_1, data_2, data_p = bytearray(n * h), bytearray(n * h), bytearray(n * h)
    with open_device(config.device) as dev:
        _check_device(dev, config.device, recover=False)
        w_max = min(WINDOW_BLOCKS, n)
        with OffloadSession(dev, w_max * (b + h), ec=True) as sess:
            assert sess.ec is not None
            matrix = sess.ec.matrix_create(matrix_type_from_name(config.matrix_type), 2, 1)
            arena = sess.arena
            for start, w in _windows(n):
                for j in range(w):
                    blk = start + j
                    try:
                        packed = cb.compress_block(plain[blk * b:(blk + 1) * b])
                    except cb.NotCompressibleError as exc:
                        raise cb.NotCompressibleError(
                            f"block {blk} (input bytes {blk * b}-{(blk + 1) * b - 1}): {exc.message}") from None
                    arena[j * b:(j + 1) * b] = packed
                jobs = [EcJob(((j * b, b),), w * b + j * h, h) for j in range(w)]
                failures = sess.ec_batch(matrix, jobs)
                if failures:
                    j, problem = min(failures.items())
                    raise StorageAppError(ErrorCode.IO_FAILED, f"EC create of block {start + j} failed: {problem}")
                blocks = _rows(arena, 0, w, b)
                data_1[start * h:(start + w) * h] = blocks[:, :h].tobytes()
                data_2[start * h:(start + w) * h] = blocks[:, h:].tobytes()
                data_p[start * h:(start + w) * h] = arena[w * b:w * b + w * h]
    files = (config.data_1, config.data_2, config.data_p)
    out("Output info:")
    out(f"\tBlock size: {b}")
    out(f"\tOut block count: {n}")
    for path, content in zip(files, (data_1, data_2, data_p)):
        write_sbc(path, h, n, content)
        out(f"{path} created successfully")
    return GenerateResult(b, n, files)


@dataclass
class VerifyReport:
    """Outcome of :func:`verify`: one text per bad block (empty when all blocks are good)."""

    block_count: int
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every block verified."""
        return not self.problems


def _diagnose(blk: int, b: int, names: tuple[str, str, str], d1: bytes, d2: bytes, rec1: bytes, rec2: bytes,
              plain: bytes, parity_consistent: bool, detail: str) -> str:
    def good(block: bytes) -> bool:
        if cb.canonical_problem(block) is not None:
            return False
        try:
            return cb.decompress_block(block) == plain
        except ProtocolError:
            return False

    where = f"block {blk} (input bytes {blk * b}-{(blk + 1) * b - 1})"
    if parity_consistent:
        return (f"{where}: the three files agree with each other but do not reproduce the input ({detail}); "
                f"wrong --original-input-data or --matrix-type?")
    if good(d1 + d2):
        return f"{where}: the parity in {names[2]} does not match data_1 and data_2"
    if good(rec1 + d2):
        return f"{where}: {names[0]} is corrupt (the half recovered from data_2 and the parity is correct)"
    if good(d1 + rec2):
        return f"{where}: {names[1]} is corrupt (the half recovered from data_1 and the parity is correct)"
    return f"{where}: data_1, data_2 and data_p disagree and no two of them reproduce the input"


def verify(config: SbcGeneratorConfig, *, out: Printer = print) -> VerifyReport:
    """Check the three ``.sbc`` files of *config* against its input (see the module doc)."""
    files = (config.data_1, config.data_2, config.data_p)
    sbcs = [read_sbc(p) for p in files]
    h, n = sbcs[0].block_size, sbcs[0].block_count
    for path, s in zip(files[1:], sbcs[1:]):
        if (s.block_size, s.block_count) != (h, n):
            raise StorageAppError(ErrorCode.INVALID_VALUE,
                                  f"{path} holds {s.block_count} blocks of {s.block_size} bytes but {files[0]} "
                                  f"holds {n} blocks of {h} bytes")
    b = 2 * h
    if b != config.block_size:
        raise StorageAppError(ErrorCode.INVALID_VALUE,
                              f"the .sbc files hold half blocks of {h} bytes (block size {b}) but --block-size "
                              f"is {config.block_size}")
    if h == 0 or n == 0:
        raise StorageAppError(ErrorCode.INVALID_VALUE, f"{files[0]} holds no data")
    plain = _load_input(config.original_input_data, b)
    if len(plain) != n * b:
        raise StorageAppError(ErrorCode.INVALID_VALUE,
                              f"the padded input is {len(plain) // b} blocks of {b} bytes but the .sbc files "
                              f"hold {n}")
    names = tuple(str(p) for p in files)
    assert len(names) == 3
    report = VerifyReport(n)
    with open_device(config.device) as dev:
        _check_device(dev, config.device, recover=True)
        hw_decompress = d.Compress.cap_task_is_supported(dev.as_devinfo(), d.CompressTaskType.DECOMPRESS_LZ4_STREAM)
        if not hw_decompress:
            out(f"note: {config.device} has no LZ4 stream decompress task; decompressing in software")
        w_max = min(WINDOW_BLOCKS, n)
        with OffloadSession(dev, w_max * 9 * h, ec=True, decompress=hw_decompress) as sess:
            assert sess.ec is not None
            coding = sess.ec.matrix_create(matrix_type_from_name(config.matrix_type), 2, 1)
            rec_a = sess.ec.matrix_create_recover(coding, [0])  # data_1 lost: survivors data_2, parity
            rec_b = sess.ec.matrix_create_recover(coding, [1])  # data_2 lost: survivors data_1, parity
            arena = sess.arena
            for start, w in _windows(n):
                o_d1, o_d2, o_p, o_r1, o_r2 = (k * w * h for k in range(5))
                o_cb, o_out = 5 * w * h, 5 * w * h + w * b
                for off, s in zip((o_d1, o_d2, o_p), sbcs):
                    arena[off:off + w * h] = s.content[start * h:(start + w) * h]
                fail_a = sess.ec_batch(rec_a, [EcJob(((o_d2 + j * h, h), (o_p + j * h, h)), o_r1 + j * h, h)
                                               for j in range(w)], recover=True)
                fail_b = sess.ec_batch(rec_b, [EcJob(((o_d1 + j * h, h), (o_p + j * h, h)), o_r2 + j * h, h)
                                               for j in range(w)], recover=True)
                d1, d2 = _rows(arena, o_d1, w, h), _rows(arena, o_d2, w, h)
                r1, r2 = _rows(arena, o_r1, w, h), _rows(arena, o_r2, w, h)
                consistent = (d1 == r1).all(axis=1) & (d2 == r2).all(axis=1)
                blocks = _rows(arena, o_cb, w, b)
                blocks[:, :h] = d1
                blocks[:, h:] = d2
                bad: dict[int, str] = {j: f"EC recover failed: {p}" for j, p in {**fail_b, **fail_a}.items()}
                for j in range(w):
                    if j not in bad and not consistent[j]:
                        bad[j] = "the parity does not match"
                jobs: list[DecompressJob] = []
                job_block: list[int] = []
                for j in range(w):
                    if j in bad:
                        continue
                    block = arena[o_cb + j * b:o_cb + (j + 1) * b]
                    problem = cb.canonical_problem(block)
                    if problem is not None:
                        bad[j] = problem
                        continue
                    parsed = cb.parse_compressed_block(block)
                    jobs.append(DecompressJob(o_cb + j * b + cb.HEADER_SIZE, parsed.compressed_size,
                                              o_out + j * b, b))
                    job_block.append(j)
                if hw_decompress:
                    fails, lengths = sess.decompress_batch(jobs)
                else:
                    fails, lengths = _software_decompress(arena, jobs)
                for k, j in enumerate(job_block):
                    blk = start + j
                    expect = plain[blk * b:(blk + 1) * b]
                    if k in fails:
                        bad[j] = f"decompression failed: {fails[k]}"
                    elif lengths[k] != b:
                        bad[j] = f"decompressed to {lengths[k]} bytes instead of {b}"
                    elif arena[o_out + j * b:o_out + (j + 1) * b] != expect:
                        bad[j] = "decompressed data differs from the input"
                for j in sorted(bad):
                    blk = start + j
                    report.problems.append(_diagnose(
                        blk, b, (names[0], names[1], names[2]), d1[j].tobytes(), d2[j].tobytes(), r1[j].tobytes(),
                        r2[j].tobytes(), plain[blk * b:(blk + 1) * b], bool(consistent[j]) and j not in fail_a
                        and j not in fail_b, bad[j]))
    if report.ok:
        out(f"Verified {n} blocks of {b} bytes: data_1, data_2 and data_p are consistent and decompress to the input")
    return report


def _software_decompress(arena: memoryview, jobs: Sequence[DecompressJob]) -> tuple[dict[int, str], list[int]]:
    from apps.storage.wire import lz4_blocks

    fails: dict[int, str] = {}
    lengths = [0] * len(jobs)
    for k, job in enumerate(jobs):
        try:
            data = lz4_blocks.decompress(arena[job.src_offset:job.src_offset + job.src_len], job.dst_capacity)
        except ProtocolError as exc:
            fails[k] = str(exc)
            continue
        arena[job.dst_offset:job.dst_offset + len(data)] = data
        lengths[k] = len(data)
    return fails, lengths

