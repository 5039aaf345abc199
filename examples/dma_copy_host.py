"""Port of the DOCA sample ``samples/doca_dma/dma_copy_host`` (DOCA 3.3) to doca_py.

The host side of a two-sided DMA copy: it puts its text (with its NUL) in memory, exports that memory to
the DPU (``doca_mmap_export_pci``, read-only for the PCI peer), writes the export descriptor and the
buffer's address and length to two files, and waits for enter while the DPU copies the memory with
``examples/dma_copy_dpu.py``::

    python examples/dma_copy_host.py -p 3b:00.0 -t "This is a sample piece of text" \\
        -d /tmp/export_desc.txt -b /tmp/buffer_info.txt
    python examples/dma_copy_dpu.py -p 03:00.0 -d /tmp/export_desc.txt -b /tmp/buffer_info.txt
    # then press enter in the host sample

(``3b:00.0`` is the host PF of the emulated registry; the C sample defaults to ``b1:00.0``.) Calls follow
the C sample: ``allocate_dma_host_resources`` (device with the memcpy capability, ``doca_mmap_create``,
``doca_mmap_add_dev``) → ``doca_mmap_set_permissions(PCI_READ_ONLY)`` → ``doca_mmap_set_memrange`` →
``doca_mmap_start`` → ``doca_mmap_export_pci`` → the two files → enter → ``destroy_dma_host_resources``.

The files are written whole before they are visible (a temporary file renamed over the name), so a DPU
side started as soon as this side logs "Wait till the DPU has finished" reads them complete. The C sample
builds for the host only (``DOCA_ARCH_HOST``); the port runs anywhere.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import doca_py as d
from doca_py.errors import DocaIOFailed
from _common import run_sample, setup_logging
from _dma_common import allocate_dma_host_resources, destroy_dma_host_resources, register_dma_params

log = setup_logging("DMA_COPY_HOST")


def _write_whole(file_path: str, data: bytes) -> None:
    """``fopen`` + ``fwrite``, made atomic: the peer sees the file complete or not at all."""
    path = Path(file_path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DocaIOFailed(f"Failed to create the DMA copy file {file_path}: {exc}") from exc


def save_config_info_to_files(export_desc: bytes, src_buffer_addr: int, src_buffer_len: int,
                              export_desc_file_path: str, buffer_info_file_path: str) -> None:
    """``save_config_info_to_files``: the descriptor as is; the address and the length in decimal, one
    a line (``"%" PRIu64 "\\n" "%" PRIu64``)."""
    _write_whole(export_desc_file_path, export_desc)
    _write_whole(buffer_info_file_path, f"{src_buffer_addr}\n{src_buffer_len}".encode())


def wait_for_enter() -> None:
    """``while (enter != '\\r' && enter != '\\n') enter = getchar();`` — at end of input the C loop spins
    forever (``getchar`` returns ``EOF``); the port stops waiting there."""
    sys.stdin.readline()


def dma_copy_host(pci_addr: str, src_buffer: bytearray, export_desc_file_path: str,
                  buffer_info_file_path: str) -> d.ErrorCode:
    """``dma_copy_host``: export *src_buffer* to the DPU and wait until it has copied it."""
    state = allocate_dma_host_resources(pci_addr)
    try:
        # Allow exporting the mmap to the DPU for read only operations
        state.src_mmap.set_permissions(d.AccessFlag.PCI_READ_ONLY)
        # Populate the memory map with the allocated memory. The C main mallocs the buffer and copies the
        # text in; memory a peer process reaches through an export comes from Mmap.allocate (shareable
        # memory: doca_mmap_set_memrange on a new allocation), so the text is copied in here.
        state.src_mmap.allocate(len(src_buffer))[:] = src_buffer
        state.src_mmap.start()
        export_desc = state.src_mmap.export_pci(state.dev)  # export the mmap to enable DMA on the host

        log.info("Please copy %s and %s to the DPU and run DMA Copy DPU sample", export_desc_file_path,
                 buffer_info_file_path)
        # The buffer's address as the DPU must name it: the start of the exported range.
        src_addr, src_len = state.src_mmap.get_memrange()
        save_config_info_to_files(export_desc, src_addr, src_len, export_desc_file_path, buffer_info_file_path)

        # Wait for enter, which means that the DPU has finished reading
        log.info("Wait till the DPU has finished and press enter")
        wait_for_enter()
        return d.ErrorCode.SUCCESS
    finally:
        destroy_dma_host_resources(state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DOCA DMA copy, host side (port of samples/doca_dma/dma_copy_host)")
    register_dma_params(parser, is_remote=True, dpu=False, pci_address="3b:00.0",
                        cpy_txt="This is a sample piece of text", export_desc_path="/tmp/export_desc.txt",
                        buf_info_path="/tmp/buffer_info.txt")
    args = parser.parse_args(argv)
    src_buffer = bytearray(args.text.encode() + b"\0")  # strlen(cpy_txt) + 1
    return run_sample(log, lambda: dma_copy_host(args.pci_addr, src_buffer, args.descriptor_path,
                                                 args.buffer_path))


if __name__ == "__main__":
    sys.exit(main())
