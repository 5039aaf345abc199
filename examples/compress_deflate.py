"""Port of the DOCA sample ``samples/doca_compress/compress_deflate`` (DOCA 3.0) to doca_py.

Compresses a file with a DEFLATE compress task; with ``--with-frame`` the output gets a
zlib header and the Adler-32 trailer (the task's checksum), so ``zlib.decompress`` reads it::

    python examples/compress_deflate.py -p 03:00.0 -f data_to_compress.txt -o out.deflate [-wf] [-c]

Calls follow the C sample: ``allocate_compress_resources`` (device, compress ctx, core
objects, Pe connection, state-changed callback, task configuration) → capability query →
``doca_ctx_start`` → memory ranges → buffers → ``submit_compress_deflate_task`` (allocate,
submit, progress until the completion callback stopped the ctx) → write the destination.
"""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO

import doca_py as d
from doca_py.compress import CompressTaskType

from _common import setup_logging
from _compress_common import (ADLER_CHECKSUM_SHIFT, ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY, ZLIB_HEADER_SIZE,
                              CompressCfg, CompressMode, CompressResources, config_from_args, get_max_buf_size,
                              init_compress_zlib_header, register_compress_params, register_deflate_params,
                              release_buffers, run_compress_sample, run_on_file, start_and_get_buffers,
                              submit_compress_deflate_task)

log = setup_logging("COMPRESS_DEFLATE")


def compress_deflate(cfg: CompressCfg, file_data: bytearray) -> d.ErrorCode:
    zlib_compatible = cfg.is_with_frame

    def sample(resources: CompressResources, out_file: BinaryIO) -> None:
        # (the C sample queries the decompress capability here)
        max_buf_size = get_max_buf_size(resources, CompressTaskType.DECOMPRESS_DEFLATE, len(file_data))
        max_output_size = max_buf_size
        if zlib_compatible:  # consider the zlib header and the added checksum at the end
            max_output_size += ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY

        bufs = start_and_get_buffers(resources, file_data, max_output_size, max_buf_size, src_with_data=False)
        bufs.src_doca_buf.set_data(bufs.src_addr, len(file_data))  # the whole file is the data to compress
        if zlib_compatible:  # reserve space for the header: the output starts after it
            bufs.dst_doca_buf.set_data(bufs.dst_addr + ZLIB_HEADER_SIZE, 0)

        output_checksum = submit_compress_deflate_task(resources, bufs.src_doca_buf, bufs.dst_doca_buf)

        data_len = bufs.dst_doca_buf.get_data_len()
        write_len = data_len
        if zlib_compatible:
            # The zlib header in the reserved space, the Adler-32 checksum (big endian) after the data
            bufs.dst_buffer[:ZLIB_HEADER_SIZE] = init_compress_zlib_header()
            adler_checksum = output_checksum >> ADLER_CHECKSUM_SHIFT
            tail = ZLIB_HEADER_SIZE + data_len
            bufs.dst_buffer[tail:tail + 4] = adler_checksum.to_bytes(4, "big")
            bufs.dst_doca_buf.set_data(bufs.dst_addr + ZLIB_HEADER_SIZE, data_len + 4)
            write_len += ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY
        out_file.write(bufs.dst_buffer[:write_len])
        log.info("File was compressed successfully and saved in: %s", cfg.output_path)
        if cfg.output_checksum:
            log.info("Checksum is %d", output_checksum)
        release_buffers(bufs)

    return run_compress_sample(cfg, CompressMode.COMPRESS_DEFLATE, sample)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA compress deflate (port of samples/doca_compress/compress_deflate)")
    register_compress_params(parser, "data_to_compress.txt")
    register_deflate_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_on_file(log, cfg, compress_deflate)


if __name__ == "__main__":
    sys.exit(main())
