"""``samples/doca_compress/compress_common.c`` ported to doca_py.

The command line (``register_compress_params``, ``register_deflate_params``,
``register_lz4_stream_params``), the zlib header and LZ4 frame helpers of the
``--with-frame`` options, resource allocation (``allocate_compress_resources``) and the
``submit_*_task`` functions: allocate one task, submit it, progress until the completion
callback has stopped the ctx, and return the task's checksums. The flow the three samples
share around the task: ``run_on_file`` (read the input), ``run_compress_sample`` (output
file, resources), ``get_max_buf_size``, ``start_and_get_buffers`` (ctx start, memory,
mmaps, buffers) and ``release_buffers``.
"""

from __future__ import annotations

import argparse
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import doca_py as d
from doca_py.compress import (Compress, CompressTaskCompressDeflate, CompressTaskDecompressDeflate,
                              CompressTaskDecompressLz4Stream, CompressTaskType)
from doca_py.errors import DocaInvalidValue, DocaNotSupported, lookup

from _common import (SLEEP_IN_SECONDS, ProgramCoreObjects, create_core_objects, destroy_core_objects,
                     open_doca_device_with_pci, request_stop, run_sample)

log = logging.getLogger("COMPRESS_COMMON")

NUM_COMPRESS_TASKS = 1  # number of compress tasks
ZLIB_HEADER_SIZE = 2  # CMF and FLG
ZLIB_TRAILER_SIZE = 4  # the Adler-32 checksum, big endian
ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY = ZLIB_HEADER_SIZE + ZLIB_TRAILER_SIZE
ADLER_CHECKSUM_SHIFT = 32  # the Adler checksum sits in the upper 32 bits of the output checksum

# zlib header (RFC 1950): CM=8 (DEFLATE), CINFO=7 (32 KiB window), FLEVEL=2 (default), no dictionary
ZLIB_CMF_CM, ZLIB_CMF_CINFO, ZLIB_FLG_FLEVEL, ZLIB_FLG_FDICT = 8, 7, 2, 0

# LZ4 frame format
LZ4_MAGIC_NUMBER = 0x184D2204
LZ4_VERSION_NUMBER = 0x01
LZ4_END_MARK_LEN = 4


#: ``enum compress_mode``: the task type a sample runs.
CompressMode = CompressTaskType


@dataclass
class CompressCfg:
    """``struct compress_cfg``."""

    pci_address: str
    file_path: str
    output_path: str
    output_checksum: bool = False
    is_with_frame: bool = False
    has_block_checksum: bool = False
    are_blocks_independent: bool = False


@dataclass
class CompressResources:
    """``struct compress_resources``."""

    state: ProgramCoreObjects
    compress: Compress
    mode: CompressMode
    num_remaining_tasks: int = 0
    run_pe_progress: bool = False


@dataclass
class CompressResult:
    """``struct compress_deflate_result`` / ``struct compress_lz4_result``: filled by the callbacks."""

    status: d.ErrorCode = d.ErrorCode.SUCCESS
    crc_cs: int = 0
    adler_cs: int = 0
    xxh_cs: int = 0


# -- command line ---------------------------------------------------------------------------------
def register_compress_params(parser: argparse.ArgumentParser, file_path: str) -> None:
    parser.add_argument("-p", "--pci-addr", dest="pci_address", default="03:00.0",
                        help="DOCA device PCI device address")
    parser.add_argument("-f", "--file", dest="file_path", default=file_path, help="Input file to compress/decompress")
    parser.add_argument("-o", "--output", dest="output_path", default="out.txt", help="Output file")
    parser.add_argument("-c", "--output-checksum", action="store_true", help="Output checksum")


def register_deflate_params(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-wf", "--with-frame", dest="is_with_frame", action="store_true",
                        help="Write/read a file with a frame, compatible with default zlib settings")


