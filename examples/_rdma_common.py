"""``samples/doca_rdma/rdma_common.c`` ported to doca_py: what every RDMA sample shares.

Configuration and command line (``register_rdma_common_params``), resource allocation
and teardown (``allocate_rdma_resources``, ``destroy_rdma_resources``) and the
out-of-band exchange of descriptors through files (``write_file``, ``read_file``).

Where the C samples ask the user to copy a descriptor file and press enter, the ports
wait until the file named on the command line exists (a file written atomically by
the peer), so both sides can run on one machine unattended. The remaining "press enter
once the peer has finished" steps (the responders of read and write) read a line from
stdin, as the C samples do. The RDMA-CM variants (``--use-rdma-cm``) are not ported.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import doca_py as d
from doca_py import aio
from doca_py.errors import DocaConnectionAborted, DocaIOFailed, DocaNotFound
from doca_py.rdma import Rdma, RdmaConnection, RdmaTransportType

from _common import TaskCheck

MEM_RANGE_LEN = 4096  # DOCA mmap memory range length
INVENTORY_NUM_INITIAL_ELEMENTS = 16  # number of DOCA inventory initial elements
MAX_USER_ARG_SIZE = 256  # maximum size of a user input argument
DEFAULT_STRING = "Hi DOCA RDMA!"
DEFAULT_LOCAL_CONNECTION_DESC_PATH = "/tmp/local_connection_desc_path.txt"
DEFAULT_REMOTE_CONNECTION_DESC_PATH = "/tmp/remote_connection_desc_path.txt"
DEFAULT_REMOTE_RESOURCE_CONNECTION_DESC_PATH = "/tmp/remote_resource_desc_path.txt"
NUM_RDMA_TASKS = 1
MAX_NUM_CONNECTIONS = 8
#: How often a descriptor file the peer has not written yet is looked for.
FILE_POLL_SECONDS = 0.01


@dataclass
class RdmaConfig:
    """``struct rdma_config`` (out-of-band fields only)."""

    device_name: str = ""
    send_string: str = DEFAULT_STRING
    read_string: str = DEFAULT_STRING
    write_string: str = DEFAULT_STRING
    local_connection_desc_path: str = DEFAULT_LOCAL_CONNECTION_DESC_PATH
    remote_connection_desc_path: str = DEFAULT_REMOTE_CONNECTION_DESC_PATH
    remote_resource_desc_path: str = DEFAULT_REMOTE_RESOURCE_CONNECTION_DESC_PATH
    gid_index: int | None = None
    num_connections: int = 1
    transport_type: RdmaTransportType = RdmaTransportType.RC


@dataclass
class RdmaResources:
    """``struct rdma_resources`` (out-of-band fields only)."""

    cfg: RdmaConfig
    doca_device: d.Dev
    mmap: d.Mmap
    mmap_memrange: memoryview  # the local memory, MEM_RANGE_LEN bytes
    pe: d.Pe
    rdma: Rdma
    log: logging.Logger
    remote_mmap: d.Mmap | None = None
    buf_inventory: d.BufInventory | None = None
    src_buf: d.Buf | None = None
    dst_buf: d.Buf | None = None
    mmap_descriptor: bytes = b""
    rdma_conn_descriptor: bytes = b""
    remote_rdma_conn_descriptor: bytes = b""
    remote_mmap_descriptor: bytes = b""
    connection: RdmaConnection | None = None  # connections[0]
    first_encountered_error: d.ErrorCode = d.ErrorCode.SUCCESS
    run_pe_progress: bool = True
    num_remaining_tasks: int = 0
    connection_established: bool = False  # the asyncio samples wait for it
    connection_error: str = ""


# -- command line ---------------------------------------------------------------------------------
def _bounded_text(text: str) -> str:
    if len(text.encode()) >= MAX_USER_ARG_SIZE:
        raise argparse.ArgumentTypeError(f"exceeds the buffer size of {MAX_USER_ARG_SIZE - 1} bytes")
    return text


def _transport(text: str) -> RdmaTransportType:
    try:
        return RdmaTransportType[text.upper()]
    except KeyError:
        raise argparse.ArgumentTypeError("accepted transport types are RC, rc, DC, dc") from None


def _num_connections(text: str) -> int:
    value = int(text)
    if not 0 < value <= MAX_NUM_CONNECTIONS:
        raise argparse.ArgumentTypeError(f"max number of connections must be <= [{MAX_NUM_CONNECTIONS}]")
    return value


def register_rdma_common_params(parser: argparse.ArgumentParser) -> None:
    """``register_rdma_common_params`` (without the RDMA-CM flags)."""
    parser.add_argument("-d", "--device", dest="device_name", default="", metavar="<IB device name>",
                        help="IB device name (default: the first device with the needed capability)")
    parser.add_argument("-ld", "--local-descriptor-path", dest="local_connection_desc_path",
                        default=DEFAULT_LOCAL_CONNECTION_DESC_PATH,
                        help="Local descriptor file path that includes the local connection descriptor, "
                             "to be copied to the remote program")
    parser.add_argument("-re", "--remote-descriptor-path", dest="remote_connection_desc_path",
                        default=DEFAULT_REMOTE_CONNECTION_DESC_PATH,
                        help="Remote descriptor file path that includes the remote connection descriptor, "
                             "to be copied from the remote program")
    parser.add_argument("-m", "--remote-resource-descriptor-path", dest="remote_resource_desc_path",
                        default=DEFAULT_REMOTE_RESOURCE_CONNECTION_DESC_PATH,
                        help="Remote descriptor file path that includes the remote mmap connection descriptor")
    parser.add_argument("-g", "--gid-index", type=int, default=None, help="GID index for DOCA RDMA (optional)")
    parser.add_argument("-tt", "--transport-type", type=_transport, default=RdmaTransportType.RC,
                        help="transport_type for DOCA RDMA (RC or DC, optional)")


def register_rdma_send_string_param(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-s", "--send-string", type=_bounded_text, default=DEFAULT_STRING,
                        help=f'String to send (optional). If not provided then "{DEFAULT_STRING}" will be chosen')


def register_rdma_read_string_param(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-r", "--read-string", type=_bounded_text, default=DEFAULT_STRING,
                        help=f'String to read (optional). If not provided then "{DEFAULT_STRING}" will be chosen')


def register_rdma_write_string_param(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-w", "--write-string", type=_bounded_text, default=DEFAULT_STRING,
                        help=f'String to write (optional). If not provided then "{DEFAULT_STRING}" will be chosen')


def config_from_args(args: argparse.Namespace) -> RdmaConfig:
    """``set_default_config_value`` followed by the argp callbacks."""
    cfg = RdmaConfig()
    for name in vars(cfg):
        if hasattr(args, name):
            setattr(cfg, name, getattr(args, name))
    return cfg


# -- resources ------------------------------------------------------------------------------------
def open_doca_device(device_name: str, func: TaskCheck | None) -> d.Dev:
    """``open_doca_device``: the IB device *device_name* (any, if empty) that passes *func*."""
    for info in d.devinfo_create_list():
        if device_name and info.get_ibdev_name() != device_name:
            continue
        if func is not None and not func(info):
            continue
        return info.open()
    raise DocaNotFound(f"couldn't get DOCA device {device_name!r}")


def create_local_mmap(mmap_permissions: d.AccessFlag, length: int, dev: d.Dev) -> tuple[d.Mmap, memoryview]:
    """``create_local_mmap`` over zeroed memory of *length* bytes (``calloc`` in C).

    ``Mmap.allocate`` memory is what a peer process can reach through an export."""
    mmap = d.Mmap()
    try:
        mmap.set_permissions(mmap_permissions)
        memrange = mmap.allocate(length)
        mmap.add_dev(dev)
        mmap.start()
    except BaseException:
        mmap.close()
        raise
    return mmap, memrange


def allocate_rdma_resources(cfg: RdmaConfig, mmap_permissions: d.AccessFlag, rdma_permissions: d.AccessFlag,
                            func: TaskCheck | None, log: logging.Logger) -> RdmaResources:
    """``allocate_rdma_resources``: device, local mmap, Pe, configured RDMA ctx connected to the Pe."""
    dev = open_doca_device(cfg.device_name, func)
    mmap: d.Mmap | None = None
    pe: d.Pe | None = None
    try:
        mmap, memrange = create_local_mmap(mmap_permissions, MEM_RANGE_LEN, dev)
        pe = d.Pe()
        rdma = Rdma(dev)
        rdma.set_permissions(rdma_permissions)
        if cfg.gid_index is not None:
            rdma.set_gid_index(cfg.gid_index)
        rdma.set_max_num_connections(cfg.num_connections)
        rdma.set_transport_type(cfg.transport_type)
        pe.connect_ctx(rdma)
        return RdmaResources(cfg, dev, mmap, memrange, pe, rdma, log)
    except BaseException:
        if pe is not None:
            pe.close()
        if mmap is not None:
            mmap.close()
        dev.close()
        raise


def destroy_rdma_resources(resources: RdmaResources, cfg: RdmaConfig) -> None:
    """``destroy_rdma_resources``: remote mmap, RDMA ctx, Pe, local mmap, device, descriptor files."""
    if resources.remote_mmap is not None:
        resources.remote_mmap.close()
    resources.rdma.close()
    resources.pe.close()
    resources.mmap.stop()
    resources.mmap_memrange.release()  # the memory goes with the mmap
    resources.mmap.close()
    resources.doca_device.close()
    clean_up_files(cfg)


# -- descriptor files -----------------------------------------------------------------------------
def write_file(file_path: str, data: bytes) -> None:
    """``write_file``: refuse an existing file; the peer sees the file complete or not at all."""
    path = Path(file_path)
    if path.exists():
        raise DocaIOFailed(f"File {file_path} already exists. Please delete it prior to running the sample")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def wait_for_file(file_path: str, log: logging.Logger) -> None:
    """Stands for "copy the file from the peer, then press enter": wait until it exists."""
    path = Path(file_path)
    if not path.exists():
        log.info("Waiting for %s from the remote side", file_path)
    while not path.exists():
        time.sleep(FILE_POLL_SECONDS)


def read_file(file_path: str) -> bytes:
    """``read_file``."""
    try:
        return Path(file_path).read_bytes()
    except OSError as exc:
        raise DocaIOFailed(f"Failed to open the file {file_path} for reading: {exc}") from None


def delete_file(file_path: str) -> None:
    """``delete_file``: remove it if it exists."""
    try:
        os.unlink(file_path)
    except FileNotFoundError:
        pass


def clean_up_files(cfg: RdmaConfig) -> None:
    """``clean_up_files``: both sides delete the three descriptor files at the end."""
    delete_file(cfg.local_connection_desc_path)
    delete_file(cfg.remote_connection_desc_path)
    delete_file(cfg.remote_resource_desc_path)


def wait_for_enter() -> None:
    """``wait_for_enter``: block until a line (or end of file) arrives on stdin."""
    sys.stdin.readline()


# -- strings in the registered memory -------------------------------------------------------------
def put_string(mem: memoryview, text: str, size: int) -> None:
    """``strncpy(mem, text, size)``: the NUL-terminated text, NUL-padded to *size* bytes."""
    raw = text.encode()[:size]
    mem[:size] = raw + bytes(size - len(raw))


def get_string(data: bytes, max_size: int) -> str | None:
    """The NUL-terminated string at the start of *data*; ``None`` if none within *max_size* bytes."""
    end = data.find(b"\0", 0, max_size)
    if end < 0:
        return None
    return data[:end].decode(errors="replace")


def propagate_error(resources: RdmaResources, result: d.ErrorCode | int) -> None:
    """``DOCA_ERROR_PROPAGATE(resources->first_encountered_error, result)``."""
    if resources.first_encountered_error == d.ErrorCode.SUCCESS:
        resources.first_encountered_error = d.ErrorCode(result)


def log_state(resources: RdmaResources, next_state: d.CtxState) -> None:
    """The logging part of every sample's state-changed callback."""
    log = resources.log
    if next_state == d.CtxState.STARTING:
        log.info("RDMA context entered starting state")
    elif next_state == d.CtxState.RUNNING:
        log.info("RDMA context is running")
    elif next_state == d.CtxState.STOPPING:
        log.info("RDMA context entered into stopping state. Any inflight tasks will be flushed")
    elif next_state == d.CtxState.IDLE:
        log.info("RDMA context has been stopped")


