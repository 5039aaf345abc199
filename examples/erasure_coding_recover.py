"""Port of ``samples/doca_erasure_coding/erasure_coding_recover`` (DOCA 3.0) to doca_py.

Encode a file into data and redundancy block files (EC create task), delete data blocks,
and recover them (EC recover task) into a copy of the original::

    # all at once: encode FILE into /tmp/ec, delete data block 0, recover FILE_recovered
    python examples/erasure_coding_recover.py -p 03:00.0 -i FILE -o /tmp/ec -b -t 2 -r 2 -d 0
    # or step by step: encode (input is a file) ...
    python examples/erasure_coding_recover.py -i FILE -o /tmp/ec
    # ... then decode (input is the block directory; output is the recovered file)
    python examples/erasure_coding_recover.py -i /tmp/ec -o FILE_recovered

Block files are ``data_block_<i>`` and ``rdnc_block_<i>``; ``data_info`` holds the file size
and path. Each step follows the C sample: read the blocks → ``ec_core_init`` (device with
the task capability, core objects, EC ctx, capabilities, Pe connection, memory ranges,
buffers, user data, state-changed callback) → ``*_set_conf`` → ``doca_ctx_start`` →
``doca_ec_matrix_create`` (and ``_create_recover``) → ``*_allocate_init`` → submit →
progress until IDLE; the completion callback writes the result files and stops the ctx.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import doca_py as d
from doca_py.errors import DocaInvalidValue, DocaIOFailed

from _common import (SLEEP_IN_SECONDS, ProgramCoreObjects, TaskCheck, allocate_buf_list, create_core_objects,
                     destroy_core_objects, open_doca_device_with_pci, positive_int, request_stop, run_sample,
                     setup_logging)

log = setup_logging("EC_RECOVER")

NUM_EC_TASKS = 8  # EC tasks number
RECOVERED_FILE_NAME = "_recovered"  # recovered file extension (if no file name is given)
DATA_INFO_FILE_NAME = "data_info"  # data information file name: size & name of the original file
DATA_BLOCK_FILE_NAME = "data_block_"  # data block file names (index appended)
RDNC_BLOCK_FILE_NAME = "rdnc_block_"  # redundancy block file names (index appended)
MATRIX_TYPES = {"cauchy": d.EcMatrixType.CAUCHY, "vandermonde": d.EcMatrixType.VANDERMONDE}


@dataclass
class EcSampleObjects:
    """``struct ec_sample_objects``."""

    src_buffer: bytearray
    dst_buffer: bytearray
    core_state: ProgramCoreObjects | None = None
    ec: d.Ec | None = None
    src_doca_buf: d.Buf | None = None
    dst_doca_buf: d.Buf | None = None
    encoding_matrix: d.EcMatrix | None = None
    decoding_matrix: d.EcMatrix | None = None
    missing_indices: list[int] = field(default_factory=list)
    run_pe_progress: bool = False


@dataclass
class TaskData:
    """``struct create_task_data`` / ``struct recover_task_data``: the task's user data."""

    dir_path: str
    block_size: int
    block_count: int  # redundancy blocks created, or missing blocks recovered
    output_file_path: str = ""
    file_size: int = 0
    data_block_count: int = 0
    task_status: d.ErrorCode = d.ErrorCode.SUCCESS
    cb_result: d.ErrorCode = d.ErrorCode.SUCCESS


def ec_cleanup(state: EcSampleObjects) -> None:
    """``ec_cleanup``: buffers, matrices, ctx (stopped), core objects, device."""
    for buf in (state.src_doca_buf, state.dst_doca_buf):
        if buf is not None:
            buf.dec_refcount()
    state.src_doca_buf = state.dst_doca_buf = None
    for matrix in (state.encoding_matrix, state.decoding_matrix):
        if matrix is not None:
            matrix.close()  # doca_ec_matrix_destroy
    if state.ec is not None:
        request_stop(state.ec)
        state.ec.close()
    if state.core_state is not None:
        destroy_core_objects(state.core_state)
        state.core_state.dev.close()