def register_lz4_stream_params(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-wf", "--with-frame", dest="is_with_frame", action="store_true",
                        help="Read a file compatible with an LZ4 frame")
    parser.add_argument("-bc", "--has-block-checksum", action="store_true",
                        help="Flag to indicate if blocks have a checksum. Valid only when the sample is run "
                             "without the with-frame(wf) flag")
    parser.add_argument("-bi", "--are-blocks-independent", action="store_true",
                        help="Flag to indicate if blocks are independent. Valid only when the sample is run "
                             "without the with-frame(wf) flag")


def config_from_args(args: argparse.Namespace) -> CompressCfg:
    return CompressCfg(args.pci_address, args.file_path, args.output_path, args.output_checksum,
                       getattr(args, "is_with_frame", False), getattr(args, "has_block_checksum", False),
                       getattr(args, "are_blocks_independent", False))


# -- zlib header and LZ4 frame --------------------------------------------------------------------
def init_compress_zlib_header() -> bytes:
    """``init_compress_zlib_header``: CMF and FLG of DOCA's default settings, FCHECK computed."""
    cmf = (ZLIB_CMF_CINFO << 4) | ZLIB_CMF_CM
    flg = (ZLIB_FLG_FLEVEL << 6) | (ZLIB_FLG_FDICT << 5)
    flg |= 31 - ((cmf << 8 | flg) % 31)  # CMF*256 + FLG must be a multiple of 31
    return bytes((cmf, flg))


def verify_compress_zlib_header(header: bytes) -> None:
    """``verify_compress_zlib_header``: a header DOCA compress can decompress after."""
    cmf, flg = header[0], header[1]
    if (cmf << 8 | flg) % 31:
        raise DocaInvalidValue("Invalid header: header FCHECK doesn't match the expected FCHECK")
    if (flg >> 5) & 1 != ZLIB_FLG_FDICT:
        raise DocaInvalidValue("Invalid header: DOCA compress doesn't support the use of dictionary identifiers")
    if flg >> 6 != ZLIB_FLG_FLEVEL:
        raise DocaInvalidValue(f"Invalid header: DOCA compress supports only a default algorithm "
                               f"(FLEVEL={ZLIB_FLG_FLEVEL}) yet FLEVEL={flg >> 6} was given")
    if cmf & 0x0F != ZLIB_CMF_CM:
        raise DocaInvalidValue(f"Invalid header: DOCA compress supports only DEFLATE compress method "
                               f"(CM={ZLIB_CMF_CM}) yet CM={cmf & 0x0F} was given")
    if cmf >> 4 > ZLIB_CMF_CINFO:
        raise DocaInvalidValue(f"Invalid header: the given window size (CINFO={cmf >> 4}) may not be larger than "
                               f"the window size used to compress with DOCA (CINFO={ZLIB_CMF_CINFO})")


