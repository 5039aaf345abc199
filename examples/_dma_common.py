"""What the DMA samples share through ``samples/doca_dma/dma_common.c``, ported to doca_py.

``struct dma_resources``, the state-changed callback, ``allocate_dma_resources`` (device with
the memcpy capability, core objects, DMA ctx) and ``destroy_dma_resources``. Each sample sets
its own callbacks and task configuration, as the C samples do.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

import doca_py as d
from doca_py.errors import DocaInvalidValue
from _common import (ProgramCoreObjects, create_core_objects, destroy_core_objects, open_doca_device_with_pci,
                     positive_int, setup_logging)
from _common import request_stop

log = setup_logging("DMA_COMMON")

NUM_DMA_TASKS = 1  # dma_common.h


@dataclass
class DmaResources:
    """``struct dma_resources``."""

    state: ProgramCoreObjects
    dma_ctx: d.Dma
    num_remaining_tasks: int = 0
    run_pe_progress: bool = False


def dma_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
    resources: DmaResources = user_data
    if next_state == d.CtxState.IDLE:
        log.info("DMA context has been stopped")
        resources.run_pe_progress = False  # we can stop progressing the PE
    elif next_state == d.CtxState.STARTING:
        log.error("DMA context entered into starting state. Unexpected transition")
    elif next_state == d.CtxState.RUNNING:
        log.info("DMA context is running")
    elif next_state == d.CtxState.STOPPING:
        log.info("DMA context entered into stopping state. Any inflight tasks will be flushed")


def allocate_dma_resources(pci_addr: str, num_src_buf: int, num_dst_buf: int) -> DmaResources:
    """``allocate_dma_resources``: device, core objects and DMA ctx (``doca_ctx_set_user_data``)."""
    dev = open_doca_device_with_pci(pci_addr, d.Dma.cap_task_memcpy_is_supported)
    try:
        # The C sample compares num_src_buf + num_dst_buf with the cap; the cap bounds each
        # task buffer list, so each list is checked against it.
        max_buf_list_len = d.Dma.cap_task_memcpy_get_max_buf_list_len(dev.as_devinfo())
        if max(num_src_buf, num_dst_buf) > max_buf_list_len:
            raise DocaInvalidValue(f"number of doca_buf exceeds the limitation [{max_buf_list_len}]")
        state = create_core_objects(dev, num_src_buf + num_dst_buf)
        dma = d.Dma(dev)
        resources = DmaResources(state, dma)
        dma.user_data = resources  # doca_ctx_set_user_data
        return resources
    except BaseException:
        dev.close()
        raise


def destroy_dma_resources(resources: DmaResources) -> None:
    """``destroy_dma_resources``: DMA ctx, core objects, device."""
    resources.dma_ctx.close()
    destroy_core_objects(resources.state)
    resources.state.dev.close()


def register_memory_ranges(state: ProgramCoreObjects, dst_buffer: bytearray, src_buffer: bytearray) -> None:
    """``register_memory_range_and_start_mmap``, destination then source; clears the destination."""
    state.dst_mmap.set_memrange(dst_buffer)
    state.dst_mmap.start()
    state.src_mmap.set_memrange(src_buffer)
    state.src_mmap.start()
    dst_buffer[:] = bytes(len(dst_buffer))  # clear the destination memory


def report_copy(result: d.ErrorCode, dst_buffer: bytearray) -> None:
    """The sample's verdict: the destination's text, or the task's error."""
    if result == d.ErrorCode.SUCCESS:
        log.info("Success, memory copied and verified as correct")
        copied = bytes(dst_buffer).rstrip(b"\0").decode(errors="replace")
        log.info('Destination buffer holds: "%s"', copied)
    else:
        log.error("DMA memcpy task failed: %s", result.c_name)