def ec_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
    state: EcSampleObjects = user_data
    if next_state == d.CtxState.IDLE:
        log.info("Erasure Coding context has been stopped")
        state.run_pe_progress = False  # we can stop progressing the PE
    elif next_state == d.CtxState.STARTING:
        log.error("Erasure Coding context entered into starting state. Unexpected transition")
    elif next_state == d.CtxState.RUNNING:
        log.info("Erasure Coding context is running")
    elif next_state == d.CtxState.STOPPING:
        log.info("Erasure Coding context entered into stopping state. Any inflight tasks will be flushed")


def ec_core_init(state: EcSampleObjects, pci_addr: str, is_support_func: TaskCheck, num_src_buf: int,
                 num_dst_buf: int) -> int:
    """``ec_core_init``: everything up to a configured (not yet started) EC ctx; returns the max block size."""
    dev = open_doca_device_with_pci(pci_addr, is_support_func)
    try:
        core = create_core_objects(dev, num_src_buf + num_dst_buf)
    except BaseException:
        dev.close()
        raise
    state.core_state = core
    state.ec = d.Ec(dev)
    max_block_size = d.Ec.cap_get_max_block_size(dev.as_devinfo())
    max_buf_list_len = d.Ec.cap_get_max_buf_list_len(dev.as_devinfo())
    if num_src_buf + num_dst_buf > max_buf_list_len:
        raise DocaInvalidValue(f"Number of doca_buf [{num_src_buf + num_dst_buf}] exceed the limitation "
                               f"[{max_buf_list_len}]")
    core.pe.connect_ctx(state.ec)

    core.dst_mmap.set_memrange(state.dst_buffer)
    core.dst_mmap.start()
    core.src_mmap.set_memrange(state.src_buffer)
    core.src_mmap.start()

    assert core.buf_inv is not None
    src_addr, src_size = core.src_mmap.get_memrange()
    dst_addr, dst_size = core.dst_mmap.get_memrange()
    state.src_doca_buf = allocate_buf_list(core.buf_inv, core.src_mmap, src_addr, src_size, num_src_buf, True)
    state.dst_doca_buf = allocate_buf_list(core.buf_inv, core.dst_mmap, dst_addr, dst_size, num_dst_buf, False)

    state.ec.user_data = state  # doca_ctx_set_user_data
    state.ec.set_state_changed_cb(ec_state_changed_callback)
    return max_block_size


def ec_task_error(task: d.Task, task_data: TaskData) -> None:
    """The error callback both task types share."""
    task_data.task_status = d.ErrorCode.UNEXPECTED
    log.error("EC Task finished unsuccessfully: %s", task.exception())
    ctx = task.get_ctx()
    task.free()
    task_data.cb_result = d.ErrorCode.SUCCESS
    request_stop(ctx)  # stop the ctx once the task is completed


def block_path(dir_path: str, name: str, index: int) -> str:
    return os.path.join(dir_path, f"{name}{index}")


# -- encode ---------------------------------------------------------------------------------------
def ec_create_error_callback(task: d.EcTaskCreate, task_user_data: Any, ctx_user_data: Any) -> None:
    ec_task_error(task, task_user_data)


def ec_create_completed_callback(task: d.EcTaskCreate, task_user_data: Any, ctx_user_data: Any) -> None:
    """Write the redundancy blocks, which the task appended to the destination, to files."""
    task_data: TaskData = task_user_data
    state: EcSampleObjects = ctx_user_data
    task_data.task_status = d.ErrorCode.SUCCESS
    try:
        resp_data = bytes(task.get_rdnc_blocks().data_view())
        for i in range(task_data.block_count):
            Path(block_path(task_data.dir_path, RDNC_BLOCK_FILE_NAME, i)).write_bytes(
                resp_data[i * task_data.block_size:(i + 1) * task_data.block_size])
        log.info("File was encoded successfully and saved in: %s", task_data.dir_path)
        task_data.cb_result = d.ErrorCode.SUCCESS
    except OSError as exc:
        log.error("Unable to write output file: %s", exc)
        task_data.cb_result = d.ErrorCode.IO_FAILED
    task.free()
    assert state.ec is not None
    request_stop(state.ec)  # stop the ctx once the task is completed


