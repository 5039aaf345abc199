"""Helpers the DOCA samples share through ``samples/common.c``, ported to doca_py.

Only what the ported samples use: opening a device by PCI address with a capability
check, the ``program_core_objects`` bundle (two mmaps, a buffer inventory, a progress
engine), buffer lists, ``DOCA_ERROR_PROPAGATE`` and the sample's ``main`` wrapper. The
samples log with DOCA's ``DOCA_LOG_*`` macros; the ports log to stdout with
:mod:`logging`, so a test (or a user) can read every step and result.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass

import doca_py as d
from doca_py.errors import DocaInvalidValue, DocaNotFound

#: ``SLEEP_IN_NANOS`` of the samples: how long to sleep when ``doca_pe_progress`` found nothing.
SLEEP_IN_SECONDS = 10e-6

#: A capability check such as ``Dma.cap_task_memcpy_is_supported`` (``tasks_check`` in C).
TaskCheck = Callable[[d.DevInfo], bool]


def setup_logging(name: str) -> logging.Logger:
    """``doca_log_backend_create_standard``: INFO and above to stdout, one line per record."""
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="[%(name)s] %(levelname)s: %(message)s")
    return logging.getLogger(name)


def open_doca_device_with_pci(pci_addr: str, func: TaskCheck | None) -> d.Dev:
    """``open_doca_device_with_pci``: the device at *pci_addr* that passes *func* (if given)."""
    for info in d.devinfo_create_list():
        if not info.is_equal_pci_addr(pci_addr):
            continue
        if func is not None and not func(info):
            continue
        return info.open()
    raise DocaNotFound(f"no device with PCI address {pci_addr!r} has the needed capability")


def open_doca_device_with_capabilities(func: TaskCheck) -> d.Dev:
    """``open_doca_device_with_capabilities``: the first device that passes *func* and opens."""
    for info in d.devinfo_create_list():  # doca_devinfo_create_list; the list is freed with its last reference
        if not func(info):
            continue
        try:
            return info.open()
        except d.DocaError:  # a device that cannot be opened: try the next one
            continue
    raise DocaNotFound("Matching device not found")


def open_doca_device_rep_with_pci(dev: d.Dev, rep_filter: d.DevinfoRepFilter, rep_pci_addr: str) -> d.DevRep:
    """``open_doca_device_rep_with_pci``: one of *dev*'s representors, by PCI address."""
    return dev.open_rep_by_pci_addr(rep_pci_addr, rep_filter)


@dataclass
class ProgramCoreObjects:
    """``struct program_core_objects``: what most single-context samples need."""

    dev: d.Dev
    src_mmap: d.Mmap
    dst_mmap: d.Mmap
    buf_inv: d.BufInventory | None
    pe: d.Pe


def create_core_objects(dev: d.Dev, max_bufs: int) -> ProgramCoreObjects:
    """``create_core_objects``: two mmaps with the device added, an inventory, a Pe.

    The memory ranges are set (and the mmaps started) later by each sample."""
    src_mmap = d.Mmap()
    src_mmap.add_dev(dev)
    dst_mmap = d.Mmap()
    dst_mmap.add_dev(dev)
    buf_inv = None
    if max_bufs:
        buf_inv = d.BufInventory(max_bufs, start=False)
        buf_inv.start()
    return ProgramCoreObjects(dev, src_mmap, dst_mmap, buf_inv, d.Pe())


def destroy_core_objects(state: ProgramCoreObjects) -> None:
    """``destroy_core_objects``: the Pe (and any ctx still connected), inventory, mmaps."""
    state.pe.close()
    if state.buf_inv is not None:
        state.buf_inv.close()
    state.src_mmap.close()
    state.dst_mmap.close()


def allocate_buf_list(buf_inv: d.BufInventory, mmap: d.Mmap, addr: int, length: int, num_buf: int,
                      set_data_pos: bool) -> d.Buf:
    """``allocat_doca_buf_list``: *length* bytes at *addr* as a chain of *num_buf* buffers.

    Sources (*set_data_pos*) have their data set to the whole window; destinations are empty."""
    each_len = length // num_buf
    head: d.Buf | None = None
    for i in range(num_buf):
        cur_len = each_len + (length % num_buf if i == num_buf - 1 else 0)
        cur_addr = addr + i * each_len
        buf = buf_inv.buf_get_by_addr(mmap, cur_addr, cur_len)
        if set_data_pos:
            buf.set_data(cur_addr, cur_len)
        if head is None:
            head = buf
        else:
            head.chain_list(buf)
    if head is None:
        raise DocaInvalidValue("num_buf must be at least 1")
    return head


def request_stop(ctx: d.Ctx) -> None:
    """``(void)doca_ctx_stop(ctx)``: ask the ctx to stop, ignoring the result as the samples do.

    A ctx that already stops (a failed task moved it to STOPPING) refuses a second stop."""
    try:
        ctx.stop()
    except d.DocaError:
        pass


def propagate(first: d.ErrorCode, new: d.ErrorCode | int) -> d.ErrorCode:
    """``DOCA_ERROR_PROPAGATE``: keep the first error encountered."""
    return first if first != d.ErrorCode.SUCCESS else d.ErrorCode(new)


def error_of(exc: d.DocaError) -> d.ErrorCode:
    """The ``doca_error_t`` a failed doca_py call stands for."""
    return d.ErrorCode(exc.code)


def run_sample(log: logging.Logger, sample: Callable[[], d.ErrorCode]) -> int:
    """The tail of every sample's ``main``: run it, log the verdict, return the exit status."""
    log.info("Starting the sample")
    try:
        result = sample()
    except d.DocaError as exc:
        log.error("Sample failed: %s", exc)
        result = error_of(exc)
    except OSError as exc:  # a file the sample reads or writes
        log.error("Sample failed: %s", exc)
        result = d.ErrorCode.IO_FAILED
    if result == d.ErrorCode.SUCCESS:
        log.info("Sample finished successfully")
        return 0
    log.error("Sample finished with errors: %s", d.ErrorCode(result).c_name)
    return 1


def positive_int(text: str) -> int:
    """argparse type of the ``-ns``/``-nd`` style parameters (valid values are >= 1)."""
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1")
    return value
