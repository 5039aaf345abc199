"""Port of the DOCA sample ``samples/doca_common/pe_multi_context`` (DOCA 3.3) to doca_py.

``pe_polling`` with four DMA contexts on one progress engine: each ctx gets its 16 tasks, and one
polling loop completes all 64. Every ctx is connected to the Pe first and only then started (that lets
DOCA optimise the Pe's hardware and memory), and the callbacks, shared by the four, could tell the ctxs
apart with ``task.get_ctx()``. All ctxs use one device here; a Pe can run ctxs of several devices::

    python examples/pe_multi_context.py

doca_py idiom: ``pe.connect_ctx(ctx)`` for each, one ``pe.progress()`` loop for all; under asyncio one
``aio.attach(pe)`` drives every ctx connected to it. Calls follow the C sample: buffer → device → mmap
→ buffer inventory → Pe → four DMA ctxs (user data, connected, task configuration) → all started →
tasks allocated per ctx → submitted ctx by ctx → polled → cleanup; the port then logs which destinations
hold their source's bytes (values 1 to 16, once per ctx).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, allocate_dma_tasks, create_buf_inventory, create_mmap,
                        create_pe, dma_task_free, open_device, parse_args, pe_sample_base_cleanup, poll_for_completion,
                        process_completed_dma_memcpy_task, quietly, report_copies, status_descr)

log = setup_logging("PE_MULTI_CONTEXT::SAMPLE")

NUM_CTX = 4
NUM_TASKS = 16
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS * NUM_CTX
BUF_INVENTORY_SIZE = NUM_TASKS * 2 * NUM_CTX


@dataclass
class PeMultiCtxSampleState:
    """``struct pe_multi_ctx_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: list[d.Dma] = field(default_factory=list)
    tasks: list[list[d.DmaTaskMemcpy]] = field(default_factory=list)


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeMultiCtxSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    # dma_task.get_ctx() (doca_task_get_ctx) tells which ctx the task ran on, for a callback that serves
    # several ctxs and must tell them apart.
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeMultiCtxSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s", status_descr(dma_task))
    dma_task_free(dma_task)


def create_dmas(state: PeMultiCtxSampleState) -> None:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    for _ in range(NUM_CTX):
        dma = d.Dma(state.base.device)  # doca_dma_create
        state.dma.append(dma)
        # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
        dma.user_data = state  # doca_ctx_set_user_data
        # A ctx connects to one Pe. Connect every ctx first and start them after: that lets DOCA
        # optimise the Pe's hardware and memory.
        state.base.pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)


def start_dmas(state: PeMultiCtxSampleState) -> None:
    for dma in state.dma:
        dma.start()


def allocate_tasks_for_multi_context(state: PeMultiCtxSampleState) -> None:
    log.info("Allocating tasks")
    for dma in state.dma:
        state.tasks.append(allocate_dma_tasks(state.base, dma, NUM_TASKS, DMA_BUFFER_SIZE))


def submit_tasks_for_multi_context(state: PeMultiCtxSampleState) -> None:
    log.info("Submitting tasks")
    # Submission sets the order in which tasks start, not the order in which they complete; ctx by ctx
    # rather than task by task is arbitrary.
    for ctx_tasks in state.tasks:
        for task in ctx_tasks:
            task.submit()


def cleanup(state: PeMultiCtxSampleState) -> None:
    # Every ctx is stopped and destroyed before the Pe.
    for dma in state.dma:
        quietly(dma.stop)
        quietly(dma.close)  # doca_dma_destroy
    pe_sample_base_cleanup(state.base)


def run(state: PeMultiCtxSampleState) -> None:
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    create_dmas(state)
    start_dmas(state)
    allocate_tasks_for_multi_context(state)
    submit_tasks_for_multi_context(state)
    poll_for_completion(state.base, NUM_TASKS * NUM_CTX)
    report_copies(state.base, list(range(1, NUM_TASKS + 1)) * NUM_CTX, DMA_BUFFER_SIZE)


def run_pe_multi_ctx_sample() -> d.ErrorCode:
    state = PeMultiCtxSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA progress engine running several contexts (port of samples/doca_common/pe_multi_context)", argv)
    return run_sample(log, run_pe_multi_ctx_sample)


if __name__ == "__main__":
    sys.exit(main())