def ec_encode(pci_addr: str, file_path: str, matrix_type: d.EcMatrixType, output_dir_path: str,
              data_block_count: int, rdnc_block_count: int, num_src_buf: int, num_dst_buf: int) -> d.ErrorCode:
    """``ec_encode``: the data blocks of *file_path* and their redundancy blocks, as files."""
    try:
        file_data = Path(file_path).read_bytes()
    except OSError as exc:
        raise DocaIOFailed(f"Can't read input file: {exc}") from None
    file_size = len(file_data)
    block_size = -(-file_size // data_block_count)  # rounded up, then to a multiple of 64
    block_size += -block_size % 64
    src_size = block_size * data_block_count
    dst_size = block_size * rdnc_block_count

    state = EcSampleObjects(bytearray(file_data.ljust(src_size, b"\0")), bytearray(dst_size))
    try:
        try:  # a new output folder is made, as a user of the C sample would expect
            Path(output_dir_path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DocaIOFailed(f"Can't create the output folder {output_dir_path}: {exc}") from None
        for i in range(data_block_count):
            Path(block_path(output_dir_path, DATA_BLOCK_FILE_NAME, i)).write_bytes(
                state.src_buffer[i * block_size:(i + 1) * block_size])
        Path(output_dir_path, DATA_INFO_FILE_NAME).write_text(f"{file_size} {file_path}")

        max_block_size = ec_core_init(state, pci_addr, d.Ec.cap_task_create_is_supported, num_src_buf, num_dst_buf)
        assert state.ec is not None and state.core_state is not None
        assert state.src_doca_buf is not None and state.dst_doca_buf is not None
        state.ec.task_create_set_conf(ec_create_completed_callback, ec_create_error_callback, NUM_EC_TASKS)
        state.ec.start()
        state.encoding_matrix = state.ec.matrix_create(matrix_type, data_block_count, rdnc_block_count)
        if block_size > max_block_size:
            raise DocaInvalidValue(f"Block size ({block_size}) exceeds the maximum size supported "
                                   f"({max_block_size}). Try to increase the number of blocks or use a smaller "
                                   f"file as input")

        task_data = TaskData(output_dir_path, block_size, rdnc_block_count)
        task = state.ec.task_create_allocate_init(state.encoding_matrix, state.src_doca_buf, state.dst_doca_buf,
                                                  user_data=task_data)
        task.submit()
        state.run_pe_progress = True
        # Wait for the create task to complete and the ctx to return to IDLE
        while state.run_pe_progress:
            if not state.core_state.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)

        if task_data.task_status != d.ErrorCode.SUCCESS:
            log.error("EC create task failed: %s", task_data.task_status.c_name)
            return task_data.task_status
        if task_data.cb_result == d.ErrorCode.SUCCESS:
            log.info("Success, redundancy blocks were created")
        else:
            log.error("Sample failed: %s", task_data.cb_result.c_name)
        return task_data.cb_result
    finally:
        ec_cleanup(state)


# -- decode ---------------------------------------------------------------------------------------
def ec_recover_error_callback(task: d.EcTaskRecover, task_user_data: Any, ctx_user_data: Any) -> None:
    ec_task_error(task, task_user_data)


def ec_recover_completed_callback(task: d.EcTaskRecover, task_user_data: Any, ctx_user_data: Any) -> None:
    """Write the recovered blocks to their files, then the data blocks, in order, to the output file."""
    task_data: TaskData = task_user_data
    state: EcSampleObjects = ctx_user_data
    task_data.task_status = d.ErrorCode.SUCCESS
    try:
        resp_data = bytes(task.get_recovered_data().data_view())
        for i, index in enumerate(state.missing_indices):
            Path(block_path(task_data.dir_path, DATA_BLOCK_FILE_NAME, index)).write_bytes(
                resp_data[i * task_data.block_size:(i + 1) * task_data.block_size])
        remaining_file_size = task_data.file_size
        with open(task_data.output_file_path, "wb") as out_file:
            for i in range(task_data.data_block_count):
                block = Path(block_path(task_data.dir_path, DATA_BLOCK_FILE_NAME, i)).read_bytes()
                out_file.write(block[:remaining_file_size])
                remaining_file_size -= min(len(block), remaining_file_size)
                if remaining_file_size == 0:
                    break
        log.info("File was decoded successfully and saved in: %s", task_data.output_file_path)
        task_data.cb_result = d.ErrorCode.SUCCESS
    except OSError as exc:
        log.error("Unable to write output file: %s", exc)
        task_data.cb_result = d.ErrorCode.IO_FAILED
    task.free()
    assert state.ec is not None
    request_stop(state.ec)  # stop the ctx once the task is completed


def ec_decode(pci_addr: str, matrix_type: d.EcMatrixType, user_output_file_path: str | None, dir_path: str,
              data_block_count: int, rdnc_block_count: int, num_src_buf: int, num_dst_buf: int) -> d.ErrorCode:
    """``ec_decode``: recover the missing data blocks of *dir_path* and rebuild the file."""
    info = Path(dir_path, DATA_INFO_FILE_NAME).read_text()
    size_text, _, original_path = info.partition(" ")
    file_size = int(size_text)
    if file_size <= 0 or not original_path:
        raise DocaInvalidValue("File data info is not '<size> <path>'")
    output_file_path = user_output_file_path or original_path + RECOVERED_FILE_NAME

    # The first data_block_count blocks found, in index order, are the recover task's input.
    blocks: list[bytes] = []
    missing: list[int] = []
    block_size = 0
    for i in range(data_block_count + rdnc_block_count):
        name, index = (DATA_BLOCK_FILE_NAME, i) if i < data_block_count else (RDNC_BLOCK_FILE_NAME,
                                                                              i - data_block_count)
        try:
            block = Path(block_path(dir_path, name, index)).read_bytes()
        except OSError:
            missing.append(i)
            continue
        if not block_size:
            block_size = len(block)
            if block_size % 64:
                raise DocaInvalidValue("Block size is not 64 byte aligned")
        if len(block) != block_size:
            raise DocaInvalidValue("Blocks are not same size")
        log.info("Copy: %s", block_path(dir_path, name, index))
        blocks.append(block)
        if len(blocks) == data_block_count:
            break
    if len(blocks) < data_block_count:
        raise DocaInvalidValue("Not enough data for recover")
    if not missing:
        raise DocaInvalidValue("Nothing to decode, all original data block are in place")

    state = EcSampleObjects(bytearray(b"".join(blocks)), bytearray(block_size * len(missing)))
    state.missing_indices = missing
    try:
        max_block_size = ec_core_init(state, pci_addr, d.Ec.cap_task_recover_is_supported, num_src_buf,
                                      num_dst_buf)
        assert state.ec is not None and state.core_state is not None
        assert state.src_doca_buf is not None and state.dst_doca_buf is not None
        if block_size > max_block_size:
            raise DocaInvalidValue(f"Block size ({block_size}) exceeds the maximum size supported "
                                   f"({max_block_size}). Try to increase the number of blocks or use a smaller "
                                   f"file as input")
        state.ec.task_recover_set_conf(ec_recover_completed_callback, ec_recover_error_callback, NUM_EC_TASKS)
        state.ec.start()
        state.encoding_matrix = state.ec.matrix_create(matrix_type, data_block_count, rdnc_block_count)
        state.decoding_matrix = state.ec.matrix_create_recover(state.encoding_matrix, missing)

        task_data = TaskData(dir_path, block_size, len(missing), output_file_path, file_size, data_block_count)
        task = state.ec.task_recover_allocate_init(state.decoding_matrix, state.src_doca_buf, state.dst_doca_buf,
                                                   user_data=task_data)
        task.submit()
        state.run_pe_progress = True
        # Wait for the recover task to complete and the ctx to return to IDLE
        while state.run_pe_progress:
            if not state.core_state.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)

        if task_data.task_status != d.ErrorCode.SUCCESS:
            log.error("EC recover task failed: %s", task_data.task_status.c_name)
            return task_data.task_status
        if task_data.cb_result == d.ErrorCode.SUCCESS:
            log.info("Success, data was recovered")
        else:
            log.error("Sample failed: %s", task_data.cb_result.c_name)
        return task_data.cb_result
    finally:
        ec_cleanup(state)


