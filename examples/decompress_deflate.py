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

import doca_py as d
from doca_py.compress import Compress, CompressTaskType
from doca_py.errors import DocaInvalidValue, DocaUnexpected

from _common import run_sample, setup_logging
from _compress_common import (ADLER_CHECKSUM_SHIFT, ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY, ZLIB_HEADER_SIZE,
                              ZLIB_TRAILER_SIZE, CompressCfg, CompressMode, allocate_compress_resources,
                              config_from_args, destroy_compress_resources, register_compress_params,
                              register_deflate_params, submit_decompress_deflate_task, verify_compress_zlib_header)

log = setup_logging("DECOMPRESS_DEFLATE")


def decompress_deflate(cfg: CompressCfg, file_data: bytearray) -> d.ErrorCode:
    file_size = len(file_data)
    with open(cfg.output_path, "wb") as out_file:
        # The sample uses 2 DOCA buffers
        resources = allocate_compress_resources(cfg.pci_address, 2, CompressMode.DECOMPRESS_DEFLATE)
        state = resources.state
        assert state.buf_inv is not None
        try:
            max_buf_size = Compress.cap_task_get_max_buf_size(state.dev.devinfo, CompressTaskType.DECOMPRESS_DEFLATE)
            if file_size > max_buf_size:
                raise DocaInvalidValue(f"Invalid file size. Should be smaller than {max_buf_size}")

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

            if cfg.is_with_frame:
                verify_compress_zlib_header(bytes(file_data[:ZLIB_HEADER_SIZE]))
                # Skip the header and leave the trailer out of the data to decompress
                src_doca_buf.set_data(src_addr + ZLIB_HEADER_SIZE, file_size - ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY)

            output_checksum = submit_decompress_deflate_task(resources, src_doca_buf, dst_doca_buf)

            if cfg.is_with_frame:
                expected_adler = int.from_bytes(file_data[file_size - ZLIB_TRAILER_SIZE:], "big")
                adler_checksum = output_checksum >> ADLER_CHECKSUM_SHIFT
                if adler_checksum != expected_adler:
                    raise DocaUnexpected(f"Decompress task failed: output checksum {adler_checksum:x}, doesn't "
                                         f"match expected={expected_adler:x}")

            data_len = dst_doca_buf.get_data_len()
            out_file.write(dst_buffer[:data_len])
            log.info("File was decompressed successfully and saved in: %s", cfg.output_path)
            if cfg.output_checksum:
                log.info("Checksum is %d", output_checksum)

            dst_doca_buf.dec_refcount()
            src_doca_buf.dec_refcount()
            dst_buffer.release()
            return d.ErrorCode.SUCCESS
        finally:
            destroy_compress_resources(resources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA decompress deflate (port of samples/doca_compress/decompress_deflate)")
    register_compress_params(parser, "data_to_decompress.txt")
    register_deflate_params(parser)
    cfg = config_from_args(parser.parse_args(argv))

    def sample() -> d.ErrorCode:
        with open(cfg.file_path, "rb") as f:  # read_file
            file_data = bytearray(f.read())
        return decompress_deflate(cfg, file_data)

    return run_sample(log, sample)


if __name__ == "__main__":
    sys.exit(main())
