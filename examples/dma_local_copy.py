"""Port of the DOCA sample ``samples/doca_dma/dma_local_copy`` (DOCA 3.0) to doca_py.

Copies a text from one local buffer to another with a DMA memcpy task and prints the
destination once the task's completion callback has run::

    python examples/dma_local_copy.py -p 03:00.0 -t "This is a sample piece of text"

The C sample runs on the DPU only (``DOCA_ARCH_DPU``); the port runs wherever a device
with the DMA memcpy capability exists (``03:00.0`` is the DPU of the emulated registry).
Calls follow the C sample: ``allocate_dma_resources`` (device, core objects, DMA ctx,
state-changed callback, task configuration) → ``doca_pe_connect_ctx`` → ``doca_ctx_start``
→ memory ranges → buffers → ``doca_dma_task_memcpy_alloc_init`` → ``doca_task_submit`` →
``doca_pe_progress`` until the ctx is IDLE (the completion callback stops it) → cleanup.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.errors import DocaInvalidValue
from _common import (SLEEP_IN_SECONDS, ProgramCoreObjects, allocate_buf_list, create_core_objects,
                     destroy_core_objects, open_doca_device_with_pci, positive_int, request_stop, run_sample,
                     setup_logging)

log = setup_logging("DPU_LOCAL_DMA_COPY")

NUM_DMA_TASKS = 1  # dma_common.h


@dataclass
class DmaResources:
    """``struct dma_resources``."""

    state: ProgramCoreObjects
    dma_ctx: d.Dma
    num_remaining_tasks: int = 0
    run_pe_progress: bool = False
    task_result: list[d.ErrorCode] = field(default_factory=list)


# -- callbacks (dma_common.c) -------------------------------------------------------------------
def dma_memcpy_completed_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: DmaResources = ctx_user_data
    task_user_data.append(d.ErrorCode.SUCCESS)
    log.info("DMA task was completed successfully")
    task.free()
    resources.num_remaining_tasks -= 1
    # Stop the ctx once every task completed: it goes IDLE, which ends the progress loop.
    if resources.num_remaining_tasks == 0:
        request_stop(resources.dma_ctx)


def dma_memcpy_error_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: DmaResources = ctx_user_data
    status = task.get_status()
    task_user_data.append(status)
    log.error("DMA task failed: %s", status.c_name)
    task.free()
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.dma_ctx)  # a failed task already moved the ctx to STOPPING


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
    """``allocate_dma_resources``: device, core objects, DMA ctx and its configuration."""
    dev = open_doca_device_with_pci(pci_addr, d.Dma.cap_task_memcpy_is_supported)
    try:
        # The C sample compares num_src_buf + num_dst_buf with the cap; the cap bounds each
        # task buffer list, so each list is checked against it.
        max_buf_list_len = d.Dma.cap_task_memcpy_get_max_buf_list_len(dev.devinfo)
        if max(num_src_buf, num_dst_buf) > max_buf_list_len:
            raise DocaInvalidValue(f"number of doca_buf exceeds the limitation [{max_buf_list_len}]")
        state = create_core_objects(dev, num_src_buf + num_dst_buf)
        dma = d.Dma(dev)
        resources = DmaResources(state, dma)
        dma.set_state_changed_cb(dma_state_changed_callback)
        dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_DMA_TASKS)
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


def dma_local_copy(pci_addr: str, dst_buffer: bytearray, src_buffer: bytearray, num_src_buf: int,
                   num_dst_buf: int) -> d.ErrorCode:
    """``dma_local_copy``: copy *src_buffer* into *dst_buffer* (two distinct, equal-size buffers)."""
    length = len(src_buffer)
    resources = allocate_dma_resources(pci_addr, num_src_buf, num_dst_buf)
    state = resources.state
    assert state.buf_inv is not None
    try:
        state.pe.connect_ctx(resources.dma_ctx)
        resources.dma_ctx.start()

        # register_memory_range_and_start_mmap, destination then source
        state.dst_mmap.set_memrange(dst_buffer)
        state.dst_mmap.start()
        state.src_mmap.set_memrange(src_buffer)
        state.src_mmap.start()
        dst_buffer[:] = bytes(length)  # clear the destination memory

        src_base, _ = state.src_mmap.get_memrange()
        dst_base, _ = state.dst_mmap.get_memrange()
        src_doca_buf = allocate_buf_list(state.buf_inv, state.src_mmap, src_base, length, num_src_buf, True)
        dst_doca_buf = allocate_buf_list(state.buf_inv, state.dst_mmap, dst_base, length, num_dst_buf, False)

        task_result: list[d.ErrorCode] = []  # the task's user data: where the callbacks report
        task = resources.dma_ctx.task_memcpy_alloc_init(src_doca_buf, dst_doca_buf, user_data=task_result)
        resources.num_remaining_tasks = 1
        try:
            task.submit()
        except d.DocaError:
            task.free()
            raise
        resources.run_pe_progress = True

        # Wait for the task to complete and the ctx to stop; the copy is done only then.
        while resources.run_pe_progress:
            if not state.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)

        result = task_result[0] if task_result else d.ErrorCode.UNEXPECTED
        if result == d.ErrorCode.SUCCESS:
            log.info("Success, memory copied and verified as correct")
            copied = bytes(dst_buffer).rstrip(b"\0").decode(errors="replace")
            log.info('Destination buffer holds: "%s"', copied)
        else:
            log.error("DMA memcpy task failed: %s", result.c_name)

        dst_doca_buf.dec_refcount()
        src_doca_buf.dec_refcount()
        resources.dma_ctx.stop()  # already IDLE: stopping an idle ctx succeeds
        return result
    finally:
        destroy_dma_resources(resources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DOCA DMA local copy (port of samples/doca_dma/dma_local_copy)")
    parser.add_argument("-p", "--pci-addr", default="03:00.0", help="DOCA DMA device PCI address")
    parser.add_argument("-t", "--text", default="This is a sample piece of text", help="Text to DMA copy")
    parser.add_argument("-ns", "--num-src-buf", type=positive_int, default=1,
                        help="number of doca_buf for source buffer")
    parser.add_argument("-nd", "--num-dst-buf", type=positive_int, default=1,
                        help="number of doca_buf for destination buffer")
    args = parser.parse_args(argv)

    src_buffer = bytearray(args.text.encode() + b"\0")  # strlen(text) + 1, as the C main copies it
    dst_buffer = bytearray(len(src_buffer))
    return run_sample(log, lambda: dma_local_copy(args.pci_addr, dst_buffer, src_buffer, args.num_src_buf,
                                                  args.num_dst_buf))


if __name__ == "__main__":
    sys.exit(main())
