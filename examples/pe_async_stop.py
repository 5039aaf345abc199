"""Port of the DOCA sample ``samples/doca_common/pe_async_stop`` (DOCA 3.3) to doca_py.

``pe_polling`` stopping its DMA ctx in the middle of the run, with tasks still in flight: the 8th
completion callback calls ``doca_ctx_stop``, which cannot finish at once (``DOCA_ERROR_IN_PROGRESS``):
the ctx goes STOPPING, the tasks still in flight come back through the error callback (flushed), and
the ctx goes IDLE in a later ``progress()`` once every task has been freed. A state-changed callback
logs the transitions and raises the flag that ends the loop::

    python examples/pe_async_stop.py

doca_py idiom: ``ctx.stop()`` returns ``CtxState.STOPPING`` where DOCA returns ``DOCA_ERROR_IN_PROGRESS``
(and ``IDLE`` where it returns ``DOCA_SUCCESS``); ``ctx.stop(wait=...)`` or, under asyncio,
``await ctx.stopped()`` waits for IDLE instead of a flag, and a flushed task's ``flushed_by`` says why
it failed. Calls follow the C sample (``pe_polling.py``'s, plus ``doca_ctx_set_state_changed_cb`` and a
last loop until the ctx is IDLE); the port then logs which destinations hold their source's bytes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.errors import error_descr
from _common import error_of, run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, allocate_dma_tasks, create_buf_inventory, create_mmap,
                        create_pe, ctx_state_to_string, dma_task_free, open_device, parse_args, pe_sample_base_cleanup,
                        poll_for_completion, process_completed_dma_memcpy_task, quietly, report_copies, status_descr,
                        submit_dma_tasks)

log = setup_logging("PE_ASYNC_STOP::SAMPLE")

NUM_TASKS = 16
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class PeAsyncStopSampleState:
    """``struct pe_async_stop_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)
    dma_has_stopped: bool = False


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeAsyncStopSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    log.info("Task %#x completed successfully", id(dma_task))
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required

    # Stop once half of the tasks completed, to show an asynchronous stop: with tasks still in flight the
    # stop only begins (DOCA_ERROR_IN_PROGRESS; doca_py returns STOPPING), and dma_state_changed_cb sees
    # STOPPING -> IDLE once they are flushed.
    if state.base.num_completed_tasks == NUM_TASKS // 2:
        assert state.dma is not None
        try:
            status = d.ErrorCode.IN_PROGRESS if state.dma.stop() is d.CtxState.STOPPING else d.ErrorCode.SUCCESS
        except d.DocaError as exc:
            status = error_of(exc)
        if status != d.ErrorCode.IN_PROGRESS:
            log.error("Failed to stop DMA during run with status %s", error_descr(status))
        else:
            log.info("Stopping DMA in the middle")


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeAsyncStopSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    # dma.get_state() would tell too whether the ctx is stopping.
    if state.base.num_completed_tasks < NUM_TASKS // 2:
        log.error("Task failed with status %s", status_descr(dma_task))
    else:
        log.info("Task flushed with status %s", status_descr(dma_task))
    dma_task_free(dma_task)
    # A failed task stops the DMA ctx by itself (other libraries may differ): no stop needed here.


def dma_state_changed_cb(ctx_user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
    # IDLE -> STARTING does not happen (a DMA start is synchronous) and IDLE -> RUNNING is obvious;
    # RUNNING -> STOPPING follows the stop after half of the tasks, STOPPING -> IDLE means every task in
    # flight was flushed: the flag that ends the last progress loop.
    state: PeAsyncStopSampleState = ctx_user_data
    log.info("CTX %#x state changed from %s to %s", id(ctx), ctx_state_to_string(prev_state),
             ctx_state_to_string(next_state))
    if prev_state is d.CtxState.STOPPING and next_state is d.CtxState.IDLE:
        state.dma_has_stopped = True


def create_dma(state: PeAsyncStopSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    state.dma.set_state_changed_cb(dma_state_changed_cb)
    return state.dma


def poll_for_dma_stop(state: PeAsyncStopSampleState) -> None:
    """Progress until the DMA ctx is IDLE: its stop is asynchronous, so it needs progress() after the last
    task completed to go from STOPPING to IDLE."""
    assert state.base.pe is not None
    while not state.dma_has_stopped:
        state.base.pe.progress()


def cleanup(state: PeAsyncStopSampleState) -> None:
    if state.dma is not None:
        quietly(state.dma.stop)  # a ctx is stopped before it is destroyed
        quietly(state.dma.close)  # doca_dma_destroy; every ctx is destroyed before the Pe
    pe_sample_base_cleanup(state.base)


def run(state: PeAsyncStopSampleState) -> None:
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    dma = create_dma(state)
    dma.start()
    state.tasks = allocate_dma_tasks(state.base, dma, NUM_TASKS, DMA_BUFFER_SIZE)
    submit_dma_tasks(state.tasks)
    poll_for_completion(state.base, NUM_TASKS)
    poll_for_dma_stop(state)
    report_copies(state.base, range(1, NUM_TASKS + 1), DMA_BUFFER_SIZE)


def run_pe_async_stop_sample() -> d.ErrorCode:
    state = PeAsyncStopSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA ctx stopped while tasks are in flight (port of samples/doca_common/pe_async_stop)", argv)
    return run_sample(log, run_pe_async_stop_sample)


if __name__ == "__main__":
    sys.exit(main())
