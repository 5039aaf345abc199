"""Port of the DOCA sample ``samples/doca_compress/decompress_deflate`` (DOCA 3.0) to doca_py.

Decompresses a raw DEFLATE file with a decompress task; with ``--with-frame`` the input
is a zlib stream: the header is checked and skipped, and the Adler-32 trailer is compared
with the task's checksum::

    python examples/decompress_deflate.py -p 03:00.0 -f out.deflate -o data.txt [-wf] [-c]

Calls follow the C sample: ``allocate_compress_resources`` → capability query →
``doca_ctx_start`` → memory ranges → buffers → ``submit_decompress_deflate_task``
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
from _compress_common import (ADLER_CHECKSUM_SHIFT, ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY, ZLIB_HEADER_SIZE,
                              ZLIB_TRAILER_SIZE, CompressCfg, CompressMode, CompressResources, config_from_args,
                              get_max_buf_size, register_compress_params, register_deflate_params, release_buffers,
                              run_compress_sample, run_on_file, start_and_get_buffers,
                              submit_decompress_deflate_task, verify_compress_zlib_header)

log = setup_logging("DECOMPRESS_DEFLATE")


def decompress_deflate(cfg: CompressCfg, file_data: bytearray) -> d.ErrorCode:
    file_size = len(file_data)

    def sample(resources: CompressResources, out_file: BinaryIO) -> None:
        max_buf_size = get_max_buf_size(resources, CompressTaskType.DECOMPRESS_DEFLATE, file_size)
        bufs = start_and_get_buffers(resources, file_data, max_buf_size, max_buf_size, src_with_data=True)

        if cfg.is_with_frame:
            verify_compress_zlib_header(bytes(file_data[:ZLIB_HEADER_SIZE]))
            # Skip the header and leave the trailer out of the data to decompress
            bufs.src_doca_buf.set_data(bufs.src_addr + ZLIB_HEADER_SIZE,
                                       file_size - ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY)

        output_checksum = submit_decompress_deflate_task(resources, bufs.src_doca_buf, bufs.dst_doca_buf)

        if cfg.is_with_frame:
            expected_adler = int.from_bytes(file_data[file_size - ZLIB_TRAILER_SIZE:], "big")
            adler_checksum = output_checksum >> ADLER_CHECKSUM_SHIFT
            if adler_checksum != expected_adler:
                raise DocaUnexpected(f"Decompress task failed: output checksum {adler_checksum:x}, doesn't "
                                     f"match expected={expected_adler:x}")

        data_len = bufs.dst_doca_buf.get_data_len()
        out_file.write(bufs.dst_buffer[:data_len])
        log.info("File was decompressed successfully and saved in: %s", cfg.output_path)
        if cfg.output_checksum:
            log.info("Checksum is %d", output_checksum)
        release_buffers(bufs)

    return run_compress_sample(cfg, CompressMode.DECOMPRESS_DEFLATE, sample)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA decompress deflate (port of samples/doca_compress/decompress_deflate)")
    register_compress_params(parser, "data_to_decompress.txt")
    register_deflate_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_on_file(log, cfg, decompress_deflate)


if __name__ == "__main__":
    sys.exit(main())