def parse_lz4_frame(src_buf: d.Buf, cfg: CompressCfg) -> tuple[bool, int]:
    """``parse_lz4_frame``: read the frame header of the source, set the block flags in *cfg* and
    aim the source's data at the blocks only. Returns (has content checksum, content checksum)."""
    frame = bytes(src_buf.window_view())
    src_buf_addr, src_buf_len = src_buf.get_head(), src_buf.get_len()
    (magic_number,) = struct.unpack_from("<I", frame, 0)
    if magic_number != LZ4_MAGIC_NUMBER:
        raise DocaInvalidValue(f"Invalid header: magic number={magic_number:x} doesn't match the expected LZ4 "
                               f"magic number={LZ4_MAGIC_NUMBER:x}")
    flags = frame[4]
    if flags >> 6 != LZ4_VERSION_NUMBER:
        raise DocaInvalidValue(f"Invalid header: version={flags >> 6:x} doesn't match the expected LZ4 version")
    cfg.are_blocks_independent = bool(flags & 0x20)
    cfg.has_block_checksum = bool(flags & 0x10)
    has_content_size = bool(flags & 0x08)
    has_content_checksum = bool(flags & 0x04)
    if flags & 0x01:
        raise DocaNotSupported("Data compressed using a dictionary is not supported")
    frame_header_length = 6  # magic, FLG, BD (not used by DOCA Compress)
    content_size = 0
    if has_content_size:
        (content_size,) = struct.unpack_from("<Q", frame, frame_header_length)
        frame_header_length += 8
    frame_header_length += 1  # header checksum, not checked in this sample
    frame_footer_length = LZ4_END_MARK_LEN
    content_checksum = 0
    if has_content_checksum:
        # htobe32() of the stored (little-endian) word, as the C sample compares it with the task's xxh_cs
        (content_checksum,) = struct.unpack_from(">I", frame, src_buf_len - 4)
        frame_footer_length += 4
    total_frame_length = frame_header_length + frame_footer_length
    if total_frame_length > src_buf_len:
        raise DocaInvalidValue(f"Invalid header: Frame expected size={total_frame_length} is longer than file "
                               f"size={src_buf_len}")
    data_len = src_buf_len - total_frame_length
    if 4 * (1 + cfg.has_block_checksum) > data_len:
        raise DocaInvalidValue("File size is smaller than the minimum expected size")
    if has_content_size and data_len != content_size:
        # as in the C sample, which compares the content size with the blocks' length
        raise DocaInvalidValue(f"Invalid header: content size={content_size} doesn't match the expected={data_len}")
    # Set the buffer's data to the blocks only, without the frame
    src_buf.set_data(src_buf_addr + frame_header_length, data_len)
    return has_content_checksum, content_checksum


# -- callbacks ------------------------------------------------------------------------------------
def compress_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                    next_state: d.CtxState) -> None:
    resources: CompressResources = user_data
    if next_state == d.CtxState.IDLE:
        log.info("Compress context has been stopped")
        resources.run_pe_progress = False  # we can stop progressing the PE
    elif next_state == d.CtxState.STARTING:
        log.error("Compress context entered into starting state. Unexpected transition")
    elif next_state == d.CtxState.RUNNING:
        log.info("Compress context is running")
    elif next_state == d.CtxState.STOPPING:
        log.info("Compress context entered into stopping state. Any inflight tasks will be flushed")


def _task_done(resources: CompressResources, task: d.Task) -> None:
    task.free()
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        request_stop(resources.compress)


def compress_completed_callback(task: CompressTaskCompressDeflate, task_user_data: Any, ctx_user_data: Any) -> None:
    result: CompressResult = task_user_data
    log.info("Compress task was done successfully")
    # The checksums are the task's results: read them in its completion callback.
    result.crc_cs, result.adler_cs, result.status = task.get_crc_cs(), task.get_adler_cs(), d.ErrorCode.SUCCESS
    _task_done(ctx_user_data, task)


def decompress_deflate_completed_callback(task: CompressTaskDecompressDeflate, task_user_data: Any,
                                          ctx_user_data: Any) -> None:
    result: CompressResult = task_user_data
    log.info("Decompress task was done successfully")
    result.crc_cs, result.adler_cs, result.status = task.get_crc_cs(), task.get_adler_cs(), d.ErrorCode.SUCCESS
    _task_done(ctx_user_data, task)


def decompress_lz4_stream_completed_callback(task: CompressTaskDecompressLz4Stream, task_user_data: Any,
                                             ctx_user_data: Any) -> None:
    result: CompressResult = task_user_data
    log.info("Decompress task was done successfully")
    result.crc_cs, result.xxh_cs, result.status = task.get_crc_cs(), task.get_xxh_cs(), d.ErrorCode.SUCCESS
    _task_done(ctx_user_data, task)


def compress_error_callback(task: d.Task, task_user_data: Any, ctx_user_data: Any) -> None:
    """The error callback of every task type."""
    result: CompressResult = task_user_data
    result.status = task.get_status()
    log.error("%s failed: %s", "Compress task" if isinstance(task, CompressTaskCompressDeflate)
              else "Decompress task", task.exception())
    _task_done(ctx_user_data, task)


