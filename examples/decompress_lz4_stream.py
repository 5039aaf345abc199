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
from typing import BinaryIO

import doca_py as d
from doca_py.compress import CompressTaskType
from doca_py.errors import DocaUnexpected

from _common import setup_logging
from _compress_common import (CompressCfg, CompressMode, CompressResources, config_from_args, get_max_buf_size,
                              parse_lz4_frame, register_compress_params, register_lz4_stream_params,
                              release_buffers, run_compress_sample, run_on_file, start_and_get_buffers,
                              submit_decompress_lz4_stream_task)

log = setup_logging("DECOMPRESS_LZ4_STREAM")


def decompress_lz4_stream(cfg: CompressCfg, file_data: bytearray) -> d.ErrorCode:

    def sample(resources: CompressResources, out_file: BinaryIO) -> None:
        max_buf_size = get_max_buf_size(resources, CompressTaskType.DECOMPRESS_LZ4_STREAM, len(file_data))
        bufs = start_and_get_buffers(resources, file_data, max_buf_size, max_buf_size, src_with_data=True)

        has_content_checksum, expected_output_xxh_checksum = False, 0
        if cfg.is_with_frame:
            has_content_checksum, expected_output_xxh_checksum = parse_lz4_frame(bufs.src_doca_buf, cfg)

        output_crc_checksum, output_xxh_checksum = submit_decompress_lz4_stream_task(
            resources, cfg.has_block_checksum, cfg.are_blocks_independent, bufs.src_doca_buf, bufs.dst_doca_buf)

        if has_content_checksum and output_xxh_checksum != expected_output_xxh_checksum:
            raise DocaUnexpected(f"Decompress task failed: output checksum {output_xxh_checksum:x}, doesn't "
                                 f"match expected={expected_output_xxh_checksum:x}")

        data_len = bufs.dst_doca_buf.get_data_len()
        out_file.write(bufs.dst_buffer[:data_len])
        log.info("File was decompressed successfully and saved in: %s", cfg.output_path)
        if cfg.output_checksum:
            log.info("The CRC Checksum is %d", output_crc_checksum)
            log.info("The xxHash Checksum is %d", output_xxh_checksum)
        release_buffers(bufs)

    return run_compress_sample(cfg, CompressMode.DECOMPRESS_LZ4_STREAM, sample)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA decompress LZ4 stream (port of samples/doca_compress/decompress_lz4_stream)")
    register_compress_params(parser, "data_to_decompress.txt")
    register_lz4_stream_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_on_file(log, cfg, decompress_lz4_stream)


if __name__ == "__main__":
    sys.exit(main())
