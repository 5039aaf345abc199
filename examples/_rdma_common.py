"""``samples/doca_rdma/rdma_common.c`` ported to doca_py: what every RDMA sample shares.

Configuration and command line (``register_rdma_common_params``), resource allocation
and teardown (``allocate_rdma_resources``, ``destroy_rdma_resources``), the
out-of-band exchange of descriptors through files (``write_file``, ``read_file``) or, with
``--use-rdma-cm``, the RDMA-CM connection and the descriptor negotiation over it
(``rdma_cm_connect``, ``config_rdma_cm_callback_and_negotiation_task``), and the
flow every callback-driven sample shares: ``export_and_connect`` (export → descriptor
exchange → connect), the task bookkeeping (``submit_task``, ``task_finished``,
``task_error_callback``), the state-changed callback (``state_change_callback``) and
``run_rdma_ctx`` (start, progress until IDLE). Each sample keeps its task callbacks, the
building of its task and what it does once RUNNING.

Where the C samples ask the user to copy a descriptor file and press enter, the ports
wait until the file named on the command line exists (a file written atomically by
the peer), so both sides can run on one machine unattended. The remaining "press enter
once the peer has finished" steps (the responders of read and write) read a line from
stdin, as the C samples do; with RDMA-CM the responder sends its descriptor without
waiting for enter, since a send waits for the peer's posted receive (RNR retry).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from pathlib import Path

import doca_py as d
from doca_py import aio
from doca_py.errors import DocaConnectionAborted, DocaIOFailed, DocaNotFound
from doca_py.rdma import Rdma, RdmaAddr, RdmaAddrType, RdmaConnection, RdmaTaskReceive, RdmaTaskSend, RdmaTransportType

from _common import SLEEP_IN_SECONDS, TaskCheck, request_stop

MEM_RANGE_LEN = 4096  # DOCA mmap memory range length
INVENTORY_NUM_INITIAL_ELEMENTS = 16  # number of DOCA inventory initial elements
MAX_USER_ARG_SIZE = 256  # maximum size of a user input argument
DEFAULT_STRING = "Hi DOCA RDMA!"
DEFAULT_LOCAL_CONNECTION_DESC_PATH = "/tmp/local_connection_desc_path.txt"
DEFAULT_REMOTE_CONNECTION_DESC_PATH = "/tmp/remote_connection_desc_path.txt"
DEFAULT_REMOTE_RESOURCE_CONNECTION_DESC_PATH = "/tmp/remote_resource_desc_path.txt"
NUM_RDMA_TASKS = 1
NUM_NEGOTIATION_RDMA_TASKS = 1
MAX_NUM_CONNECTIONS = 8
DEFAULT_RDMA_CM_PORT = 13579
SERVER_NAME = "Server"
CLIENT_NAME = "Client"
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
    use_rdma_cm: bool = False
    cm_port: int = DEFAULT_RDMA_CM_PORT
    cm_addr: str = ""  # the server's address: set on the client side only
    cm_addr_type: RdmaAddrType = RdmaAddrType.IPv4


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
    # RDMA-CM (--use-rdma-cm): the role, the connections and the negotiation of the peer's descriptor
    is_client: bool = False
    self_name: str = SERVER_NAME
    cm_addr: RdmaAddr | None = None
    connections: list[RdmaConnection] = field(default_factory=list)
    require_remote_mmap: bool = False  # exchange a descriptor once connected (else run task_fn at once)
    is_requester: bool = False  # receives the descriptor (the responder sends mmap_descriptor)
    task_fn: Callable[["RdmaResources"], None] | None = None  # what runs after the negotiation
    cm_passive: bool = False  # at the end, wait for the peer's disconnection instead of disconnecting
    stop_on_disconnect: bool = False
    cm_mmaps: list[d.Mmap] = field(default_factory=list)  # the negotiation's own memory


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


def _addr_type(text: str) -> RdmaAddrType:
    kinds = {"ip4": RdmaAddrType.IPv4, "ipv4": RdmaAddrType.IPv4, "ip6": RdmaAddrType.IPv6,
             "ipv6": RdmaAddrType.IPv6, "gid": RdmaAddrType.GID}
    try:
        return kinds[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError("the accepted server address types are ip4, ipv4, IPv4, ip6, ipv6, IPv6, "
                                         "gid, GID") from None


def _cm_port(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("server listening port number for DOCA RDMA-CM must be non-negative")
    return value


def register_rdma_cm_params(parser: argparse.ArgumentParser) -> None:
    """``register_rdma_cm_params``: the RDMA-CM flags (only the samples that support them register them)."""
    parser.add_argument("-cm", "--use-rdma-cm", dest="use_rdma_cm", action="store_true",
                        help="Whether to use rdma-cm or oob to setup connection")
    parser.add_argument("-lp", "--listen-port", dest="cm_port", type=_cm_port, default=DEFAULT_RDMA_CM_PORT,
                        metavar="<listen-port-num>",
                        help="server listen port number (0: any free port, which the server logs; emulated)")
    parser.add_argument("-sa", "--server-addr", dest="cm_addr", default="", metavar="<server address>",
                        help="Rdma cm server device address (given: this side is the client)")
    parser.add_argument("-sat", "--server-addr-type", dest="cm_addr_type", type=_addr_type,
                        default=RdmaAddrType.IPv4, metavar="<server address type>",
                        help="Rdma cm server device address type: IPv4, IPv6 or GID")


def register_rdma_common_params(parser: argparse.ArgumentParser, *, cm: bool = False) -> None:
    """``register_rdma_common_params``; the RDMA-CM flags with *cm* (a sample that supports them)."""
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
    if cm:
        register_rdma_cm_params(parser)


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
    if (cfg.num_connections > 1 or cfg.use_rdma_cm) and cfg.transport_type == RdmaTransportType.DC:
        raise d.errors.DocaInvalidValue("DOCA_RDMA_TRANSPORT_TYPE_DC is only supported for out-of-band single "
                                        "connection case for now")
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
    for mm in resources.cm_mmaps:  # destroy_rdma_cm_resources
        mm.close()
    if resources.cm_addr is not None:
        resources.cm_addr.close()
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


# -- the flow the callback-driven samples share -------------------------------------------------
def write_read_connection(resources: RdmaResources, peer: str, *, passive: bool, mmap: bool = False) -> None:
    """Every sample's ``write_read_connection``.

    The *passive* side (receiver, responder) always writes its connection descriptor (and,
    with *mmap*, its mmap descriptor) and, over DC, reads nothing back. The active side
    (sender, requester) writes its descriptor over RC only and reads the peer's (and, with
    *mmap*, the peer's mmap descriptor)."""
    cfg, log = resources.cfg, resources.log
    if passive:
        write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
        if mmap:
            write_file(cfg.remote_resource_desc_path, resources.mmap_descriptor)
            log.info("You can now copy %s and %s to the %s", cfg.local_connection_desc_path,
                     cfg.remote_resource_desc_path, peer)
        else:
            log.info("You can now copy %s to the %s", cfg.local_connection_desc_path, peer)
        if cfg.transport_type == RdmaTransportType.DC:
            return
        log.info("Please copy %s from the %s", cfg.remote_connection_desc_path, peer)
        wait_for_file(cfg.remote_connection_desc_path, log)
        resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)
        return
    if cfg.transport_type == RdmaTransportType.RC:
        write_file(cfg.local_connection_desc_path, resources.rdma_conn_descriptor)
        log.info("You can now copy %s to the %s", cfg.local_connection_desc_path, peer)
    if mmap:
        log.info("Please copy %s and %s from the %s", cfg.remote_connection_desc_path,
                 cfg.remote_resource_desc_path, peer)
    else:
        log.info("Please copy %s from the %s", cfg.remote_connection_desc_path, peer)
    wait_for_file(cfg.remote_connection_desc_path, log)
    if mmap:
        wait_for_file(cfg.remote_resource_desc_path, log)
    resources.remote_rdma_conn_descriptor = read_file(cfg.remote_connection_desc_path)
    if mmap:
        resources.remote_mmap_descriptor = read_file(cfg.remote_resource_desc_path)