# -- resources ------------------------------------------------------------------------------------
def allocate_compress_resources(pci_addr: str, max_bufs: int, mode: CompressMode) -> CompressResources:
    """``allocate_compress_resources``: device with the mode's capability, compress ctx, core objects."""
    def supported(info: d.DevInfo) -> bool:
        return Compress.cap_task_is_supported(info, mode)

    dev = open_doca_device_with_pci(pci_addr, supported)
    try:
        compress = Compress(dev)
        state = create_core_objects(dev, max_bufs)
    except BaseException:
        dev.close()
        raise
    resources = CompressResources(state, compress, mode)
    state.pe.connect_ctx(compress)
    compress.set_state_changed_cb(compress_state_changed_callback)
    if mode is CompressMode.COMPRESS_DEFLATE:
        compress.task_compress_deflate_set_conf(compress_completed_callback, compress_error_callback,
                                                NUM_COMPRESS_TASKS)
    elif mode is CompressMode.DECOMPRESS_DEFLATE:
        compress.task_decompress_deflate_set_conf(decompress_deflate_completed_callback, compress_error_callback,
                                                  NUM_COMPRESS_TASKS)
    else:
        compress.task_decompress_lz4_stream_set_conf(decompress_lz4_stream_completed_callback,
                                                     compress_error_callback, NUM_COMPRESS_TASKS)
    compress.user_data = resources  # doca_ctx_set_user_data
    return resources


def destroy_compress_resources(resources: CompressResources) -> None:
    """``destroy_compress_resources``: stop (an IDLE ctx stops at once) and destroy, core objects, device."""
    request_stop(resources.compress)
    resources.compress.close()
    destroy_core_objects(resources.state)
    resources.state.dev.close()


def _run_task(resources: CompressResources, task: d.Task, result: CompressResult) -> CompressResult:
    """Submit *task* and progress until its callback stopped the ctx (IDLE)."""
    resources.num_remaining_tasks += 1
    try:
        task.submit()
    except d.DocaError:
        resources.num_remaining_tasks -= 1
        task.free()
        raise
    resources.run_pe_progress = True
    # Wait for the task to complete: its output and checksums are valid only then.
    while resources.run_pe_progress:
        if not resources.state.pe.progress():
            time.sleep(SLEEP_IN_SECONDS)
    if result.status != d.ErrorCode.SUCCESS:
        raise lookup(result.status)("the task failed", code=result.status)
    return result


def calculate_checksum(crc_checksum: int, adler_checksum: int) -> int:
    """The output checksum: CRC in the lower 32 bits, Adler in the upper 32 bits."""
    return (adler_checksum << ADLER_CHECKSUM_SHIFT) + crc_checksum


def submit_compress_deflate_task(resources: CompressResources, src_buf: d.Buf, dst_buf: d.Buf) -> int:
    """``submit_compress_deflate_task``: returns the output checksum."""
    result = CompressResult()
    task = resources.compress.task_compress_deflate_alloc_init(src_buf, dst_buf, user_data=result)
    _run_task(resources, task, result)
    return calculate_checksum(result.crc_cs, result.adler_cs)


def submit_decompress_deflate_task(resources: CompressResources, src_buf: d.Buf, dst_buf: d.Buf) -> int:
    """``submit_decompress_deflate_task``: returns the output checksum."""
    result = CompressResult()
    task = resources.compress.task_decompress_deflate_alloc_init(src_buf, dst_buf, user_data=result)
    _run_task(resources, task, result)
    return calculate_checksum(result.crc_cs, result.adler_cs)


