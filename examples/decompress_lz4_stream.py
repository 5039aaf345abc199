"""Port of the DOCA sample ``samples/doca_compress/decompress_lz4_stream`` (DOCA 3.0) to doca_py.

Decompresses an LZ4 stream (the data blocks of an LZ4 frame) with a decompress task. With
``--with-frame`` the input is a whole LZ4 frame (``lz4 -z``, ``lz4.frame.compress``): the
frame header sets the block flags, and the content checksum, if any, is compared with the
task's xxHash-32. Without it, ``-bc``/``-bi`` describe the blocks::

    python examples/decompress_lz4_stream.py -p 03:00.0 -f data.lz4 -o data.txt -wf [-c]
    python examples/decompress_lz4_stream.py -p 03:00.0 -f blocks.bin -o data.txt [-bc] [-bi]

Calls follow the C sample: ``allocate_compress_resources`` → capability query →
``doca_ctx_start`` → memory ranges → buffers → frame parsing → ``submit_decompress_lz4_stream_task``
(allocate, submit, progress until the completion callback stopped the ctx) → write the
destination's data.
"""

from __future__ import annotations

import argparse
import sys

import doca_py as d
from doca_py.compress import Compress, CompressTaskType
from doca_py.errors import DocaInvalidValue, DocaUnexpected

from _common import run_sample, setup_logging
from _compress_common import (CompressCfg, CompressMode, allocate_compress_resources, config_from_args,
                              destroy_compress_resources, parse_lz4_frame, register_compress_params,
                              register_lz4_stream_params, submit_decompress_lz4_stream_task)

log = setup_logging("DECOMPRESS_LZ4_STREAM")


def decompress_lz4_stream(cfg: CompressCfg, file_data: bytearray) -> d.ErrorCode:
    file_size = len(file_data)
    with open(cfg.output_path, "wb") as out_file:
        # The sample uses 2 DOCA buffers
        resources = allocate_compress_resources(cfg.pci_address, 2, CompressMode.DECOMPRESS_LZ4_STREAM)
        state = resources.state
        assert state.buf_inv is not None
        try:
            max_buf_size = Compress.cap_task_get_max_buf_size(state.dev.devinfo, CompressTaskType.DECOMPRESS_LZ4_STREAM)
            if file_size > max_buf_size:
                raise DocaInvalidValue(f"Invalid file size. Should be smaller then {max_buf_size}")

            resources.compress.start()

            # calloc(1, max_buf_size): zeroed memory, owned by the destination mmap
            dst_buffer = state.dst_mmap.allocate(max_buf_size)
            state.dst_mmap.start()
            state.src_mmap.set_memrange(file_data)
            state.src_mmap.start()
            dst_addr, _ = state.dst_mmap.get_memrange()
            src_addr, _ = state.src_mmap.get_memrange()

            src_doca_buf = state.buf_inv.buf_get_by_data(state.src_mmap, src_addr, file_size)
            dst_doca_buf = state.buf_inv.buf_get_by_addr(state.dst_mmap, dst_addr, max_buf_size)

            has_content_checksum, expected_output_xxh_checksum = False, 0
            if cfg.is_with_frame:
                has_content_checksum, expected_output_xxh_checksum = parse_lz4_frame(src_doca_buf, cfg)

            output_crc_checksum, output_xxh_checksum = submit_decompress_lz4_stream_task(
                resources, cfg.has_block_checksum, cfg.are_blocks_independent, src_doca_buf, dst_doca_buf)

            if has_content_checksum and output_xxh_checksum != expected_output_xxh_checksum:
                raise DocaUnexpected(f"Decompress task failed: output checksum {output_xxh_checksum:x}, doesn't "
                                     f"match expected={expected_output_xxh_checksum:x}")

            data_len = dst_doca_buf.get_data_len()
            out_file.write(dst_buffer[:data_len])
            log.info("File was decompressed successfully and saved in: %s", cfg.output_path)
            if cfg.output_checksum:
                log.info("The CRC Checksum is %d", output_crc_checksum)
                log.info("The xxHash Checksum is %d", output_xxh_checksum)

            dst_doca_buf.dec_refcount()
            src_doca_buf.dec_refcount()
            dst_buffer.release()
            return d.ErrorCode.SUCCESS
        finally:
            destroy_compress_resources(resources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA decompress LZ4 stream (port of samples/doca_compress/decompress_lz4_stream)")
    register_compress_params(parser, "data_to_decompress.txt")
    register_lz4_stream_params(parser)
    cfg = config_from_args(parser.parse_args(argv))

    def sample() -> d.ErrorCode:
        with open(cfg.file_path, "rb") as f:  # read_file
            file_data = bytearray(f.read())
        return decompress_lz4_stream(cfg, file_data)

    return run_sample(log, sample)


if __name__ == "__main__":
    sys.exit(main())
