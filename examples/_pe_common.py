"""What the progress-engine samples share through ``samples/doca_common/pe_common.c``, ported to doca_py.

``struct pe_sample_state_base`` and its helpers: one buffer for every source and destination, the first
device with the DMA memcpy task, an mmap over the buffer, a buffer inventory, a Pe, and the DMA tasks
(source ``k`` filled with the byte ``k``, destination empty) that each sample submits and completes in
its own way. ``EXIT_ON_FAILURE`` needs no port: a failing DOCA call raises a ``DocaError``, which ends
``run`` and reaches ``run_sample``, which logs it; ``cleanup`` runs either way.

Python-only: :func:`report_copies` reads every destination after the run and logs which ones hold
their source's bytes (the C samples only log a mismatch, from the completion callback), and
:func:`parse_args` gives the samples, which take no argument, a ``-h``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import doca_py as d
from doca_py.errors import error_descr
from _common import open_doca_device_with_capabilities, setup_logging

log = setup_logging("PE::COMMON")


@dataclass
class PeSampleStateBase:
    """``struct pe_sample_state_base``: the resources every PE sample has."""

    buffer_size: int
    buf_inventory_size: int
    device: d.Dev | None = None
    mmap: d.Mmap | None = None
    inventory: d.BufInventory | None = None
    pe: d.Pe | None = None
    #: Used for the sources and the destinations (a real program may use more memory areas).
    buffer: bytearray | None = None
    #: Where the free part of the buffer starts, as an offset (``available_buffer`` is a pointer in C).
    available_buffer: int = 0
    num_completed_tasks: int = 0


def quietly(call: Callable[[], object]) -> None:
    """``(void)call``: clean-up ignores failures, as the C samples do; the port logs them."""
    try:
        call()
    except d.DocaError as exc:
        log.warning("cleanup: %s", exc)


def status_descr(task: d.Task) -> str:
    """``doca_error_get_descr(doca_task_get_status(task))``."""
    return error_descr(task.get_status())


def process_completed_dma_memcpy_task(dma_task: d.DmaTaskMemcpy, expected_value: int) -> d.ErrorCode:
    """Check that the destination of a completed task holds *expected_value* in every byte."""
    dest = dma_task.get_dst()  # doca_dma_task_memcpy_get_dst
    dst = dest.get_data()
    dst_len = dest.get_len()
    received = dest.mmap.view(dst, dst_len)  # the CPU reads the destination at its data address
    for i, value in enumerate(received):
        if value != expected_value:
            log.error("Memcpy failed: Expected %d, received %d at index %d", expected_value, value, i)
            return d.ErrorCode.INVALID_VALUE
    return d.ErrorCode.SUCCESS


def free_dma_memcpy_task_buffers(dma_task: d.DmaTaskMemcpy) -> None:
    """Release the source and destination set to a DMA memcpy task (the sample owns both)."""
    dma_task.get_src().dec_refcount()
    dma_task.get_dst().dec_refcount()


def dma_task_free(dma_task: d.DmaTaskMemcpy) -> None:
    """Free a task no longer used, with its buffers.

    A task may be freed in its completion or error callback, later in the progress loop, or at the end of
    the program, as long as it is no longer needed. Releasing the buffers here is for simplicity only."""
    free_dma_memcpy_task_buffers(dma_task)
    dma_task.free()  # doca_task_free(doca_dma_task_memcpy_as_task(dma_task))


def allocate_buffer(state: PeSampleStateBase) -> None:
    log.info("Allocating buffer with size of %d", state.buffer_size)
    state.buffer = bytearray(state.buffer_size)  # malloc
    state.available_buffer = 0


def available_address(state: PeSampleStateBase) -> int:
    """The address of ``available_buffer`` (the mmap's range is the buffer)."""
    assert state.mmap is not None
    return state.mmap.get_memrange()[0] + state.available_buffer


def memset_available(state: PeSampleStateBase, value: int, length: int) -> None:
    """``memset(available_buffer, value, length); available_buffer += length``."""
    assert state.buffer is not None
    offset = state.available_buffer
    state.buffer[offset:offset + length] = bytes([value & 0xFF]) * length  # memset takes the low byte
    state.available_buffer += length


def allocate_dma_tasks(state: PeSampleStateBase, dma: d.Dma, num_tasks: int,
                       dma_buffer_size: int) -> list[d.DmaTaskMemcpy]:
    """Allocate *num_tasks* DMA tasks without submitting them (a sample's choice: a task can be submitted as
    soon as it is allocated). Task ``k`` (from 0) copies ``dma_buffer_size`` bytes of value ``k + 1``; its
    user data is that value, for the completion callback's check."""
    assert state.inventory is not None and state.mmap is not None
    log.info("Allocating tasks")
    tasks = []
    for task_id in range(num_tasks):
        user_data = task_id + 1  # used to verify the copy's content
        # buf_get_by_data: the source's data is its whole window.
        source = state.inventory.buf_get_by_data(state.mmap, available_address(state), dma_buffer_size)
        memset_available(state, task_id + 1, dma_buffer_size)
        # buf_get_by_addr leaves the data empty: the DMA ctx sets it when the task completes.
        destination = state.inventory.buf_get_by_addr(state.mmap, available_address(state), dma_buffer_size)
        memset_available(state, 0, dma_buffer_size)
        tasks.append(dma.task_memcpy_alloc_init(source, destination, user_data))
    return tasks


def submit_dma_tasks(tasks: Iterable[d.DmaTaskMemcpy]) -> None:
    log.info("Submitting tasks")
    for task in tasks:
        task.submit()  # doca_task_submit(doca_dma_task_memcpy_as_task(task))


def check_dev_dma_capable(devinfo: d.DevInfo) -> bool:
    return d.Dma.cap_task_memcpy_is_supported(devinfo)


def open_device(state: PeSampleStateBase) -> None:
    log.info("Opening device")
    state.device = open_doca_device_with_capabilities(check_dev_dma_capable)


def create_pe(state: PeSampleStateBase) -> None:
    log.info("Creating PE")
    state.pe = d.Pe()  # doca_pe_create


def create_mmap(state: PeSampleStateBase) -> None:
    log.info("Creating MMAP")
    assert state.device is not None
    state.mmap = d.Mmap()  # doca_mmap_create
    state.mmap.set_memrange(state.buffer)
    state.mmap.add_dev(state.device)
    state.mmap.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
    state.mmap.start()


def create_buf_inventory(state: PeSampleStateBase) -> None:
    log.info("Creating buf inventory")
    state.inventory = d.BufInventory(state.buf_inventory_size, start=False)  # doca_buf_inventory_create
    state.inventory.start()


def poll_for_completion(state: PeSampleStateBase, num_tasks: int) -> None:
    """Progress the Pe until *num_tasks* tasks completed (with success or error)."""
    assert state.pe is not None
    log.info("Polling until all tasks are completed")
    while state.num_completed_tasks < num_tasks:
        # progress() says whether anything ran; a polling sample has no use for that.
        state.pe.progress()
    log.info("All tasks are completed")


def pe_sample_base_cleanup(state: PeSampleStateBase) -> None:
    """Release the resources in reverse order of creation, ignoring failures (real code checks them: a ctx
    stop that is still in progress, say)."""
    if state.pe is not None:
        quietly(state.pe.close)  # doca_pe_destroy
    if state.inventory is not None:
        quietly(state.inventory.stop)
        quietly(state.inventory.close)  # doca_buf_inventory_destroy
    if state.mmap is not None:
        quietly(state.mmap.stop)
        quietly(state.mmap.close)  # doca_mmap_destroy
    if state.device is not None:
        quietly(state.device.close)  # doca_dev_close
    state.buffer = None  # free


def ctx_state_to_string(state: d.CtxState) -> str:
    """``ctx_state_to_string`` of the samples that log state changes."""
    return state.name.lower()


def report_copies(state: PeSampleStateBase, values: Iterable[int], dma_buffer_size: int) -> None:
    """Python-only: which destinations hold their source's bytes after the run.

    The buffer holds (source, destination) pairs in allocation order; *values* are the pairs' byte values.
    Logs ``Copied: 1,2,…`` (the values whose destination is a copy of the source) and ``Not copied: …``."""
    assert state.buffer is not None
    copied: list[int] = []
    not_copied: list[int] = []
    for pair, value in enumerate(values):
        src = 2 * pair * dma_buffer_size
        source = state.buffer[src:src + dma_buffer_size]
        destination = state.buffer[src + dma_buffer_size:src + 2 * dma_buffer_size]
        (copied if destination == source == bytes([value & 0xFF]) * dma_buffer_size else not_copied).append(value)
    log.info("Copied: %s", ",".join(map(str, copied)) or "none")
    log.info("Not copied: %s", ",".join(map(str, not_copied)) or "none")


def parse_args(description: str, argv: list[str] | None) -> argparse.Namespace:
    """The command line of a sample without parameters: ``-h`` only, as the C sample (which ignores argv)."""
    return argparse.ArgumentParser(description=description).parse_args(argv)