def submit_decompress_lz4_stream_task(resources: CompressResources, has_block_checksum: bool,
                                      are_blocks_independent: bool, src_buf: d.Buf,
                                      dst_buf: d.Buf) -> tuple[int, int]:
    """``submit_decompress_lz4_stream_task``: returns the (CRC, xxHash) checksums."""
    result = CompressResult()
    task = resources.compress.task_decompress_lz4_stream_alloc_init(has_block_checksum, are_blocks_independent,
                                                                    src_buf, dst_buf, user_data=result)
    _run_task(resources, task, result)
    return result.crc_cs, result.xxh_cs


# -- the flow the compress samples share ----------------------------------------------------------
@dataclass
class SampleBuffers:
    """The two DOCA buffers of a sample, over the file's memory and the zeroed destination."""

    src_doca_buf: d.Buf
    dst_doca_buf: d.Buf
    dst_buffer: memoryview  # the destination memory (owned by the destination mmap)
    src_addr: int
    dst_addr: int


def get_max_buf_size(resources: CompressResources, task_type: CompressTaskType, file_size: int) -> int:
    """``doca_compress_cap_task_get_max_buf_size``; refuse a file larger than that."""
    max_buf_size = Compress.cap_task_get_max_buf_size(resources.state.dev.as_devinfo(), task_type)
    if file_size > max_buf_size:
        raise DocaInvalidValue(f"Invalid file size. Should be smaller than {max_buf_size}")
    return max_buf_size


def start_and_get_buffers(resources: CompressResources, file_data: bytearray, dst_size: int, max_buf_size: int,
                          *, src_with_data: bool) -> SampleBuffers:
    """``doca_ctx_start`` → the destination memory (``calloc(1, dst_size)``) and both mmaps →
    the source buffer (holding the file as its data if *src_with_data*) and the empty
    destination buffer of *max_buf_size* bytes."""
    state = resources.state
    assert state.buf_inv is not None
    resources.compress.start()

    # calloc(1, dst_size): zeroed memory, owned by the destination mmap
    dst_buffer = state.dst_mmap.allocate(dst_size)
    state.dst_mmap.start()
    state.src_mmap.set_memrange(file_data)
    state.src_mmap.start()
    dst_addr, _ = state.dst_mmap.get_memrange()
    src_addr, _ = state.src_mmap.get_memrange()

    get_src = state.buf_inv.buf_get_by_data if src_with_data else state.buf_inv.buf_get_by_addr
    src_doca_buf = get_src(state.src_mmap, src_addr, len(file_data))
    dst_doca_buf = state.buf_inv.buf_get_by_addr(state.dst_mmap, dst_addr, max_buf_size)
    return SampleBuffers(src_doca_buf, dst_doca_buf, dst_buffer, src_addr, dst_addr)


def release_buffers(bufs: SampleBuffers) -> None:
    """``doca_buf_dec_refcount`` on both buffers; free the destination memory."""
    bufs.dst_doca_buf.dec_refcount()
    bufs.src_doca_buf.dec_refcount()
    bufs.dst_buffer.release()


def run_compress_sample(cfg: CompressCfg, mode: CompressMode,
                        sample: Callable[[CompressResources, BinaryIO], None]) -> d.ErrorCode:
    """Open the output file, ``allocate_compress_resources`` (2 buffers), run *sample*,
    ``destroy_compress_resources``."""
    with open(cfg.output_path, "wb") as out_file:
        # The sample uses 2 DOCA buffers
        resources = allocate_compress_resources(cfg.pci_address, 2, mode)
        try:
            sample(resources, out_file)
            return d.ErrorCode.SUCCESS
        finally:
            destroy_compress_resources(resources)


def run_on_file(log: logging.Logger, cfg: CompressCfg, sample: Callable[[CompressCfg, bytearray], d.ErrorCode]
                ) -> int:
    """``read_file`` (the whole input) then *sample*, under :func:`run_sample`."""

    def run() -> d.ErrorCode:
        with open(cfg.file_path, "rb") as f:  # read_file
            file_data = bytearray(f.read())
        return sample(cfg, file_data)

    return run_sample(log, run)
