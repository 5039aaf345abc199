"""Emulated ``doca_compress``: raw DEFLATE via ISA-L, DOCA's LZ4 stream and LZ4 blocks.

Output is written after the destination's data (its data length grows) and never
beyond its window; checksums are those of the uncompressed data, as DOCA reports.

DOCA 2.6 (``DOCA_PY_EMU_VERSION=2.6``) has one LZ4 task, ``doca_compress_task_decompress_lz4``: no LZ4
flags, CRC and Adler-32 checksums, and no LZ4 block task. As the native backend on a 2.6 runtime, the
emulator's 2.6 mode serves the LZ4-stream task type with it for the flags it implies (no block checksums,
independent blocks) and refuses other flags, the xxHash-32 checksum and every LZ4 block call.
"""

from __future__ import annotations

from collections.abc import Callable

from .._backend.protocols.core import BufHandle, DevHandle, DevInfoHandle
from ..errors import DocaInvalidValue, ErrorCode
from . import version as emu_version
from .buf import EmuBuf, data_views, room, tail_view
from .._backend.protocols.core import Completion, HasUserData
from .ctx import OFFLOAD, EmuCtx, EmuSrcDstTask, EmuTask, TaskPool, unreachable_ok
from .mmap import dev_key
from ..engines import checksums, deflate, lz4_stream

__all__ = ["EmuCompress", "EmuCompressTask", "compress_create", "MAX_BUF_SIZE", "MAX_BUF_LIST_LEN",
           "cap_task_is_supported", "cap_task_get_max_buf_size", "cap_task_get_max_buf_list_len"]

MAX_BUF_SIZE = 1 << 27
MAX_BUF_LIST_LEN = 1
MAX_NUM_TASKS = 1 << 16
_INVALID = int(ErrorCode.INVALID_VALUE)
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)

Kernel = Callable[[memoryview, memoryview, "EmuCompressTask"], int]

#: The LZ4 stream and block task types exist from DOCA 3.0; 2.6 has ``decompress_lz4`` instead.
LZ4_SPLIT_SINCE = (3, 0)
#: (has_block_checksum, are_blocks_independent): what DOCA 2.6's ``decompress_lz4`` task reads.
LEGACY_LZ4_FLAGS = (False, True)
_LZ4_NOTE = "DOCA 2.6 has doca_compress_task_decompress_lz4 instead: no LZ4 flags, CRC and Adler-32 checksums"


def _legacy_lz4() -> bool:
    """Whether the presented DOCA has only 2.6's ``decompress_lz4`` task (no LZ4 stream/block API)."""
    return emu_version.VERSION < LZ4_SPLIT_SINCE


def _refuse_lz4_block(what: str) -> None:
    if _legacy_lz4():
        raise emu_version.absent(f"doca_compress_{what}", since=LZ4_SPLIT_SINCE, note=_LZ4_NOTE)


def _xxh32_as_doca(data: memoryview) -> int:
    return int.from_bytes(checksums.xxh32(data).to_bytes(4, "little"), "big")


def _deflate(src: memoryview, dst: memoryview, t: EmuCompressTask) -> int:
    return deflate.compress_deflate(src, dst)


def _inflate(src: memoryview, dst: memoryview, t: EmuCompressTask) -> int:
    return deflate.decompress_deflate_into(src, dst)


def _lz4_stream(src: memoryview, dst: memoryview, t: EmuCompressTask) -> int:
    # Addresses straight from the buffers (already checked by the views' mmaps).
    s_buf, d_buf = t.src, t.dst
    assert s_buf is not None and d_buf is not None and s_buf.mmap is not None and d_buf.mmap is not None
    s_addr = s_buf.mmap.ptr(s_buf.data, src.nbytes, False) if src.nbytes else 0
    d_addr = d_buf.mmap.ptr(d_buf.data + d_buf.data_len, dst.nbytes, True) if dst.nbytes else 0
    return lz4_stream.decompress_stream_at(src, s_addr, dst, d_addr, has_block_checksum=t.has_block_checksum,
                                           are_blocks_independent=t.are_blocks_independent)