def parse_dma_local_copy_args(description: str, argv: list[str] | None) -> tuple[argparse.Namespace, bytearray,
                                                                                 bytearray]:
    """The local copy's command line (``register_dma_params``); the source (the text and its
    NUL, as the C main copies it) and the destination buffer, of equal size."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-p", "--pci-addr", default="03:00.0", help="DOCA DMA device PCI address")
    parser.add_argument("-t", "--text", default="This is a sample piece of text", help="Text to DMA copy")
    parser.add_argument("-ns", "--num-src-buf", type=positive_int, default=1,
                        help="number of doca_buf for source buffer")
    parser.add_argument("-nd", "--num-dst-buf", type=positive_int, default=1,
                        help="number of doca_buf for destination buffer")
    args = parser.parse_args(argv)
    src_buffer = bytearray(args.text.encode() + b"\0")  # strlen(text) + 1
    return args, src_buffer, bytearray(len(src_buffer))


# -- the two-sided copy (dma_copy_host / dma_copy_dpu): the rest of 3.3.0's dma_common.c ---------------
MAX_USER_ARG_SIZE = 256  # maximum size of user input argument
MAX_ARG_SIZE = MAX_USER_ARG_SIZE + 1  # maximum size of input argument
MAX_USER_TXT_SIZE = 4096  # maximum size of user input text
MAX_TXT_SIZE = MAX_USER_TXT_SIZE + 1  # maximum size of input text
DOCA_DEVINFO_PCI_ADDR_SIZE = 13  # "XXXX:XX:XX.X" and its NUL


def dma_task_is_supported(devinfo: d.DevInfo) -> bool:
    """``dma_task_is_supported``: the device can run DMA memcpy tasks."""
    return d.Dma.cap_task_memcpy_is_supported(devinfo)


def _pci_address(addr: str) -> str:
    """``pci_callback``."""
    if len(addr.encode()) >= DOCA_DEVINFO_PCI_ADDR_SIZE:
        raise argparse.ArgumentTypeError(
            f"Entered device PCI address exceeding the maximum size of {DOCA_DEVINFO_PCI_ADDR_SIZE - 1}")
    return addr


def _text(txt: str) -> str:
    """``text_callback``."""
    if len(txt.encode()) >= MAX_TXT_SIZE:
        raise argparse.ArgumentTypeError(f"Entered text exceeded buffer size of: {MAX_USER_TXT_SIZE}")
    return txt


def _path_callback(what: str, dpu: bool) -> type[argparse.Action]:
    """``descriptor_path_callback`` / ``buf_info_path_callback``: bounded; the DPU side reads the file, so
    it must exist and be readable already (``access(path, F_OK | R_OK)``). An action, not a type: like an
    argp callback it checks given values only, not the default."""

    class PathCallback(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            path = str(values)
            if len(path.encode()) >= MAX_ARG_SIZE:
                parser.error(f"argument {option_string}: Entered path exceeded buffer size: {MAX_USER_ARG_SIZE}")
            if dpu and not os.access(path, os.F_OK | os.R_OK):
                parser.error(f"argument {option_string}: Failed to find file path pointed by {what}: {path}")
            setattr(namespace, self.dest, path)

    return PathCallback


def register_dma_params(parser: argparse.ArgumentParser, is_remote: bool, dpu: bool, pci_address: str,
                        cpy_txt: str, export_desc_path: str, buf_info_path: str) -> None:
    """``register_dma_params(is_remote)`` as built for the DPU (*dpu*: ``-ns``/``-nd`` and the files'
    existence check) or the host, with the defaults each sample's ``main`` sets."""
    parser.add_argument("-p", "--pci-addr", type=_pci_address, default=pci_address,
                        help="DOCA DMA device PCI address")
    parser.add_argument("-t", "--text", type=_text, default=cpy_txt,
                        help="Text to DMA copy from the Host to the DPU (relevant only on the Host side)")
    if is_remote:
        parser.add_argument("-d", "--descriptor-path", action=_path_callback("export descriptor", dpu),
                            default=export_desc_path,
                            help="Exported descriptor file path to save (Host) or to read from (DPU)")
        parser.add_argument("-b", "--buffer-path", action=_path_callback("buffer information", dpu),
                            default=buf_info_path,
                            help="Buffer information file path to save (Host) or to read from (DPU)")
    if dpu:
        parser.add_argument("-ns", "--num-src-buf", type=positive_int, default=1,
                            help="number of doca_buf for source buffer")
        parser.add_argument("-nd", "--num-dst-buf", type=positive_int, default=1,
                            help="number of doca_buf for destination buffer")


def dma_memcpy_completed_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    """``dma_memcpy_completed_callback``: record success (the task's user data is a list the sample reads),
    free the task, stop the ctx once every task is done."""
    resources: DmaResources = ctx_user_data
    task_user_data.append(d.ErrorCode.SUCCESS)
    log.info("DMA task was completed successfully")
    task.free()
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.dma_ctx)


def dma_memcpy_error_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    """``dma_memcpy_error_callback``: record the task's status, free it, stop the ctx once every task is done."""
    resources: DmaResources = ctx_user_data
    status = task.get_status()
    task_user_data.append(status)
    log.error("DMA task failed: %s", status.c_name)
    task.free()
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:
        request_stop(resources.dma_ctx)  # a failed task already moved the ctx to STOPPING


def configure_dma_ctx(resources: DmaResources) -> None:
    """The part of 3.3.0's ``allocate_dma_resources`` after ``doca_dma_create`` that
    ``allocate_dma_resources`` above leaves to its caller: ``doca_ctx_set_state_changed_cb`` and
    ``doca_dma_task_memcpy_set_conf`` with the callbacks of ``dma_common.c``."""
    resources.dma_ctx.set_state_changed_cb(dma_state_changed_callback)
    resources.dma_ctx.task_memcpy_set_conf(dma_memcpy_completed_callback, dma_memcpy_error_callback, NUM_DMA_TASKS)


@dataclass
class DmaHostResources:
    """The two fields of ``struct program_core_objects`` the host side uses."""

    dev: d.Dev
    src_mmap: d.Mmap


def allocate_dma_host_resources(pci_addr: str) -> DmaHostResources:
    """``allocate_dma_host_resources``: the device (with the memcpy capability) and an mmap it is added to."""
    dev = open_doca_device_with_pci(pci_addr, dma_task_is_supported)
    try:
        src_mmap = d.Mmap()
        try:
            src_mmap.add_dev(dev)
        except BaseException:
            src_mmap.close()
            raise
    except BaseException:
        dev.close()
        raise
    return DmaHostResources(dev, src_mmap)


def destroy_dma_host_resources(state: DmaHostResources) -> None:
    """``destroy_dma_host_resources``: ``doca_mmap_destroy`` (it stops a started map), ``doca_dev_close``."""
    try:
        state.src_mmap.close()
    finally:
        state.dev.close()
