"""Port of the DOCA sample ``samples/doca_dma/dma_copy_dpu`` (DOCA 3.3) to doca_py.

The DPU side of a two-sided DMA copy: it reads the host's export descriptor and buffer information from
the files ``examples/dma_copy_host.py`` wrote, maps the host's memory (``doca_mmap_create_from_export``),
copies the whole host buffer into its own with a DMA memcpy task and prints it::

    python examples/dma_copy_host.py -p 3b:00.0 -t "This is a sample piece of text" \\
        -d /tmp/export_desc.txt -b /tmp/buffer_info.txt
    python examples/dma_copy_dpu.py -p 03:00.0 -d /tmp/export_desc.txt -b /tmp/buffer_info.txt
    # then press enter in the host sample

Start it once the host logged "Wait till the DPU has finished": as in C, ``-d`` and ``-b`` must name
readable files when the command line is parsed. Calls follow the C sample: ``allocate_dma_resources``
(device, core objects, DMA ctx with its state-changed callback and memcpy configuration) →
``doca_pe_connect_ctx`` → ``doca_ctx_start`` → ``doca_dma_cap_task_memcpy_get_max_buf_size`` → the two
files → destination ``doca_mmap_set_memrange`` / ``doca_mmap_start`` → ``doca_mmap_create_from_export`` →
source buffer list (host memory) → destination buffer list → ``doca_dma_task_memcpy_alloc_init`` →
``doca_task_submit`` → ``doca_pe_progress`` until the ctx is IDLE (the completion callback stops it) →
clean-up in the C's order. The C sample builds for the DPU only (``DOCA_ARCH_DPU``); the port runs
anywhere, with the DPU build's flags (``-ns``/``-nd`` too).
"""

from __future__ import annotations

import argparse
import re
import sys
import time

import doca_py as d
from doca_py.errors import DocaEmpty, DocaIOFailed, DocaTooBig
from _common import SLEEP_IN_SECONDS, allocate_buf_list, error_of, propagate, run_sample, setup_logging
from _dma_common import (DmaResources, allocate_dma_resources, configure_dma_ctx, destroy_dma_resources,
                         register_dma_params)

log = setup_logging("DMA_COPY_DPU")

RECV_BUF_SIZE = 512  # buffer which contains config information
ULLONG_MAX = (1 << 64) - 1
_STRTOULL = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def strtoull(text: str) -> int:
    """``strtoull(text, NULL, 0)``: the leading number (hex ``0x``, octal ``0``, decimal), 0 when there is
    none, ``ULLONG_MAX`` on overflow; a minus sign negates modulo 2**64, as in C."""
    m = _STRTOULL.match(text)
    if m is None:
        return 0
    digits = m.group(2)
    value = int(digits, 16) if digits[:2] in ("0x", "0X") else int(digits, 8) if digits[0] == "0" else int(digits)
    if value > ULLONG_MAX:
        return ULLONG_MAX
    return (-value) & ULLONG_MAX if m.group(1) == "-" else value


def save_config_info_to_buffers(export_desc_file_path: str, buffer_info_file_path: str) -> tuple[bytes, int, int]:
    """``save_config_info_to_buffers``: the export descriptor (its first ``RECV_BUF_SIZE`` bytes, as in C),
    the host buffer's address and its length (the first two lines of the buffer information file)."""
    try:
        with open(export_desc_file_path, "rb") as fp:
            export_desc = fp.read(RECV_BUF_SIZE)
    except OSError as exc:
        raise DocaIOFailed(f"Failed to open {export_desc_file_path}: {exc}") from exc

    try:
        with open(buffer_info_file_path, "rb") as fp:
            # fgets(buffer, RECV_BUF_SIZE, fp): one line of at most RECV_BUF_SIZE - 1 bytes
            lines = [fp.readline(RECV_BUF_SIZE - 1) for _ in range(2)]
    except OSError as exc:
        raise DocaIOFailed(f"Failed to open {buffer_info_file_path}: {exc}") from exc
    values = []
    for line, what in zip(lines, ("address", "length")):
        if not line:
            raise DocaIOFailed(f"Failed to read the source (host) buffer {what}")
        value = strtoull(line.decode(errors="replace"))
        if value == ULLONG_MAX:
            raise DocaIOFailed(f"Failed to read the source (host) buffer {what}. Data is corrupted")
        values.append(value)
    return export_desc, values[0], values[1]


