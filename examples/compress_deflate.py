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

import doca_py as d
from doca_py.compress import Compress, CompressTaskType
from doca_py.errors import DocaInvalidValue

from _common import run_sample, setup_logging
from _compress_common import (ADLER_CHECKSUM_SHIFT, ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY, ZLIB_HEADER_SIZE,
                              CompressCfg, CompressMode, allocate_compress_resources, config_from_args,
                              destroy_compress_resources, init_compress_zlib_header, register_compress_params,
                              register_deflate_params, submit_compress_deflate_task)

log = setup_logging("COMPRESS_DEFLATE")


def compress_deflate(cfg: CompressCfg, file_data: bytearray) -> d.ErrorCode:
    file_size = len(file_data)
    zlib_compatible = cfg.is_with_frame
    with open(cfg.output_path, "wb") as out_file:
        # The sample uses 2 DOCA buffers
        resources = allocate_compress_resources(cfg.pci_address, 2, CompressMode.COMPRESS_DEFLATE)
        state = resources.state
        assert state.buf_inv is not None
        try:
            # (the C sample queries the decompress capability here)
            max_buf_size = Compress.cap_task_get_max_buf_size(state.dev.devinfo, CompressTaskType.DECOMPRESS_DEFLATE)
            if file_size > max_buf_size:
                raise DocaInvalidValue(f"Invalid file size. Should be smaller than {max_buf_size}")
            max_output_size = max_buf_size
            if zlib_compatible:  # consider the zlib header and the added checksum at the end
                max_output_size += ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY

            resources.compress.start()

            # calloc(1, max_output_size): zeroed memory, owned by the destination mmap
            dst_buffer = state.dst_mmap.allocate(max_output_size)
            state.dst_mmap.start()
            state.src_mmap.set_memrange(file_data)
            state.src_mmap.start()
            dst_addr, _ = state.dst_mmap.get_memrange()
            src_addr, _ = state.src_mmap.get_memrange()

            src_doca_buf = state.buf_inv.buf_get_by_addr(state.src_mmap, src_addr, file_size)
            dst_doca_buf = state.buf_inv.buf_get_by_addr(state.dst_mmap, dst_addr, max_buf_size)
            src_doca_buf.set_data(src_addr, file_size)  # the whole file is the data to compress
            if zlib_compatible:  # reserve space for the header: the output starts after it
                dst_doca_buf.set_data(dst_addr + ZLIB_HEADER_SIZE, 0)

            output_checksum = submit_compress_deflate_task(resources, src_doca_buf, dst_doca_buf)

            data_len = dst_doca_buf.get_data_len()
            write_len = data_len
            if zlib_compatible:
                # The zlib header in the reserved space, the Adler-32 checksum (big endian) after the data
                dst_buffer[:ZLIB_HEADER_SIZE] = init_compress_zlib_header()
                adler_checksum = output_checksum >> ADLER_CHECKSUM_SHIFT
                tail = ZLIB_HEADER_SIZE + data_len
                dst_buffer[tail:tail + 4] = adler_checksum.to_bytes(4, "big")
                dst_doca_buf.set_data(dst_addr + ZLIB_HEADER_SIZE, data_len + 4)
                write_len += ZLIB_COMPATIBILITY_ADDITIONAL_MEMORY
            out_file.write(dst_buffer[:write_len])
            log.info("File was compressed successfully and saved in: %s", cfg.output_path)
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
        description="DOCA compress deflate (port of samples/doca_compress/compress_deflate)")
    register_compress_params(parser, "data_to_compress.txt")
    register_deflate_params(parser)
    cfg = config_from_args(parser.parse_args(argv))

    def sample() -> d.ErrorCode:
        with open(cfg.file_path, "rb") as f:  # read_file
            file_data = bytearray(f.read())
        return compress_deflate(cfg, file_data)

    return run_sample(log, sample)


if __name__ == "__main__":
    sys.exit(main())