def ec_delete_data(output_path: str, missing_indices: list[int]) -> None:
    """``ec_delete_data``: remove the data blocks that the recover step will rebuild."""
    for index in missing_indices:
        path = block_path(output_path, DATA_BLOCK_FILE_NAME, index)
        try:
            os.remove(path)
        except OSError as exc:
            raise DocaIOFailed(f"Failed to delete {path}: {exc}") from None
        log.info("Deleted successfully: %s", path)


def ec_recover(pci_addr: str, input_path: str, output_path: str, do_both: bool, matrix_type: d.EcMatrixType,
               data_block_count: int, rdnc_block_count: int, missing_indices: list[int], num_src_buf: int,
               num_dst_buf: int) -> d.ErrorCode:
    """``ec_recover``: encode (input is a file), delete and decode (``--both``), or decode (input is a directory)."""
    if not os.path.exists(input_path):
        raise DocaIOFailed(f"Can't read input file stat: {input_path}")
    input_path_is_file = os.path.isfile(input_path)
    dir_path, output_file_path = output_path, None
    if not do_both and not input_path_is_file:  # only decode mode
        dir_path, output_file_path = input_path, output_path

    result = d.ErrorCode.SUCCESS
    if do_both or input_path_is_file:
        result = ec_encode(pci_addr, input_path, matrix_type, output_path, data_block_count, rdnc_block_count,
                           num_src_buf, num_dst_buf)
    if result != d.ErrorCode.SUCCESS:
        return result
    if do_both:
        ec_delete_data(output_path, missing_indices)
    if do_both or not input_path_is_file:
        result = ec_decode(pci_addr, matrix_type, output_file_path, dir_path, data_block_count, rdnc_block_count,
                           num_src_buf, num_dst_buf)
    return result


