"""Port of the DOCA sample ``samples/doca_common/pe_reactive`` (DOCA 3.3) to doca_py.

The reactive pattern: the main loop only calls ``doca_pe_progress`` while a flag says so, and the
program lives in the callbacks. The state-changed callback submits the 16 DMA tasks when the ctx is
RUNNING, and destroys the ctx and lowers the flag when it is IDLE again; the completion callback of the
last task stops the ctx::

    python examples/pe_reactive.py

doca_py idiom: asyncio (``doca_py.aio``). ``async with aio.attach(pe)`` makes the Pe's notification
handle an event-loop reader, so the loop calls ``progress()`` when there is work and the same callbacks
run on the loop's thread; ``await runner.until(lambda: not state.run_pe_progress)`` (``runner`` is what
``attach`` returned) replaces the flag loop, and ``await ctx.stopped()`` waits for IDLE. Calls follow
the C sample: buffer → device → mmap → buffer inventory → Pe → DMA ctx (connected, user data,
state-changed callback, task configuration) → ``doca_ctx_start`` → ``doca_pe_progress`` until the
callbacks are done → cleanup; the port then logs which destinations hold their source's bytes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import request_stop, run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, allocate_dma_tasks, create_buf_inventory, create_mmap,
                        create_pe, dma_task_free, open_device, parse_args, pe_sample_base_cleanup,
                        process_completed_dma_memcpy_task, quietly, report_copies, status_descr, submit_dma_tasks)

log = setup_logging("PE_REACTIVE::SAMPLE")

NUM_TASKS = 16
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class PeReactiveSampleState:
    """``struct pe_reactive_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)
    run_pe_progress: bool = False  # should the main loop keep progressing the Pe?


def dma_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
    state: PeReactiveSampleState = user_data
    if next_state is d.CtxState.IDLE:
        log.info("DMA context has been stopped. Destroying context")
        assert state.dma is not None
        state.dma.close()  # doca_dma_destroy: the ctx is stopped, it can go now
        state.dma = None
        state.run_pe_progress = False  # the Pe need not be progressed any more
    elif next_state is d.CtxState.STARTING:
        log.error("DMA context entered into starting state. Unexpected transition")
    elif next_state is d.CtxState.RUNNING:
        log.info("DMA context is running. Submitting tasks")
        assert state.dma is not None
        # The ctx runs: the tasks can be allocated and submitted now.
        try:
            state.tasks = allocate_dma_tasks(state.base, state.dma, NUM_TASKS, DMA_BUFFER_SIZE)
        except d.DocaError:
            log.error("Failed to allocate DMA memory copy tasks")
            state.run_pe_progress = False
            return  # the C sample goes on to submit the tasks it failed to allocate
        try:
            submit_dma_tasks(state.tasks)
        except d.DocaError:
            log.error("Failed to submit DMA memory copy tasks")
            state.run_pe_progress = False
    elif next_state is d.CtxState.STOPPING:
        # stop() was called: after a failure or once the work is done. Either way progress() flushes the
        # tasks still in flight and then moves the ctx to IDLE.
        log.info("DMA context entered into stopping state. Any inflight tasks will be flushed")


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeReactiveSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required
    # A ctx can be stopped from a completion callback (or from anywhere else in the program).
    if state.base.num_completed_tasks == NUM_TASKS:
        log.info("All tasks have completed. Stopping context")
        assert state.dma is not None
        request_stop(state.dma)  # (void)doca_ctx_stop


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeReactiveSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s", status_descr(dma_task))
    dma_task_free(dma_task)


def create_dma(state: PeReactiveSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    # The sample reacts to the state changes that happen in progress().
    state.dma.set_state_changed_cb(dma_state_changed_callback)
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    return state.dma


def cleanup(state: PeReactiveSampleState) -> None:
    if state.dma is not None:  # only after a failure: the IDLE callback destroyed it otherwise
        quietly(state.dma.stop)
        quietly(state.dma.close)
    pe_sample_base_cleanup(state.base)


def run(state: PeReactiveSampleState) -> None:
    state.run_pe_progress = True
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    dma = create_dma(state)
    dma.start()
    assert state.base.pe is not None
    log.info("Polling until all tasks are completed")
    while state.run_pe_progress:
        # The main loop: in here the state-changed callback runs on each transition and the completion
        # callbacks on each task; they lower run_pe_progress when everything is done.
        state.base.pe.progress()
    report_copies(state.base, range(1, NUM_TASKS + 1), DMA_BUFFER_SIZE)


def run_pe_reactive_sample() -> d.ErrorCode:
    state = PeReactiveSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA progress engine in a reactive pattern (port of samples/doca_common/pe_reactive)", argv)
    return run_sample(log, run_pe_reactive_sample)


if __name__ == "__main__":
    sys.exit(main())