def rdma_connect(resources: RdmaResources, *, passive: bool) -> None:
    """``doca_rdma_connect`` to the peer's descriptor (a passive side over DC has none)."""
    if passive and resources.cfg.transport_type == RdmaTransportType.DC:
        return
    assert resources.connection is not None
    resources.rdma.connect(resources.remote_rdma_conn_descriptor, resources.connection)


def export_and_connect(resources: RdmaResources, peer: str, *, passive: bool, mmap: bool = False) -> None:
    """``doca_rdma_export`` (and, with *mmap*, ``doca_mmap_export_rdma``) → descriptor
    exchange → ``doca_rdma_connect``: every sample's ``*_export_and_connect``."""
    resources.rdma_conn_descriptor, resources.connection = resources.rdma.export()
    if mmap and passive:
        resources.mmap_descriptor = resources.mmap.export_rdma(resources.doca_device)
    write_read_connection(resources, peer, passive=passive, mmap=mmap)
    rdma_connect(resources, passive=passive)


def release_bufs(resources: RdmaResources) -> None:
    """Drop the task's buffers (``doca_buf_dec_refcount``)."""
    for buf in (resources.dst_buf, resources.src_buf):
        if buf is not None:
            buf.dec_refcount()
    resources.dst_buf = resources.src_buf = None