def _lz4_block(src: memoryview, dst: memoryview, t: EmuCompressTask) -> int:
    return lz4_stream.decompress_block_into(src, dst)


class EmuCompressTask(EmuSrcDstTask):
    """Any compress task; the pool decides which kernel runs."""

    __slots__ = ("_flags", "_plain", "_sums")

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self._flags = list(LEGACY_LZ4_FLAGS)  # has_block_checksum, are_blocks_independent
        self._plain: memoryview | None = None  # the uncompressed bytes of the last success
        self._sums: dict[str, int] = {}

    def _checksum(self, name: str, fn: Callable[[memoryview], int]) -> int:
        # Hardware computes these for free; software computes them on first request,
        # from the bytes the task read or wrote (read them before reusing the buffers).
        v = self._sums.get(name)
        if v is None:
            v = self._sums[name] = fn(self._plain) if self._plain is not None else 0
        return v

    @property
    def crc_cs(self) -> int:
        return self._checksum("crc", checksums.crc32)

    @property
    def adler_cs(self) -> int:
        return self._checksum("adler", checksums.adler32)

    @property
    def xxh_cs(self) -> int:
        if _legacy_lz4() and self.pool.kind == "decompress_lz4_stream":
            raise emu_version.absent("doca_compress_task_decompress_lz4_stream_get_xxh_cs", since=LZ4_SPLIT_SINCE,
                                     note="DOCA 2.6's doca_compress_task_decompress_lz4 reports crc_cs and adler_cs")
        # DOCA reports xxHash-32 byte-swapped: NVIDIA's decompress_lz4_stream sample compares it
        # with htobe32() of the frame's little-endian content checksum.
        return self._checksum("xxh", _xxh32_as_doca)

    def _set_flag(self, index: int, value: bool) -> None:
        name = ("has_block_checksum", "are_blocks_independent")[index]
        if _legacy_lz4() and bool(value) != LEGACY_LZ4_FLAGS[index]:
            raise emu_version.absent(f"doca_compress_task_decompress_lz4_stream_set_{name}", since=LZ4_SPLIT_SINCE,
                                     note=f"{_LZ4_NOTE}; it reads has_block_checksum=False, "
                                          "are_blocks_independent=True")
        self._flags[index] = bool(value)

    @property
    def has_block_checksum(self) -> bool:
        """The LZ4 stream's blocks end in a checksum (DOCA 2.6: always ``False``)."""
        return self._flags[0]

    @has_block_checksum.setter
    def has_block_checksum(self, value: bool) -> None:
        self._set_flag(0, value)

    @property
    def are_blocks_independent(self) -> bool:
        """The LZ4 stream's blocks are independent (DOCA 2.6: always ``True``)."""
        return self._flags[1]

    @are_blocks_independent.setter
    def are_blocks_independent(self, value: bool) -> None:
        self._set_flag(1, value)

    def _validate(self) -> None:
        src, dst = self.src, self.dst
        if src is None or dst is None or not src.refcount or not dst.refcount:
            raise DocaInvalidValue("compress task needs a source and a destination buffer")
        if src.next is not None or dst.next is not None:
            raise DocaInvalidValue(f"compress buffers may chain at most {MAX_BUF_LIST_LEN} element")
        if not 0 < src.data_len <= MAX_BUF_SIZE:
            raise DocaInvalidValue(f"source must hold 1..{MAX_BUF_SIZE} bytes, holds {src.data_len}")


    def _execute(self) -> int:
        self._plain = None  # a resubmitted task reports the checksums of this run
        if self._sums:
            self._sums.clear()
        try:
            self._validate()
        except DocaInvalidValue as exc:
            self.reason = exc.detail
            return _INVALID
        src, dst = self.src, self.dst
        assert src is not None and dst is not None
        if not unreachable_ok(self, src, dst):
            return _NOT_PERMITTED
        if self._offload(src.data_len):
            return OFFLOAD
        pool = self.pool
        assert isinstance(pool, _Pool)  # compress tasks come from compress pools only
        kernel = pool.kernel
        s = data_views(src)[0]
        out = tail_view(dst, room(dst))
        n = kernel(s, out, self)
        self._plain = s if kernel is _deflate else out[:n]
        dst.data_len += n
        return 0


