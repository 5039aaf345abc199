"""Port of the DOCA sample ``samples/doca_common/pe_task_try_submit`` (DOCA 3.3) to doca_py.

``pe_polling`` submitting with ``doca_task_try_submit``, which validates a task (its buffers, their
sizes) before submitting it, so that a malformed task is refused at submission instead of failing in
the hardware. Validation costs CPU: use it while developing, ``submit`` once the program is stable. A
refused task stays the program's, which frees it::

    python examples/pe_task_try_submit.py

doca_py idiom: ``task.try_submit()`` raises the refusal (``DocaInvalidValue`` for a malformed task) and
leaves the task allocated (``submit()`` does not validate: ``pe_task_error.py`` submits a malformed task
and sees it fail in the engine). Calls follow the C sample, as ``pe_polling.py`` does; the port then logs
which destinations hold their source's bytes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.errors import error_descr
from _common import run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, allocate_dma_tasks, create_buf_inventory, create_mmap,
                        create_pe, dma_task_free, open_device, parse_args, pe_sample_base_cleanup, poll_for_completion,
                        process_completed_dma_memcpy_task, quietly, report_copies, status_descr)

log = setup_logging("PE_TASK_TRY_SUBMIT::SAMPLE")

NUM_TASKS = 16
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class PeTaskTrySubmitSampleState:
    """``struct pe_task_try_submit_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeTaskTrySubmitSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeTaskTrySubmitSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s", status_descr(dma_task))
    dma_task_free(dma_task)


def create_dma(state: PeTaskTrySubmitSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    return state.dma


def try_submit_dma_tasks(tasks: list[d.DmaTaskMemcpy]) -> None:
    """Try to submit every task (see ``allocate_dma_tasks``)."""
    log.info("Submitting tasks")
    for task in tasks:
        try:
            task.try_submit()  # doca_task_try_submit(doca_dma_task_memcpy_as_task(task))
        except d.DocaError as exc:
            log.error("Failed to submit task with status %s", error_descr(exc.code))
            # A task that failed to submit belongs to the program; the sample frees it here.
            task.free()
            raise


def cleanup(state: PeTaskTrySubmitSampleState) -> None:
    if state.dma is not None:
        quietly(state.dma.stop)  # a ctx is stopped before it is destroyed
        quietly(state.dma.close)  # doca_dma_destroy; every ctx is destroyed before the Pe
    pe_sample_base_cleanup(state.base)


def run(state: PeTaskTrySubmitSampleState) -> None:
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    dma = create_dma(state)
    dma.start()
    state.tasks = allocate_dma_tasks(state.base, dma, NUM_TASKS, DMA_BUFFER_SIZE)
    try_submit_dma_tasks(state.tasks)
    poll_for_completion(state.base, NUM_TASKS)
    report_copies(state.base, range(1, NUM_TASKS + 1), DMA_BUFFER_SIZE)


def run_pe_task_try_submit_sample() -> d.ErrorCode:
    state = PeTaskTrySubmitSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA progress engine with doca_task_try_submit (port of samples/doca_common/pe_task_try_submit)", argv)
    return run_sample(log, run_pe_task_try_submit_sample)


if __name__ == "__main__":
    sys.exit(main())