def task_finished(resources: RdmaResources, task: Any) -> None:
    """The end of every task callback: free the task and its buffers; once no task remains,
    stop the ctx."""
    task.free()
    release_bufs(resources)
    resources.num_remaining_tasks -= 1
    if resources.num_remaining_tasks == 0:  # stop the ctx once every task completed
        stop_rdma(resources)


def stop_rdma(resources: RdmaResources) -> None:
    """The samples' end: disconnect the RDMA-CM connections (with ``--use-rdma-cm``), then stop the ctx.

    A side set up with ``use_rdma_cm(passive=True)`` waits for its peer's disconnection instead: the peer may
    still wait for the acknowledgement of its own last operation, and on the emulated backend a disconnection
    can overtake it (DOCA's samples disconnect on both sides). The receiving side of send/receive and of the
    sync event waits; in read and write the requester does, as its operation completes on one host before
    the responder's descriptor send is acknowledged."""
    if resources.cfg.use_rdma_cm:
        if resources.cm_passive and resources.connections:
            resources.stop_on_disconnect = True
            return
        rdma_cm_disconnect(resources)
    request_stop(resources.rdma)


def task_error_callback(what: str) -> Callable[[Any, Any, Any], None]:
    """Every sample's task error callback: keep the first error, log, :func:`task_finished`."""

    def error_callback(task: Any, task_user_data: Any, ctx_user_data: Any) -> None:
        resources: RdmaResources = ctx_user_data
        propagate_error(resources, task.get_status())
        resources.log.error("%s task failed: %s", what, task.exception())
        task_finished(resources, task)

    return error_callback


def submit_task(resources: RdmaResources, task: Any) -> None:
    """``doca_task_submit``, counting the task; a refused task is freed with its buffers."""
    resources.num_remaining_tasks += 1
    try:
        task.submit()
    except d.DocaError:
        resources.num_remaining_tasks -= 1
        task.free()
        release_bufs(resources)
        raise


def state_change_callback(what: str, on_running: Callable[[RdmaResources], None]
                          ) -> Callable[[Any, d.Ctx, d.CtxState, d.CtxState], None]:
    """Every sample's state-changed callback: *on_running* runs once the ctx is RUNNING
    (DOCA 3.x: without a connection); IDLE ends the progress loop."""

    def callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
        resources: RdmaResources = user_data
        log_state(resources, next_state)
        try:
            if next_state == d.CtxState.RUNNING:
                on_running(resources)
            elif next_state == d.CtxState.IDLE:
                resources.run_pe_progress = False  # we can stop progressing the PE
        except d.DocaError as exc:
            resources.log.error("%s failed: %s", what, exc)
            propagate_error(resources, exc.code)
            request_stop(ctx)

    return callback


def run_rdma_ctx(resources: RdmaResources, state_changed_cb: Callable[..., None], *,
                 buf_inventory: bool = True) -> d.ErrorCode:
    """``doca_ctx_set_state_changed_cb`` → ``doca_ctx_set_user_data`` → (inventory) →
    ``doca_ctx_start`` → progress until IDLE; the first error met, or SUCCESS."""
    resources.rdma.set_state_changed_cb(state_changed_cb)
    resources.rdma.user_data = resources  # doca_ctx_set_user_data
    try:
        if buf_inventory:
            resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS, start=False)
            resources.buf_inventory.start()
        resources.rdma.start()

        # The state machine runs in the state-changed callback, from progress(); it ends on IDLE.
        while resources.run_pe_progress:
            if not resources.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)
        return resources.first_encountered_error
    finally:
        if resources.buf_inventory is not None:
            resources.buf_inventory.stop()
            resources.buf_inventory.close()
            resources.buf_inventory = None


# -- asyncio: the steps both aio_rdma_* samples share ---------------------------------------------
def set_aio_connection_callbacks(rdma: Rdma) -> None:
    """``doca_rdma_set_connection_state_callbacks`` with this module's callbacks."""
    rdma.set_connection_state_callbacks(None, rdma_connection_established_callback,
                                        rdma_connection_failure_callback, rdma_connection_disconnect_callback)