def _indices(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError("indices are comma separated integers, i.e. 0,3,4") from None
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("Delete block indices are negative")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="DOCA erasure coding recover (port of samples/doca_erasure_coding/erasure_coding_recover)")
    parser.add_argument("-p", "--pci-addr", default="03:00.0", help="DOCA device PCI device address")
    parser.add_argument("-i", "--input", default=sys.argv[0], help="Input file/folder to ec - default: self")
    parser.add_argument("-o", "--output", default="/tmp", help="Output file/folder to ec - default: /tmp")
    parser.add_argument("-b", "--both", action="store_true", help="Do both (encode & decode) - default: false")
    parser.add_argument("-x", "--matrix", choices=sorted(MATRIX_TYPES), default="cauchy",
                        type=str.lower, help="Matrix - {cauchy, vandermonde} - default: cauchy")
    parser.add_argument("-t", "--data", type=positive_int, default=2, help="Data block count - default: 2")
    parser.add_argument("-r", "--rdnc", type=positive_int, default=2, help="Redundancy block count - default: 2")
    parser.add_argument("-d", "--delete-index", type=_indices, default=[0],
                        help="Indices of data blocks to delete comma separated i.e. 0,3,4 - default: 0")
    parser.add_argument("-ns", "--num-src-buf", type=positive_int, default=1,
                        help="number of doca_buf for source buffer")
    parser.add_argument("-nd", "--num-dst-buf", type=positive_int, default=1,
                        help="number of doca_buf for destination buffer")
    args = parser.parse_args(argv)
    return run_sample(log, lambda: ec_recover(args.pci_addr, args.input, args.output, args.both,
                                              MATRIX_TYPES[args.matrix], args.data, args.rdnc, args.delete_index,
                                              args.num_src_buf, args.num_dst_buf))


if __name__ == "__main__":
    sys.exit(main())