# -- asyncio (doca_py.aio): the aio_rdma_* samples ----------------------------------------------
def rdma_connection_established_callback(conn: RdmaConnection, conn_user_data: object, ctx_user_data: object) -> None:
    resources: RdmaResources = ctx_user_data  # type: ignore[assignment]
    resources.log.info("RDMA connection is established")
    resources.connection_established = True


def rdma_connection_failure_callback(conn: RdmaConnection, conn_user_data: object, ctx_user_data: object) -> None:
    resources: RdmaResources = ctx_user_data  # type: ignore[assignment]
    resources.connection_error = "the RDMA connection failed"


def rdma_connection_disconnect_callback(conn: RdmaConnection, conn_user_data: object,
                                        ctx_user_data: object) -> None:
    resources: RdmaResources = ctx_user_data  # type: ignore[assignment]
    if not resources.connection_established:
        resources.connection_error = "the peer disconnected before the connection was established"


async def aio_wait_for_file(file_path: str, log: logging.Logger) -> None:
    """:func:`wait_for_file` without blocking the event loop (which progresses the PE meanwhile)."""
    path = Path(file_path)
    if not path.exists():
        log.info("Waiting for %s from the remote side", file_path)
    while not path.exists():
        await asyncio.sleep(FILE_POLL_SECONDS)


async def aio_export_and_connect(resources: RdmaResources, runner: aio.AttachedPe, peer: str,
                                 timeout: float) -> None:
    """``doca_rdma_export`` → descriptor exchange → ``doca_rdma_connect``, then wait until the
    connection is established (DOCA 3.x: RUNNING does not mean connected)."""
    cfg = resources.cfg
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
    resources.log.info("You can now copy %s to the %s", cfg.local_connection_desc_path, peer)
    resources.log.info("Please copy %s from the %s", cfg.remote_connection_desc_path, peer)
    await aio_wait_for_file(cfg.remote_connection_desc_path, resources.log)
    resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)
    await runner.until(lambda: resources.connection_established or bool(resources.connection_error), timeout)
    if resources.connection_error:
        raise DocaConnectionAborted(resources.connection_error)