async def aio_start_and_connect(resources: RdmaResources, runner: aio.AttachedPe, peer: str,
                                timeout: float) -> None:
    """``doca_ctx_start``; await RUNNING; :func:`aio_export_and_connect`."""
    resources.rdma.start()
    await resources.rdma.started(timeout=timeout)
    resources.log.info("RDMA context is running")
    await aio_export_and_connect(resources, runner, peer, timeout)


async def aio_stop(resources: RdmaResources, timeout: float) -> None:
    """``doca_ctx_stop`` (a failed task has already moved the ctx to STOPPING); await IDLE."""
    request_stop(resources.rdma)
    await resources.rdma.stopped(timeout=timeout)


# -- RDMA-CM (--use-rdma-cm): connection by address, then the descriptor over the connection ---------
def rdma_cm_connect(resources: RdmaResources) -> None:
    """``rdma_cm_connect``: with a server address this side is the client (``doca_rdma_connect_to_addr``),
    else the server (``doca_rdma_start_listen_to_port``)."""
    cfg, log = resources.cfg, resources.log
    resources.is_client = bool(cfg.cm_addr)
    resources.self_name = CLIENT_NAME if resources.is_client else SERVER_NAME
    if resources.is_client and cfg.num_connections > 1:
        raise d.errors.DocaInvalidValue(f"Client only support single connection, but input num_connections is "
                                        f"[{cfg.num_connections}]")
    log.info("Using RDMA_CM to setup RDMA connection")
    log.info("-- Connection Role: %s, Addr: %s, Port: %d", resources.self_name, cfg.cm_addr or "NULL", cfg.cm_port)
    if not resources.is_client:
        port = resources.rdma.start_listen_to_port(cfg.cm_port)
        log.info("[%s] listening on port %d", resources.self_name, port)
    else:
        resources.cm_addr = RdmaAddr(cfg.cm_addr_type, cfg.cm_addr, cfg.cm_port)
        resources.rdma.connect_to_addr(resources.cm_addr, resources)
    log.info("[%s] started connection successfully", resources.self_name)


def rdma_cm_disconnect(resources: RdmaResources) -> None:
    """``rdma_cm_disconnect``: disconnect every established connection."""
    while resources.connections:
        conn = resources.connections.pop()
        try:
            conn.disconnect()
            resources.log.info("[%s] successfully disconnect rdma-cm connection", resources.self_name)
        except d.DocaError as exc:  # released already: the ctx stopped (a failed connection still disconnects)
            resources.log.info("[%s] rdma-cm connection already released: %s", resources.self_name, exc)


def _run_task_fn(resources: RdmaResources) -> None:
    """``resources->task_fn(resources)``; a failure stops the ctx."""
    assert resources.task_fn is not None
    try:
        resources.task_fn(resources)
    except d.DocaError as exc:
        resources.log.error("[%s] failed after the negotiation: %s", resources.self_name, exc)
        propagate_error(resources, exc.code)
        request_stop(resources.rdma)


def _negotiation_buffer(resources: RdmaResources, size: int) -> tuple[d.Mmap, memoryview]:
    if resources.buf_inventory is None:  # the responders have no inventory of their own
        resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS)
    mmap, mem = create_local_mmap(d.AccessFlag.LOCAL_READ_WRITE, size, resources.doca_device)
    resources.cm_mmaps.append(mmap)
    return mmap, mem


def rdma_requester_recv_data_from_rdma_responder(resources: RdmaResources) -> None:
    """Post a receive for the responder's descriptor (its mmap's, or its sync event's)."""
    resources.log.info("Start to exchange data resource between client and server")
    mmap, _ = _negotiation_buffer(resources, MEM_RANGE_LEN)
    assert resources.buf_inventory is not None
    base, _ = mmap.get_memrange()
    buf = resources.buf_inventory.buf_get_by_addr(mmap, base, MEM_RANGE_LEN)
    _submit_or_release(resources.rdma.task_receive_allocate_init(buf, resources), buf)
    resources.log.info("Negotiation receive task submission completed")


