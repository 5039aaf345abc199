"""Port of the DOCA sample ``samples/doca_common/cache_invalidate`` (DOCA 3.0 to 3.3) to doca_py.

Copies one buffer to another with a DMA memcpy task, then, from the copy's completion callback,
submits a DOCA Mmap Advise cache invalidate task on the copy's source: once the data has left the
BlueField, the Arm cores' cache lines holding it need not be written back to DRAM::

    python examples/cache_invalidate.py

Like the C sample it takes no argument and opens the first device that supports both the DMA memcpy
task and the cache invalidate task (on the emulated backend: the DPU-side device ``03:00.0``; the
host-side one has no cache invalidate). Calls follow the C sample: a buffer for source and
destination → the device → an mmap over the buffer (device added, local read/write, started) → a buffer
inventory → a Pe → the DMA ctx and the Mmap Advise ctx (connected, their user data the sample state,
one task each) → both started → the DMA task (source ``get_by_data``, destination ``get_by_addr``) and
the cache invalidate task (on the DMA source) allocated → the DMA task submitted → ``doca_pe_progress``
until the cache invalidate completion ends the run → cleanup in reverse order. The port also checks
that the destination holds the source's bytes (the C sample does not look).

``doca_mmap_advise`` exists from DOCA 2.8: on an older runtime (or the emulator presenting 2.6) no device
passes the capability check and the sample fails saying so.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import run_sample, setup_logging

log = setup_logging("CACHE_INVALIDATE::SAMPLE")

NUM_TASKS = 1
DMA_BUFFER_SIZE = 1024
BUFFER_SIZE = DMA_BUFFER_SIZE * 2 * NUM_TASKS
BUF_INVENTORY_SIZE = NUM_TASKS * 2


@dataclass
class SampleState:
    """``struct cache_invalidate_sample_state``: everything the sample creates, for ``cleanup``."""

    buffer: bytearray = field(default_factory=bytearray)
    device: d.Dev | None = None
    mmap: d.Mmap | None = None
    inventory: d.BufInventory | None = None
    pe: d.Pe | None = None
    dma: d.Dma | None = None
    dma_source: d.Buf | None = None
    dma_destination: d.Buf | None = None
    dma_task: d.DmaTaskMemcpy | None = None
    mmap_advise: d.MmapAdvise | None = None
    cache_invalidate_task: d.MmapAdviseTaskInvalidateCache | None = None
    run_pe: bool = False
    result: d.ErrorCode = d.ErrorCode.SUCCESS


def allocate_buffer(state: SampleState) -> None:
    log.info("Allocating buffer")
    state.buffer = bytearray(BUFFER_SIZE)
    # The C sample copies whatever malloc returned; a known pattern lets the port check the copy.
    state.buffer[:DMA_BUFFER_SIZE] = bytes(i % 251 for i in range(DMA_BUFFER_SIZE))


def check_dev_capable(devinfo: d.DevInfo) -> bool:
    """``check_dev_capable``: DMA memcpy and cache invalidate."""
    return (d.Dma.cap_task_memcpy_is_supported(devinfo)
            and d.MmapAdvise.cap_task_cache_invalidate_is_supported(devinfo))


def open_device(state: SampleState) -> None:
    """``open_doca_device_with_capabilities``: the first device that passes ``check_dev_capable``."""
    log.info("Opening device")
    for info in d.devinfo_create_list():
        if check_dev_capable(info):
            state.device = info.open()
            return
    raise d.errors.DocaNotFound("no device supports both the DMA memcpy task and the cache invalidate task "
                                "(doca_mmap_advise needs a BlueField's Arm side and DOCA 2.8 or later)")


def create_mmap(state: SampleState) -> None:
    log.info("Creating MMAP")
    assert state.device is not None
    state.mmap = d.Mmap()
    state.mmap.set_memrange(state.buffer)
    state.mmap.add_dev(state.device)
    state.mmap.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
    state.mmap.start()


def create_buf_inventory(state: SampleState) -> None:
    log.info("Creating buf inventory")
    state.inventory = d.BufInventory(BUF_INVENTORY_SIZE)


def create_pe(state: SampleState) -> None:
    log.info("Creating PE")
    state.pe = d.Pe()


# -- callbacks ------------------------------------------------------------------------------------
def dma_memcpy_completed_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: SampleState = ctx_user_data
    log.info("DMA completed, Submitting cache invalidate task")
    assert state.cache_invalidate_task is not None
    try:
        state.cache_invalidate_task.submit()
    except d.DocaError as exc:  # the C sample ignores the result; without it the loop would never end
        log.error("Submitting the cache invalidate task failed: %s", exc)
        state.result = d.ErrorCode(exc.code)
        state.run_pe = False


def dma_memcpy_error_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    state: SampleState = ctx_user_data
    state.result = task.get_status()
    log.error("DMA Task failed with status %s", state.result.c_name)
    state.run_pe = False


def cache_invalidate_completed_callback(task: d.MmapAdviseTaskInvalidateCache, task_user_data: Any,
                                        ctx_user_data: Any) -> None:
    state: SampleState = ctx_user_data
    log.info("Cache invalidate completed")
    state.run_pe = False


def cache_invalidate_error_callback(task: d.MmapAdviseTaskInvalidateCache, task_user_data: Any,
                                    ctx_user_data: Any) -> None:
    state: SampleState = ctx_user_data
    state.result = task.get_status()
    log.error("Cache invalidate Task failed with status %s", state.result.c_name)
    state.run_pe = False


def create_dma(state: SampleState) -> None:
    log.info("Creating DMA")
    assert state.device is not None and state.pe is not None
    # The ctx user data reaches the task callbacks: it binds them to the sample's state.
    state.dma = d.Dma(state.device, user_data=state)
    state.pe.connect_ctx(state.dma)  # a ctx connects to one Pe (a Pe runs many ctxs)
    state.dma.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_TASKS)


def create_mmap_advise(state: SampleState) -> None:
    log.info("Creating MMAP advise")
    assert state.device is not None and state.pe is not None
    state.mmap_advise = d.MmapAdvise(state.device, user_data=state)
    state.pe.connect_ctx(state.mmap_advise)
    state.mmap_advise.task_invalidate_cache_set_conf(cache_invalidate_completed_callback,
                                                     cache_invalidate_error_callback, NUM_TASKS)


def allocate_dma_task(state: SampleState) -> None:
    log.info("Allocating DMA task")
    assert state.inventory is not None and state.mmap is not None and state.dma is not None
    base, _ = state.mmap.get_memrange()
    state.dma_source = state.inventory.buf_get_by_data(state.mmap, base, DMA_BUFFER_SIZE)
    # An empty destination: the DMA ctx sets its data length when the task completes.
    state.dma_destination = state.inventory.buf_get_by_addr(state.mmap, base + DMA_BUFFER_SIZE, DMA_BUFFER_SIZE)
    state.dma_task = state.dma.task_memcpy_alloc_init(state.dma_source, state.dma_destination)


def allocate_cache_invalidate_task(state: SampleState) -> None:
    log.info("Allocating cache invalidate task")
    assert state.mmap_advise is not None and state.dma_source is not None
    state.cache_invalidate_task = state.mmap_advise.task_invalidate_cache_alloc_init(state.dma_source)


def submit_dma_task(state: SampleState) -> None:
    log.info("Submitting DMA task")
    assert state.dma_task is not None
    state.dma_task.submit()


def poll_for_completion(state: SampleState) -> None:
    log.info("Polling until all tasks are completed")
    assert state.pe is not None
    state.run_pe = True
    while state.run_pe:
        state.pe.progress()  # a polling sample: whether anything happened does not matter
    log.info("All tasks are completed")


def check_copy(state: SampleState) -> None:
    """Not in the C sample: the destination holds the source's bytes (the invalidate changed nothing)."""
    assert state.dma_destination is not None
    if state.dma_destination.get_data_len() != DMA_BUFFER_SIZE or \
            state.buffer[DMA_BUFFER_SIZE:] != state.buffer[:DMA_BUFFER_SIZE]:
        raise d.errors.DocaInvalidValue("the DMA destination does not hold the source's bytes")
    log.info("The DMA destination holds the source's %d bytes", DMA_BUFFER_SIZE)


