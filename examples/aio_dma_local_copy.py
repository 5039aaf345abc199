"""``samples/doca_dma/dma_local_copy`` (DOCA 3.0) written with asyncio (:mod:`doca_py.aio`).

The same copy as ``dma_local_copy.py``, in the same order of calls, but no progress loop:
the event loop drives the progress engine (``aio.attach(pe)``), and the sample awaits what
the C sample waits for in its loop::

    python examples/aio_dma_local_copy.py -p 03:00.0 -t "This is a sample piece of text"

``dma_ctx.start()`` → ``await dma_ctx.started()`` (RUNNING) → memory ranges → buffers →
``task.submit(); await task`` (the task once its completion callback ran, or its
``DocaError``) → ``task.free()`` → ``dma_ctx.stop(); await dma_ctx.stopped()`` (IDLE) → cleanup.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import doca_py as d
from doca_py import aio
from _common import allocate_buf_list, error_of, request_stop, run_sample, setup_logging
from _dma_common import (NUM_DMA_TASKS, allocate_dma_resources, destroy_dma_resources, dma_state_changed_callback,
                         parse_dma_local_copy_args, register_memory_ranges, report_copy)

log = setup_logging("DPU_LOCAL_DMA_COPY_AIO")

TIMEOUT = 5.0  # seconds, for each state change


# -- callbacks: they run first, on the event loop's thread; ``await task`` resumes after them ----
def dma_memcpy_completed_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    log.info("DMA task was completed successfully")


def dma_memcpy_error_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    log.error("DMA task failed: %s", task.get_status().c_name)


async def dma_local_copy(pci_addr: str, dst_buffer: bytearray, src_buffer: bytearray, num_src_buf: int,
                         num_dst_buf: int) -> d.ErrorCode:
    """``dma_local_copy``: copy *src_buffer* into *dst_buffer* (two distinct, equal-size buffers)."""
    length = len(src_buffer)
    resources = allocate_dma_resources(pci_addr, num_src_buf, num_dst_buf)
    state = resources.state
    dma_ctx = resources.dma_ctx
    assert state.buf_inv is not None
    try:
        dma_ctx.set_state_changed_cb(dma_state_changed_callback)
        dma_ctx.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_DMA_TASKS)
        state.pe.connect_ctx(dma_ctx)
        async with aio.attach(state.pe):  # the loop progresses the PE from now on
            dma_ctx.start()
            await dma_ctx.started(timeout=TIMEOUT)

            register_memory_ranges(state, dst_buffer, src_buffer)
            src_base, _ = state.src_mmap.get_memrange()
            dst_base, _ = state.dst_mmap.get_memrange()
            src_doca_buf = allocate_buf_list(state.buf_inv, state.src_mmap, src_base, length, num_src_buf, True)
            dst_doca_buf = allocate_buf_list(state.buf_inv, state.dst_mmap, dst_base, length, num_dst_buf, False)

            task = dma_ctx.task_memcpy_alloc_init(src_doca_buf, dst_doca_buf)
            try:
                task.submit()
                await task
                result = d.ErrorCode.SUCCESS
            except d.DocaError as exc:  # refused by submit, or the task failed
                result = error_of(exc)
            finally:
                task.free()
            report_copy(result, dst_buffer)

            dst_doca_buf.dec_refcount()
            src_doca_buf.dec_refcount()
            request_stop(dma_ctx)  # a failed task has already moved the ctx to STOPPING
            await dma_ctx.stopped(timeout=TIMEOUT)
        return result
    finally:
        destroy_dma_resources(resources)


def main(argv: list[str] | None = None) -> int:
    args, src_buffer, dst_buffer = parse_dma_local_copy_args("DOCA DMA local copy with asyncio (doca_py.aio)",
                                                             argv)
    return run_sample(log, lambda: asyncio.run(dma_local_copy(args.pci_addr, dst_buffer, src_buffer,
                                                              args.num_src_buf, args.num_dst_buf)))


if __name__ == "__main__":
    sys.exit(main())