def rdma_responder_send_data_to_rdma_requester(resources: RdmaResources) -> None:
    """Send the descriptor the sample prepared (``mmap_descriptor``: its sync event's export), else export
    the mmap. DOCA's sample waits for enter first; a send waits for the posted receive anyway."""
    resources.log.info("Start to exchange data resource between client and server")
    if not resources.mmap_descriptor:
        resources.mmap_descriptor = resources.mmap.export_rdma(resources.doca_device)
    data = resources.mmap_descriptor
    mmap, mem = _negotiation_buffer(resources, len(data))
    mem[:len(data)] = data
    assert resources.buf_inventory is not None and resources.connections
    base, _ = mmap.get_memrange()
    buf = resources.buf_inventory.buf_get_by_data(mmap, base, len(data))
    _submit_or_release(resources.rdma.task_send_allocate_init(resources.connections[0], buf, resources), buf)


def _submit_or_release(task: Any, buf: d.Buf) -> None:
    """Submit a negotiation task; a refused one is freed with its buffer."""
    try:
        task.submit()
    except d.DocaError:
        task.free()
        buf.dec_refcount()
        raise


def _negotiation_done(resources: RdmaResources, task: Any, buf: d.Buf | None, what: str) -> None:
    """The end of a negotiation send or receive: free it and its buffer; then :func:`_run_task_fn`, or after
    a failure stop the ctx."""
    failed = task.get_status() != d.ErrorCode.SUCCESS
    if failed:
        resources.log.error("RDMA negotiation %s task failed: %s", what, task.exception())
        propagate_error(resources, task.get_status())
    task.free()
    if buf is not None:
        buf.dec_refcount()
    if failed:
        request_stop(resources.rdma)
    else:
        _run_task_fn(resources)