def cleanup(state: SampleState) -> None:
    """Release everything in reverse order of creation, ignoring failures as the C sample does."""
    def quietly(what: Any) -> None:
        try:
            what()
        except d.DocaError as exc:
            log.warning("cleanup: %s", exc)

    for task in (state.dma_task, state.cache_invalidate_task):
        if task is not None:
            quietly(task.free)
    for ctx in (state.dma, state.mmap_advise):  # a ctx is stopped before it is destroyed
        if ctx is not None:
            quietly(ctx.stop)
    for ctx in (state.dma, state.mmap_advise):  # every ctx is destroyed before its Pe
        if ctx is not None:
            quietly(ctx.close)
    if state.pe is not None:
        quietly(state.pe.close)
    for buf in (state.dma_source, state.dma_destination):
        if buf is not None:
            quietly(buf.dec_refcount)
    for obj in (state.inventory, state.mmap, state.device):
        if obj is not None:
            quietly(obj.close)


def run_cache_invalidate_sample() -> d.ErrorCode:
    state = SampleState()
    try:
        allocate_buffer(state)
        open_device(state)
        create_mmap(state)
        create_buf_inventory(state)
        create_pe(state)
        create_dma(state)
        create_mmap_advise(state)
        assert state.dma is not None and state.mmap_advise is not None
        state.dma.start()
        state.mmap_advise.start()
        allocate_dma_task(state)
        allocate_cache_invalidate_task(state)
        submit_dma_task(state)
        poll_for_completion(state)
        if state.result == d.ErrorCode.SUCCESS:
            check_copy(state)
        return state.result
    finally:
        cleanup(state)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv:
        print("usage: cache_invalidate.py (the sample takes no arguments)", file=sys.stderr)
        return 2
    return run_sample(log, run_cache_invalidate_sample)


if __name__ == "__main__":
    sys.exit(main())