class _Pool(TaskPool[EmuTask]):
    def __init__(self, ctx: EmuCtx, kernel: Kernel, kind: str) -> None:
        super().__init__(ctx, EmuCompressTask, kind)
        self.kernel = kernel

    def set_conf(self, success: Completion, error: Completion, num_tasks: int, ctx_owner: HasUserData) -> None:
        if self.kind == "decompress_lz4_block":
            _refuse_lz4_block("task_decompress_lz4_block_set_conf")
        super().set_conf(success, error, num_tasks, ctx_owner)


class EmuCompress(EmuCtx):
    """Emulated ``doca_compress`` context."""

    def __init__(self) -> None:
        super().__init__()
        self.compress_deflate = _Pool(self, _deflate, "compress_deflate")
        self.decompress_deflate = _Pool(self, _inflate, "decompress_deflate")
        self.decompress_lz4_stream = _Pool(self, _lz4_stream, "decompress_lz4_stream")
        self.decompress_lz4_block = _Pool(self, _lz4_block, "decompress_lz4_block")

    def _alloc(self, pool: _Pool, src: BufHandle, dst: BufHandle) -> EmuCompressTask:
        t = pool.alloc()
        assert isinstance(t, EmuCompressTask) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.src, t.dst = src, dst
        t._plain = None
        t._sums.clear()
        return t

    def task_compress_deflate_alloc_init(self, src: BufHandle, dst: BufHandle) -> EmuCompressTask:
        return self._alloc(self.compress_deflate, src, dst)

    def task_decompress_deflate_alloc_init(self, src: BufHandle, dst: BufHandle) -> EmuCompressTask:
        return self._alloc(self.decompress_deflate, src, dst)

    def task_decompress_lz4_stream_alloc_init(self, has_block_checksum: bool, are_blocks_independent: bool,
                                              src: BufHandle, dst: BufHandle) -> EmuCompressTask:
        flags = bool(has_block_checksum), bool(are_blocks_independent)
        if _legacy_lz4() and flags != LEGACY_LZ4_FLAGS:
            raise emu_version.absent("doca_compress_task_decompress_lz4_stream_alloc_init", since=LZ4_SPLIT_SINCE,
                                     note=f"{_LZ4_NOTE}; it serves has_block_checksum=False, "
                                          "are_blocks_independent=True only")
        t = self._alloc(self.decompress_lz4_stream, src, dst)
        t._flags[:] = flags
        return t

    def task_decompress_lz4_block_alloc_init(self, src: BufHandle, dst: BufHandle) -> EmuCompressTask:
        _refuse_lz4_block("task_decompress_lz4_block_alloc_init")
        return self._alloc(self.decompress_lz4_block, src, dst)

    def cap_get_max_num_tasks(self) -> int:
        return MAX_NUM_TASKS


def compress_create(dev: DevHandle) -> EmuCompress:
    """``doca_compress_create``."""
    c = EmuCompress()
    c.dev_key = dev_key(dev)
    return c


def cap_task_is_supported(devinfo: DevInfoHandle, task: str) -> bool:
    """Every task type is supported in software (but the LZ4 block task before DOCA 3.0, which lacks it)."""
    if task == "decompress_lz4_block" and _legacy_lz4():
        return False
    return task in ("compress_deflate", "decompress_deflate", "decompress_lz4_stream", "decompress_lz4_block")


def cap_task_get_max_buf_size(devinfo: DevInfoHandle, task: str) -> int:
    if task == "decompress_lz4_block":
        _refuse_lz4_block("cap_task_decompress_lz4_block_get_max_buf_size")
    return MAX_BUF_SIZE


def cap_task_get_max_buf_list_len(devinfo: DevInfoHandle, task: str) -> int:
    if task == "decompress_lz4_block":
        _refuse_lz4_block("cap_task_decompress_lz4_block_get_max_buf_list_len")
    return MAX_BUF_LIST_LEN