def receive_task_completion_cb(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    dst = task.get_dst_buf()
    if dst is not None and task.get_status() == d.ErrorCode.SUCCESS:
        resources.remote_mmap_descriptor = bytes(dst.data_view())
    _negotiation_done(resources, task, dst, "receive")


receive_task_error_cb = receive_task_completion_cb  # the status tells them apart (no descriptor on failure)


def send_task_completion_cb(task: RdmaTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
    _negotiation_done(ctx_user_data, task, task.get_src_buf(), "send")


send_task_error_cb = send_task_completion_cb  # the status tells them apart


def rdma_cm_connect_request_cb(conn: RdmaConnection, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    try:
        conn.accept()
        conn.set_user_data(resources)
    except d.DocaError as exc:
        resources.log.error("Failed to accept rdma cm connection: %s", exc)
        request_stop(resources.rdma)


def rdma_cm_connect_established_cb(conn: RdmaConnection, conn_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    conn.set_user_data(len(resources.connections))
    resources.connections.append(conn)
    resources.connection = resources.connections[0]
    try:
        if not resources.require_remote_mmap:
            if len(resources.connections) >= resources.cfg.num_connections:
                _run_task_fn(resources)
        elif resources.is_requester:
            rdma_requester_recv_data_from_rdma_responder(resources)
        else:
            rdma_responder_send_data_to_rdma_requester(resources)
    except d.DocaError as exc:
        resources.log.error("[%s] negotiation failed: %s", resources.self_name, exc)
        propagate_error(resources, exc.code)
        request_stop(resources.rdma)


def rdma_cm_connect_failure_cb(conn: RdmaConnection, conn_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    if conn in resources.connections:
        resources.connections.remove(conn)
    propagate_error(resources, d.ErrorCode.CONNECTION_ABORTED)
    request_stop(resources.rdma)


def rdma_cm_disconnect_cb(conn: RdmaConnection, conn_user_data: Any, ctx_user_data: Any) -> None:
    resources: RdmaResources = ctx_user_data
    if conn in resources.connections:
        resources.connections.remove(conn)
        try:
            conn.disconnect()
        except d.DocaError as exc:
            resources.log.error("Failed to disconnect rdma cm connection: %s", exc)
            request_stop(resources.rdma)
    if resources.stop_on_disconnect and not resources.connections:
        request_stop(resources.rdma)


def use_rdma_cm(resources: RdmaResources, task_fn: Callable[[RdmaResources], None], *, requester: bool = False,
                passive: bool = False, require_remote_mmap: bool = False, need_send_task: bool = False,
                need_recv_task: bool = False) -> None:
    """What each sample's main function sets up for ``--use-rdma-cm`` (nothing without it): its role in the
    negotiation and at the end (*passive*: see :func:`stop_rdma`), what runs after it (*task_fn*), and
    :func:`config_rdma_cm_callback_and_negotiation_task`."""
    if not resources.cfg.use_rdma_cm:
        return
    resources.is_requester, resources.require_remote_mmap, resources.task_fn = requester, require_remote_mmap, task_fn
    resources.cm_passive = passive
    config_rdma_cm_callback_and_negotiation_task(resources, need_send_task, need_recv_task)


def cm_connect(resources: RdmaResources) -> bool:
    """With ``--use-rdma-cm``: :func:`rdma_cm_connect` from the RUNNING callback, the rest following from the
    connection callbacks; whether it did (else the sample exchanges descriptor files)."""
    if not resources.cfg.use_rdma_cm:
        return False
    rdma_cm_connect(resources)
    resources.log.info("RDMA context finished initialization")
    return True


def config_rdma_cm_callback_and_negotiation_task(resources: RdmaResources, need_send_task: bool,
                                                 need_recv_task: bool) -> None:
    """The negotiation's send or receive task type (the descriptor travels over the connection) and the
    RDMA-CM connection callbacks."""
    if need_recv_task:
        resources.rdma.task_receive_set_conf(receive_task_completion_cb, receive_task_error_cb,
                                             NUM_NEGOTIATION_RDMA_TASKS)
    if need_send_task:
        resources.rdma.task_send_set_conf(send_task_completion_cb, send_task_error_cb, NUM_NEGOTIATION_RDMA_TASKS)
    resources.rdma.set_connection_state_callbacks(rdma_cm_connect_request_cb, rdma_cm_connect_established_cb,
                                                  rdma_cm_connect_failure_cb, rdma_cm_disconnect_cb)


# -- several connections on one ctx (rdma_multi_conn_send / _receive) ------------------------------
def register_rdma_num_connections_param(parser: argparse.ArgumentParser) -> None:
    """``register_rdma_num_connections_param``: ``-nc`` (the ctx's ``max_num_connections``)."""
    parser.add_argument("-nc", "--num-connections", dest="num_connections", type=_num_connections, default=1,
                        help=f"num_connections for DOCA RDMA (optional), max connections number must be <= "
                             f"{MAX_NUM_CONNECTIONS}")


def connection_desc_path(file_path: str, connection_id: int) -> str:
    """The descriptor file of connection *connection_id*: ``<file_path>-<connection_id as 4 digits>``."""
    return f"{file_path}-{connection_id:04d}"


def multi_conn_write_read_connection(resources: RdmaResources, connection_id: int, peer: str) -> None:
    """The multi-connection samples' ``write_read_connection``: each side writes its descriptor of
    connection *connection_id* to its ``-ld`` path with the suffix of :func:`connection_desc_path`, then reads the
    peer's from its ``-re`` path with that suffix."""
    cfg, log = resources.cfg, resources.log
    local_path = connection_desc_path(cfg.local_connection_desc_path, connection_id)
    write_file(local_path, resources.rdma_conn_descriptor)
    log.info("You can now copy %s to the %s", local_path, peer)
    remote_path = connection_desc_path(cfg.remote_connection_desc_path, connection_id)
    log.info("Please copy %s from the %s", remote_path, peer)
    wait_for_file(remote_path, log)
    resources.remote_rdma_conn_descriptor = read_file(remote_path)


def multi_conn_export_and_connect(resources: RdmaResources, peer: str) -> None:
    """The multi-connection samples' ``*_export_and_connect`` without RDMA-CM: one by one, for each of the
    ``num_connections`` connections, ``doca_rdma_export`` (a new connection of the ctx) → descriptor exchange →
    ``doca_rdma_connect``. ``resources.connections[i]`` is connection *i*."""
    cfg, log = resources.cfg, resources.log
    for i in range(cfg.num_connections):
        log.info("Start to establish RDMA connection [%d]", i)
        resources.rdma_conn_descriptor, conn = resources.rdma.export()
        resources.connections.append(conn)
        resources.connection = resources.connections[0]
        multi_conn_write_read_connection(resources, i, peer)
        resources.rdma.connect(resources.remote_rdma_conn_descriptor, conn)
        resources.remote_rdma_conn_descriptor = b""  # free(remote_rdma_conn_descriptor)
        # DOCA 3.x: connect only sets up this side; tasks on the connection wait until the peer connects too.
        log.info("RDMA connection [%d] is established (rdma_connection id %d)", i, conn.get_id())
    log.info("All [%d] RDMA connections have been established", cfg.num_connections)


def clean_up_connection_files(cfg: RdmaConfig) -> None:
    """Delete the per-connection descriptor files of :func:`multi_conn_write_read_connection` (both sides)."""
    for i in range(cfg.num_connections):
        delete_file(connection_desc_path(cfg.local_connection_desc_path, i))
        delete_file(connection_desc_path(cfg.remote_connection_desc_path, i))
