"""What the DMA samples share through ``samples/doca_dma/dma_common.c``, ported to doca_py.

``struct dma_resources``, the state-changed callback, ``allocate_dma_resources`` (device with
the memcpy capability, core objects, DMA ctx) and ``destroy_dma_resources``. Each sample sets
its own callbacks and task configuration, as the C samples do.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import doca_py as d
from doca_py.errors import DocaInvalidValue
from _common import (ProgramCoreObjects, create_core_objects, destroy_core_objects, open_doca_device_with_pci,
                     positive_int, setup_logging)

log = setup_logging("DMA_COMMON")

NUM_DMA_TASKS = 1  # dma_common.h


@dataclass
class DmaResources:
    """``struct dma_resources``."""

    state: ProgramCoreObjects
    dma_ctx: d.Dma
    num_remaining_tasks: int = 0
    run_pe_progress: bool = False


def dma_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
    resources: DmaResources = user_data
    if next_state == d.CtxState.IDLE:
        log.info("DMA context has been stopped")
        resources.run_pe_progress = False  # we can stop progressing the PE
    elif next_state == d.CtxState.STARTING:
        log.error("DMA context entered into starting state. Unexpected transition")
    elif next_state == d.CtxState.RUNNING:
        log.info("DMA context is running")
    elif next_state == d.CtxState.STOPPING:
        log.info("DMA context entered into stopping state. Any inflight tasks will be flushed")


def allocate_dma_resources(pci_addr: str, num_src_buf: int, num_dst_buf: int) -> DmaResources:
    """``allocate_dma_resources``: device, core objects and DMA ctx (``doca_ctx_set_user_data``)."""
    dev = open_doca_device_with_pci(pci_addr, d.Dma.cap_task_memcpy_is_supported)
    try:
        # The C sample compares num_src_buf + num_dst_buf with the cap; the cap bounds each
        # task buffer list, so each list is checked against it.
        max_buf_list_len = d.Dma.cap_task_memcpy_get_max_buf_list_len(dev.as_devinfo())
        if max(num_src_buf, num_dst_buf) > max_buf_list_len:
            raise DocaInvalidValue(f"number of doca_buf exceeds the limitation [{max_buf_list_len}]")
        state = create_core_objects(dev, num_src_buf + num_dst_buf)
        dma = d.Dma(dev)
        resources = DmaResources(state, dma)
        dma.user_data = resources  # doca_ctx_set_user_data
        return resources
    except BaseException:
        dev.close()
        raise


def destroy_dma_resources(resources: DmaResources) -> None:
    """``destroy_dma_resources``: DMA ctx, core objects, device."""
    resources.dma_ctx.close()
    destroy_core_objects(resources.state)
    resources.state.dev.close()


def register_memory_ranges(state: ProgramCoreObjects, dst_buffer: bytearray, src_buffer: bytearray) -> None:
    """``register_memory_range_and_start_mmap``, destination then source; clears the destination."""
    state.dst_mmap.set_memrange(dst_buffer)
    state.dst_mmap.start()
    state.src_mmap.set_memrange(src_buffer)
    state.src_mmap.start()
    dst_buffer[:] = bytes(len(dst_buffer))  # clear the destination memory


def report_copy(result: d.ErrorCode, dst_buffer: bytearray) -> None:
    """The sample's verdict: the destination's text, or the task's error."""
    if result == d.ErrorCode.SUCCESS:
        log.info("Success, memory copied and verified as correct")
        copied = bytes(dst_buffer).rstrip(b"\0").decode(errors="replace")
        log.info('Destination buffer holds: "%s"', copied)
    else:
        log.error("DMA memcpy task failed: %s", result.c_name)


def parse_dma_local_copy_args(description: str, argv: list[str] | None) -> tuple[argparse.Namespace, bytearray,
                                                                                 bytearray]:
    """The local copy's command line (``register_dma_params``); the source (the text and its
    NUL, as the C main copies it) and the destination buffer, of equal size."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-p", "--pci-addr", default="03:00.0", help="DOCA DMA device PCI address")
    parser.add_argument("-t", "--text", default="This is a sample piece of text", help="Text to DMA copy")
    parser.add_argument("-ns", "--num-src-buf", type=positive_int, default=1,
                        help="number of doca_buf for source buffer")
    parser.add_argument("-nd", "--num-dst-buf", type=positive_int, default=1,
                        help="number of doca_buf for destination buffer")
    args = parser.parse_args(argv)
    src_buffer = bytearray(args.text.encode() + b"\0")  # strlen(text) + 1
    return args, src_buffer, bytearray(len(src_buffer))
