"""Port of the DOCA sample ``samples/doca_common/pe_polling`` (DOCA 3.3) to doca_py.

The progress engine in polling mode, the most basic of the PE samples (the others are this one plus
one difference each): 16 DMA memcpy tasks are allocated, submitted, and ``Pe.progress()`` is called
in a loop, ignoring what it returns, until every task has completed::

    python examples/pe_polling.py

doca_py idiom: the loop is the same; ``Pe.wait(timeout)`` is the polling loop that sleeps when idle.
Like the C sample it takes no argument and uses the first device with the DMA memcpy task. Calls
follow the C sample: buffer → device → mmap → buffer inventory → Pe → DMA ctx (connected, user data,
task configuration) → ``doca_ctx_start`` → tasks allocated → submitted → polled → cleanup. The port
then logs which destinations hold their source's bytes (``Copied: 1,…,16``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, allocate_dma_tasks, create_buf_inventory, create_mmap,
                        create_pe, dma_task_free, open_device, parse_args, pe_sample_base_cleanup, poll_for_completion,
                        process_completed_dma_memcpy_task, quietly, report_copies, status_descr, submit_dma_tasks)

log = setup_logging("PE_POLLING::SAMPLE")

NUM_TASKS = 16
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class PePollingSampleState:
    """``struct pe_polling_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PePollingSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PePollingSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s", status_descr(dma_task))
    dma_task_free(dma_task)


def create_dma(state: PePollingSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    return state.dma


def cleanup(state: PePollingSampleState) -> None:
    if state.dma is not None:
        quietly(state.dma.stop)  # a ctx is stopped before it is destroyed
        quietly(state.dma.close)  # doca_dma_destroy; every ctx is destroyed before the Pe
    pe_sample_base_cleanup(state.base)


def run(state: PePollingSampleState) -> None:
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
    report_copies(state.base, range(1, NUM_TASKS + 1), DMA_BUFFER_SIZE)


def run_pe_polling_sample() -> d.ErrorCode:
    state = PePollingSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA progress engine in polling mode (port of samples/doca_common/pe_polling)", argv)
    return run_sample(log, run_pe_polling_sample)


if __name__ == "__main__":
    sys.exit(main())
