"""Port of the DOCA sample ``samples/doca_common/pe_event`` (DOCA 3.3) to doca_py.

The progress engine in event mode: instead of polling, the thread sleeps until a task completes. The
Pe's notification handle (``doca_pe_get_notification_handle``, a file descriptor) is added to an epoll;
the loop progresses while ``doca_pe_progress`` finds work, then arms the handle
(``doca_pe_request_notification``), sleeps in ``epoll_wait`` and acknowledges the wake-up
(``doca_pe_clear_notification``). Sleeping costs an interrupt and latency and saves the CPU that
polling burns even when nothing completes::

    python examples/pe_event.py

doca_py idiom: asyncio (``doca_py.aio``). ``async with aio.attach(pe)`` hands the notification handle
to the event loop as a reader and runs this arm/sleep/clear/progress cycle for you, so the thread
sleeps in the event loop with the rest of the program's I/O (``aio_dma_local_copy.py``); without
asyncio, ``Pe.wait(timeout)`` is one turn of this loop. Calls follow the C sample (``pe_polling.py``'s,
with the epoll registered after the Pe is created and the event loop instead of the polling one); the
port closes the epoll, which the C sample leaves open, and then logs which destinations hold their
source's bytes. On the emulated backend a 1 KiB copy completes in the ``progress()`` calls that follow
its submit, so the loop seldom needs to sleep; hardware completes asynchronously, and it sleeps there.
"""

from __future__ import annotations

import select
import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import run_sample, setup_logging
from _pe_common import (PeSampleStateBase, allocate_buffer, allocate_dma_tasks, create_buf_inventory, create_mmap,
                        create_pe, dma_task_free, open_device, parse_args, pe_sample_base_cleanup,
                        process_completed_dma_memcpy_task, quietly, report_copies, status_descr, submit_dma_tasks)

log = setup_logging("PE_EVENT::SAMPLE")

NUM_TASKS = 16
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class PeEventSampleState:
    """``struct pe_event_sample_state``. A ``Dma`` is its own ctx (``doca_dma_as_ctx``)."""

    base: PeSampleStateBase = field(default_factory=lambda: PeSampleStateBase(BUFFER_SIZE, BUF_INVENTORY_SIZE))
    dma: d.Dma | None = None
    tasks: list[d.DmaTaskMemcpy] = field(default_factory=list)
    epoll: select.epoll | None = None


def dma_memcpy_completed_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    expected_value: int = task_user_data
    state: PeEventSampleState = ctx_user_data
    state.base.num_completed_tasks += 1
    process_completed_dma_memcpy_task(dma_task, expected_value)  # nothing to do with the result
    dma_task_free(dma_task)  # the task is no longer required


def dma_memcpy_error_callback(dma_task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: PeEventSampleState = ctx_user_data
    state.base.num_completed_tasks += 1  # this sample counts a failed task as completed
    log.error("Task failed with status %s", status_descr(dma_task))
    dma_task_free(dma_task)


def register_pe_event(state: PeEventSampleState) -> None:
    """An epoll that the sample can wait on to learn that a task completed."""
    assert state.base.pe is not None
    log.info("Registering PE event")
    state.epoll = select.epoll()  # epoll_create1(0); OSError (DOCA_ERROR_OPERATING_SYSTEM in C) on failure
    # The notification handle is a file descriptor that can be added to an epoll.
    event_handle = state.base.pe.get_notification_handle()
    state.epoll.register(event_handle, select.EPOLLIN)


def create_dma(state: PeEventSampleState) -> d.Dma:
    log.info("Creating DMA")
    assert state.base.device is not None and state.base.pe is not None
    state.dma = d.Dma(state.base.device)  # doca_dma_create
    state.base.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    # The ctx user data reaches the completion callbacks: it binds them to the sample's state.
    state.dma.user_data = state  # doca_ctx_set_user_data
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)
    return state.dma


def run_for_completion(state: PeEventSampleState) -> None:
    """Run the Pe until every task completed, sleeping on the event while there is nothing to progress."""
    assert state.base.pe is not None and state.epoll is not None
    pe = state.base.pe
    no_timeout = -1
    log.info("Running until all tasks are complete")
    while True:
        # Progress while progress() finds work: there may be more completions. Once it finds none, arm
        # the event and sleep until it fires.
        while pe.progress():
            if state.base.num_completed_tasks == NUM_TASKS:
                log.info("All tasks completed")
                return
        # Arm the event: it fires when a task completes. Arming enables an interrupt, and lets the thread
        # sleep instead of spinning.
        pe.request_notification()
        state.epoll.poll(no_timeout, 1)  # epoll_wait; OSError on failure
        pe.clear_notification(0)  # the handle is not used on Linux


def cleanup(state: PeEventSampleState) -> None:
    if state.dma is not None:
        quietly(state.dma.stop)  # a ctx is stopped before it is destroyed
        quietly(state.dma.close)  # doca_dma_destroy; every ctx is destroyed before the Pe
    pe_sample_base_cleanup(state.base)
    if state.epoll is not None:
        state.epoll.close()


def run(state: PeEventSampleState) -> None:
    allocate_buffer(state.base)
    open_device(state.base)
    create_mmap(state.base)
    create_buf_inventory(state.base)
    create_pe(state.base)
    register_pe_event(state)
    dma = create_dma(state)
    dma.start()
    state.tasks = allocate_dma_tasks(state.base, dma, NUM_TASKS, DMA_BUFFER_SIZE)
    submit_dma_tasks(state.tasks)
    run_for_completion(state)
    report_copies(state.base, range(1, NUM_TASKS + 1), DMA_BUFFER_SIZE)


def run_pe_event_sample() -> d.ErrorCode:
    state = PeEventSampleState()
    try:
        run(state)
    finally:
        cleanup(state)
    return d.ErrorCode.SUCCESS


def main(argv: list[str] | None = None) -> int:
    parse_args("DOCA progress engine in event mode (port of samples/doca_common/pe_event)", argv)
    return run_sample(log, run_pe_event_sample)


if __name__ == "__main__":
    sys.exit(main())
