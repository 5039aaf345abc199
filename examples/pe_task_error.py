"""Port of the DOCA sample ``samples/doca_common/pe_task_error`` (DOCA 3.3) to doca_py.

Handling a task that fails in the hardware: of 255 DMA memcpy tasks, the third (value 3) gets a source
of data length 0 (``doca_buf_reset_data_len``), which ``doca_task_submit`` accepts (it does not validate,
unlike ``doca_task_try_submit``) and the hardware fails. The failed task reaches the error callback,
which frees it; the failure moves the DMA ctx to STOPPING by itself, so the tasks still in flight are
flushed through the error callback too, while tasks the hardware finished before the failure (some
submitted after it) complete with success. The sample waits until no task is in flight
(``doca_ctx_get_num_inflight_tasks``), then until the ctx is IDLE::

    python examples/pe_task_error.py

doca_py idiom: ``task.get_status()`` in the error callback, ``task.reason`` for why (emulated backend),
and ``task.flushed_by`` telling a flushed task from the one that failed; under asyncio ``await task``
raises the ``DocaError`` of the status. Calls follow the C sample (``pe_polling.py``'s, with its own task
allocation, a state-changed callback and the wait for IDLE); the port then logs which destinations hold
their source's bytes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, available_address, create_buf_inventory, create_mmap,
                        create_pe, ctx_state_to_string, dma_task_free, memset_available, open_device, parse_args,
                        pe_sample_base_cleanup, poll_for_completion, process_completed_dma_memcpy_task, quietly,
                        report_copies, status_descr, submit_dma_tasks)

log = setup_logging("PE_TASK_ERROR::SAMPLE")

NUM_TASKS = 255
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class PeTaskErrorSampleState:
    """``struct pe_task_error_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)
    dma_stop_called: bool = False
    dma_has_stopped: bool = False


def dma_state_changed_cb(ctx_user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
    # RUNNING -> STOPPING comes from the failed task (the sample never calls stop while it runs);
    # STOPPING -> IDLE means every task in flight was flushed: the flag that ends the last loop.
    state: PeTaskErrorSampleState = ctx_user_data
    log.info("CTX %#x state changed from %s to %s", id(ctx), ctx_state_to_string(prev_state),
             ctx_state_to_string(next_state))
    if next_state is d.CtxState.STOPPING and not state.dma_stop_called:
        log.info("CTX moved to stopping state unexpectedly")
    if prev_state is d.CtxState.STOPPING and next_state is d.CtxState.IDLE:
        state.dma_has_stopped = True


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeTaskErrorSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    log.info("Task completed (expected value = %d)", expected_value)
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeTaskErrorSampleState = ctx_user_data
    expected_value: int = task_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s (expected value = %d)", status_descr(dma_task), expected_value)
    # Freeing the task here lets the ctx stop by itself after the error: a stopping ctx stays STOPPING
    # until every task is freed (tasks kept past their callback must be freed before the last loop).
    dma_task_free(dma_task)


def create_dma(state: PeTaskErrorSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    state.dma.set_state_changed_cb(dma_state_changed_cb)
    return state.dma


def allocate_tasks(state: PeSampleStateBase, dma: d.Dma, num_tasks: int,
                   dma_buffer_size: int) -> list[d.DmaTaskMemcpy]:
    """``allocate_dma_tasks`` with a bad task after a couple of good ones: the source of the third has a
    data length of 0. Once it fails the ctx moves to STOPPING, and every task in flight fails with it."""
    assert state.inventory is not None and state.mmap is not None
    log.info("Allocating tasks")
    tasks = []
    for task_id in range(num_tasks):
        user_data = task_id + 1  # used to verify the copy's content
        source = state.inventory.buf_get_by_data(state.mmap, available_address(state), dma_buffer_size)
        memset_available(state, task_id + 1, dma_buffer_size)
        if task_id == 2:
            source.reset_data_len()  # a source of length 0 makes the hardware fail the task
        destination = state.inventory.buf_get_by_addr(state.mmap, available_address(state), dma_buffer_size)
        memset_available(state, 0, dma_buffer_size)
        tasks.append(dma.task_memcpy_alloc_init(source, destination, user_data))
    return tasks


def poll_for_dma_stop(state: PeTaskErrorSampleState) -> None:
    """Progress until no task is in flight, then until the DMA ctx is IDLE (it goes from STOPPING to IDLE
    in a progress() after the last task was freed)."""
    assert state.dma is not None and state.base.pe is not None
    num_inflight_tasks = state.dma.get_num_inflight_tasks()
    while num_inflight_tasks > 0:
        state.base.pe.progress()
        num_inflight_tasks = state.dma.get_num_inflight_tasks()
    # The ctx stays STOPPING until every task is freed: this sample frees them in the callbacks; a
    # program that frees them elsewhere does it before this loop.
    while not state.dma_has_stopped:
        state.base.pe.progress()


def cleanup(state: PeTaskErrorSampleState) -> None:
    if state.dma is not None:
        quietly(state.dma.stop)  # a ctx is stopped before it is destroyed
        quietly(state.dma.close)  # doca_dma_destroy; every ctx is destroyed before the Pe
    pe_sample_base_cleanup(state.base)


def run(state: PeTaskErrorSampleState) -> None:
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    dma = create_dma(state)
    dma.start()
    state.tasks = allocate_tasks(state.base, dma, NUM_TASKS, DMA_BUFFER_SIZE)
    submit_dma_tasks(state.tasks)
    poll_for_completion(state.base, NUM_TASKS)
    poll_for_dma_stop(state)
    report_copies(state.base, range(1, NUM_TASKS + 1), DMA_BUFFER_SIZE)


def run_pe_task_error_sample() -> d.ErrorCode:
    state = PeTaskErrorSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA task that fails in the hardware (port of samples/doca_common/pe_task_error)", argv)
    return run_sample(log, run_pe_task_error_sample)


if __name__ == "__main__":
    sys.exit(main())
