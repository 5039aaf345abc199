"""Port of the DOCA sample ``samples/doca_common/pe_task_resubmit`` (DOCA 3.3) to doca_py.

Resubmitting a completed task instead of freeing it and allocating another: 4 tasks copy 16 buffer
pairs. Each completion callback releases its task's buffers, gives the task the next pair
(``doca_dma_task_memcpy_set_src`` / ``_set_dst``, new user data) and submits it again; once every pair
is taken, the task is freed. A resubmitted task may keep its resources, take new ones or mix them; new
buffers here only show how. Reusing tasks saves the free and the allocation::

    python examples/pe_task_resubmit.py

doca_py idiom: the same calls; ``task.user_data = ...`` is ``doca_task_set_user_data``, and the wrapper
a callback receives is the one ``task_memcpy_alloc_init`` returned (one per task descriptor), so a task
can be followed across its resubmissions (``id(task)``, the C sample's ``%p``). Calls follow the C
sample: ``pe_polling.py``'s, with the 32 buffers allocated before the 4 tasks; the port then logs which
destinations hold their source's bytes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.errors import error_descr
from _common import run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, available_address, create_buf_inventory, create_mmap,
                        create_pe, dma_task_free, free_dma_memcpy_task_buffers, memset_available, open_device,
                        parse_args, pe_sample_base_cleanup, poll_for_completion, process_completed_dma_memcpy_task,
                        quietly, report_copies, status_descr, submit_dma_tasks)

log = setup_logging("PE_TASK_RESUBMIT::SAMPLE")

NUM_TASKS = 4
NUM_BUFFER_PAIRS = NUM_TASKS * 4
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_BUFFER_PAIRS
BUF_INVENTORY_SIZE = NUM_BUFFER_PAIRS * 2


@dataclass
class PeTaskResubmitSampleState:
    """``struct pe_task_resubmit_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)
    buff_pair_index: int = 0
    src_buffers: list[d.Buf] = field(default_factory=list)
    dst_buffers: list[d.Buf] = field(default_factory=list)


def dma_task_resubmit(state: PeTaskResubmitSampleState, dma_task: d.DmaTaskMemcpy) -> None:
    """Give *dma_task* (its buffers released) the next buffer pair and submit it; free it when none is left."""
    if state.buff_pair_index < NUM_BUFFER_PAIRS:
        log.info("Task %#x resubmitting with buffers index %d", id(dma_task), state.buff_pair_index)
        # The source is filled with buff_pair_index + 1.
        dma_task.user_data = state.buff_pair_index + 1  # doca_task_set_user_data
        dma_task.set_src(state.src_buffers[state.buff_pair_index])
        dma_task.set_dst(state.dst_buffers[state.buff_pair_index])
        state.buff_pair_index += 1
        try:
            dma_task.submit()
        except d.DocaError as exc:
            # The C sample logs doca_task_get_status(task), the task's previous status; the port logs why
            # the submit failed.
            log.error("Failed to submit task with status %s", error_descr(exc.code))
            dma_task_free(dma_task)  # a task that failed to submit is the program's to free
            state.base.num_completed_tasks += 1  # it will never complete
    else:
        dma_task.free()  # doca_task_free: no pair left (its buffers were released already)


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeTaskResubmitSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    free_dma_memcpy_task_buffers(dma_task)
    dma_task_resubmit(state, dma_task)


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeTaskResubmitSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s", status_descr(dma_task))
    free_dma_memcpy_task_buffers(dma_task)
    dma_task_resubmit(state, dma_task)


def create_dma(state: PeTaskResubmitSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    return state.dma


def allocate_doca_bufs(state: PeTaskResubmitSampleState) -> None:
    """The source (filled with its index + 1) and the empty destination of every buffer pair."""
    base = state.base
    assert base.inventory is not None and base.mmap is not None
    log.info("Allocating doca buffers")
    for i in range(NUM_BUFFER_PAIRS):
        state.src_buffers.append(base.inventory.buf_get_by_data(base.mmap, available_address(base),
                                                                DMA_BUFFER_SIZE))
        memset_available(base, i + 1, DMA_BUFFER_SIZE)
        state.dst_buffers.append(base.inventory.buf_get_by_addr(base.mmap, available_address(base),
                                                                DMA_BUFFER_SIZE))
        memset_available(base, 0, DMA_BUFFER_SIZE)


def allocate_tasks_for_resubmit(state: PeTaskResubmitSampleState) -> None:
    """Allocate the tasks with the first buffer pairs, without submitting them."""
    assert state.dma is not None
    log.info("Allocating tasks")
    for _ in range(NUM_TASKS):
        user_data = state.buff_pair_index + 1
        task = state.dma.task_memcpy_alloc_init(state.src_buffers[state.buff_pair_index],
                                                state.dst_buffers[state.buff_pair_index], user_data)
        state.tasks.append(task)
        log.info("Task %#x allocated with buffers index %d", id(task), state.buff_pair_index)
        state.buff_pair_index += 1


def cleanup(state: PeTaskResubmitSampleState) -> None:
    if state.dma is not None:
        quietly(state.dma.stop)  # a ctx is stopped before it is destroyed
        quietly(state.dma.close)  # doca_dma_destroy; every ctx is destroyed before the Pe
    pe_sample_base_cleanup(state.base)


def run(state: PeTaskResubmitSampleState) -> None:
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    dma = create_dma(state)
    dma.start()
    allocate_doca_bufs(state)
    allocate_tasks_for_resubmit(state)
    submit_dma_tasks(state.tasks)
    poll_for_completion(state.base, NUM_BUFFER_PAIRS)
    report_copies(state.base, range(1, NUM_BUFFER_PAIRS + 1), DMA_BUFFER_SIZE)


def run_pe_task_resubmit_sample() -> d.ErrorCode:
    state = PeTaskResubmitSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA tasks resubmitted from their completion callbacks "
               "(port of samples/doca_common/pe_task_resubmit)", argv)
    return run_sample(log, run_pe_task_resubmit_sample)


if __name__ == "__main__":
    sys.exit(main())
