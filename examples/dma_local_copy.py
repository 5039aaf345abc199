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

import sys
import time
from typing import Any

import doca_py as d
from _common import SLEEP_IN_SECONDS, allocate_buf_list, request_stop, run_sample, setup_logging
from _dma_common import (NUM_DMA_TASKS, DmaResources, allocate_dma_resources, destroy_dma_resources,
                         dma_state_changed_callback, parse_dma_local_copy_args, register_memory_ranges,
                         report_copy)

log = setup_logging("DPU_LOCAL_DMA_COPY")


# -- callbacks ------------------------------------------------------------------------------------
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


def dma_local_copy(pci_addr: str, dst_buffer: bytearray, src_buffer: bytearray, num_src_buf: int,
                   num_dst_buf: int) -> d.ErrorCode:
    """``dma_local_copy``: copy *src_buffer* into *dst_buffer* (two distinct, equal-size buffers)."""
    length = len(src_buffer)
    resources = allocate_dma_resources(pci_addr, num_src_buf, num_dst_buf)
    state = resources.state
    assert state.buf_inv is not None
    try:
        resources.dma_ctx.set_state_changed_cb(dma_state_changed_callback)
        resources.dma_ctx.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback,
                                               NUM_DMA_TASKS)
        state.pe.connect_ctx(resources.dma_ctx)
        resources.dma_ctx.start()

        register_memory_ranges(state, dst_buffer, src_buffer)
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
        report_copy(result, dst_buffer)

        dst_doca_buf.dec_refcount()
        src_doca_buf.dec_refcount()
        resources.dma_ctx.stop()  # already IDLE: stopping an idle ctx succeeds
        return result
    finally:
        destroy_dma_resources(resources)


def main(argv: list[str] | None = None) -> int:
    args, src_buffer, dst_buffer = parse_dma_local_copy_args(
        "DOCA DMA local copy (port of samples/doca_dma/dma_local_copy)", argv)
    return run_sample(log, lambda: dma_local_copy(args.pci_addr, dst_buffer, src_buffer, args.num_src_buf,
                                                  args.num_dst_buf))


if __name__ == "__main__":
    sys.exit(main())