def dma_copy_dpu(export_desc_file_path: str, buffer_info_file_path: str, pci_addr: str, num_src_buf: int,
                 num_dst_buf: int) -> d.ErrorCode:
    """``dma_copy_dpu``: copy the host's exported buffer into a local one and print it."""
    resources = allocate_dma_resources(pci_addr, num_src_buf, num_dst_buf)
    configure_dma_ctx(resources)  # inside allocate_dma_resources in 3.3's dma_common.c
    state = resources.state
    assert state.buf_inv is not None
    result = d.ErrorCode.SUCCESS
    try:
        state.pe.connect_ctx(resources.dma_ctx)
        resources.dma_ctx.start()
        try:
            max_buffer_size = d.Dma.cap_task_memcpy_get_max_buf_size(state.dev.as_devinfo())
            export_desc, remote_addr, remote_addr_len = save_config_info_to_buffers(export_desc_file_path,
                                                                                    buffer_info_file_path)
            if remote_addr_len == 0:
                raise DocaEmpty("Remote buffer from host is zero: failed to parse the buffer information file")
            if remote_addr_len > max_buffer_size:
                raise DocaTooBig(f"Remote buffer from Host exceeds max allowed buffer: {remote_addr_len} > "
                                 f"{max_buffer_size}")

            # Copy the entire host buffer
            dst_buffer_size = remote_addr_len
            dpu_buffer = bytearray(dst_buffer_size)
            state.dst_mmap.set_memrange(dpu_buffer)
            state.dst_mmap.start()

            # A local DOCA mmap from the exported data
            remote_mmap = d.Mmap.create_from_export(export_desc, state.dev)
            try:
                result = _copy(resources, remote_mmap, remote_addr, remote_addr_len, dpu_buffer, num_src_buf,
                               num_dst_buf)
            finally:
                remote_mmap.close()
        except d.DocaError as exc:
            log.error("%s", exc)
            result = error_of(exc)
        finally:
            try:
                resources.dma_ctx.stop()  # already IDLE after a copy: stopping an idle ctx succeeds
            except d.DocaError as exc:
                log.error("Unable to stop context: %s", exc)
                result = propagate(result, exc.code)
    finally:
        destroy_dma_resources(resources)
    return result


def _copy(resources: DmaResources, remote_mmap: d.Mmap, remote_addr: int, remote_addr_len: int, dpu_buffer: bytearray,
          num_src_buf: int, num_dst_buf: int) -> d.ErrorCode:
    """From the buffer lists to the verdict: the part of ``dma_copy_dpu`` between the mmaps and their clean-up."""
    state = resources.state
    assert state.buf_inv is not None
    dst_base, dst_buffer_size = state.dst_mmap.get_memrange()
    # One DOCA buffer (chain) for each address range: the host's memory, then the local one
    src_doca_buf = allocate_buf_list(state.buf_inv, remote_mmap, remote_addr, remote_addr_len, num_src_buf, True)
    try:
        dst_doca_buf = allocate_buf_list(state.buf_inv, state.dst_mmap, dst_base, dst_buffer_size, num_dst_buf,
                                         False)
        try:
            task_result: list[d.ErrorCode] = []  # the task's user data: where the callbacks report
            task = resources.dma_ctx.task_memcpy_alloc_init(src_doca_buf, dst_doca_buf, user_data=task_result)
            resources.num_remaining_tasks = 1  # number of tasks submitted to the progress engine
            try:
                task.submit()
            except d.DocaError:
                task.free()
                raise
            resources.run_pe_progress = True

            # Wait for all tasks to be completed and the context stopped
            while resources.run_pe_progress:
                if not state.pe.progress():
                    time.sleep(SLEEP_IN_SECONDS)

            result = task_result[0] if task_result else d.ErrorCode.UNEXPECTED
            if result == d.ErrorCode.SUCCESS:
                log.info("Remote DMA copy was done Successfully")
                dpu_buffer[dst_buffer_size - 1] = 0
                content = bytes(dpu_buffer).split(b"\0", 1)[0].decode(errors="replace")  # "%s": up to the NUL
                log.info("Memory content: %s", content)
            else:
                log.error("DMA memcpy task failed: %s", result.c_name)
            # Inform the host that the DMA operation is done
            log.info("Host sample can be closed, DMA copy ended")
            return result
        finally:
            dst_doca_buf.dec_refcount()
    finally:
        src_doca_buf.dec_refcount()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DOCA DMA copy, DPU side (port of samples/doca_dma/dma_copy_dpu)")
    # No need to set the text: it comes from the host
    register_dma_params(parser, is_remote=True, dpu=True, pci_address="03:00.0", cpy_txt="",
                        export_desc_path="/tmp/export_desc.txt", buf_info_path="/tmp/buffer_info.txt")
    args = parser.parse_args(argv)
    return run_sample(log, lambda: dma_copy_dpu(args.descriptor_path, args.buffer_path, args.pci_addr,
                                                args.num_src_buf, args.num_dst_buf))


if __name__ == "__main__":
    sys.exit(main())
