"""What the sync event samples share through ``samples/doca_common/common_common.c`` (DOCA 3.3), ported to
doca_py.

The command line (``sync_event_params_register``), the check of the asynchronous mode
(``sync_event_config_validate``), the start as a ctx with its four task types
(``sync_event_start_async``), the comch handshake that carries the exported event from one side to the
other (``sync_event_cc_handshake``), the synchronous wait for one asynchronous task
(``sync_event_async_task_submit``) and the teardown (``sync_event_tear_down``).

**The two builds.** The C file is built once for the DPU (``DOCA_ARCH_DPU``: a comch *server* on the
device and the representor of the host function given with the mandatory ``-r/--rep-pci``) and once for
the host (a comch *client*, no ``-r``). A port is both builds: given ``-r`` it runs as the DPU build,
without it as the host build, so the C command lines of either side run unchanged. Which side holds the
event (``sync_event_local_pci``) and which imports it (``sync_event_remote_pci``) is independent of that.

**Waits.** The C loops sleep a second between two ``doca_pe_progress`` calls of the comch progress engine,
for up to ``SYNC_EVENT_CC_TIMEOUT_SEC`` (30) rounds; the ports progress it every ``SLEEP_IN_SECONDS`` for
up to 30 seconds — the same bound, without the second of latency per step.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import doca_py as d
from doca_py.comch import ComchClient, ComchConnection, ComchServer, ComchTaskSend
from doca_py.errors import DocaBadState, DocaInvalidValue, DocaPyError, DocaNotSupported, DocaTimeout, DocaUnknown

from _common import SLEEP_IN_SECONDS, open_doca_device_rep_with_pci, open_doca_device_with_pci

log = logging.getLogger("SYNC_EVENT::COMMON")

SYNC_EVENT_CC_MAX_MSG_SIZE = 1024  # DOCA comch maximum message size
SYNC_EVENT_CC_MAX_QUEUE_SIZE = 8  # DOCA comch maximum queue size
SYNC_EVENT_CC_MAX_TASKS = 8  # DOCA comch maximum send tasks to allocate
SYNC_EVENT_CC_SERVICE_NAME = "sync_event_cc"  # DOCA comch service name
SYNC_EVENT_CC_TIMEOUT_SEC = 30  # DOCA comch timeout in seconds

SLEEP_IN_NANOS = 10 * 1000  # sample the task every 10 microseconds
TIMEOUT_IN_NANOS = 1 * 1000000000  # poll the task for a maximum of 1 second (of SLEEP_IN_NANOS sleeps)

DOCA_DEVINFO_PCI_ADDR_SIZE = 13  # "XXXX:XX:XX.X" and its NUL
DOCA_DEVINFO_REP_PCI_ADDR_SIZE = 13
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1


# -- user input and runtime objects ---------------------------------------------------------------
@dataclass
class SyncEventConfig:
    """``struct sync_event_config``."""

    dev_pci_addr: str = ""  # device PCI address
    rep_pci_addr: str = ""  # DPU representor PCI address (the DPU build only)
    is_async_mode: bool = False  # start DOCA Sync Event in asynchronous or synchronous mode
    is_update_atomic: bool = False  # update DOCA Sync Event using Set or atomic Add operation
    async_num_tasks: int = 0  # num tasks for asynchronous mode

    @property
    def dpu(self) -> bool:
        """Python-only: whether this is the DPU build (``DOCA_ARCH_DPU``): ``-r`` was given."""
        return bool(self.rep_pci_addr)


@dataclass
class SyncEventRuntimeObjects:
    """``struct sync_event_runtime_objects``; ``server`` and ``client`` are the C's union (one is set)."""

    dev: d.Dev | None = None
    rep: d.DevRep | None = None
    se: d.SyncEvent | None = None
    se_ctx: d.SyncEventCtx | None = None
    se_pe: d.Pe | None = None
    se_task_result: d.ErrorCode = d.ErrorCode.UNKNOWN  # last completed Sync Event task's status
    comch_pe: d.Pe | None = None
    server: ComchServer | None = None  # server context (DPU only)
    client: ComchClient | None = None  # client context (x86 host only)
    comch_connection: ComchConnection | None = None  # established comch connection
    comch_recv_event_cb: Callable[[memoryview, ComchConnection], None] | None = None
    user_data: Any = None  # sample user data
    #: Python-only: the side's architecture (``DOCA_ARCH_DPU``), fixed at compile time in C.
    dpu: bool = False
    #: Python-only: comch send tasks submitted and not completed yet (see ``progress_comch_sends``).
    comch_sends_in_flight: int = 0


# -- command line ---------------------------------------------------------------------------------
def _pci_addr(size: int) -> Callable[[str], str]:
    """``pci_addr_cb``."""

    def check(addr: str) -> str:
        if len(addr.encode()) >= size:
            raise argparse.ArgumentTypeError(f"PCI address exceeding the maximum size of {size - 1}")
        return addr

    return check


def sync_event_params_register(parser: argparse.ArgumentParser) -> None:
    """``sync_event_params_register``: the flags of both builds (``-r`` is the DPU build's)."""
    parser.add_argument("-d", "--pci-addr", dest="dev_pci_addr", required=True,
                        type=_pci_addr(DOCA_DEVINFO_PCI_ADDR_SIZE), help="Device PCI address")
    parser.add_argument("-r", "--rep-pci", dest="rep_pci_addr", default="",
                        type=_pci_addr(DOCA_DEVINFO_REP_PCI_ADDR_SIZE),
                        help="DPU representor PCI address (the DPU build, where it is mandatory: giving it runs "
                             "the DPU side)")
    parser.add_argument("--async", dest="is_async_mode", action="store_true",
                        help="Start DOCA Sync Event in asynchronous mode (synchronous mode by default)")
    parser.add_argument("--async-num-tasks", dest="async_num_tasks", type=int, default=0,
                        help="Async num tasks for asynchronous mode")
    parser.add_argument("--atomic", dest="is_update_atomic", action="store_true",
                        help="Update DOCA Sync Event using Add operation (Set operation by default)")


def config_from_args(args: argparse.Namespace) -> SyncEventConfig:
    return SyncEventConfig(args.dev_pci_addr, args.rep_pci_addr, args.is_async_mode, args.is_update_atomic,
                           args.async_num_tasks)


def sync_event_config_validate(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``sync_event_config_validate``: the asynchronous mode needs the wait-eq task and a task count in
    ``[0, UINT32_MAX]``."""
    if not se_cfg.is_async_mode:
        return
    assert se_rt_objs.dev is not None
    if not d.SyncEvent.cap_task_is_supported("wait_eq", se_rt_objs.dev.as_devinfo()):
        raise DocaNotSupported("DOCA Sync Event asynchronous wait is not supported on the given device")
    if not 0 <= se_cfg.async_num_tasks <= UINT32_MAX:
        raise DocaInvalidValue("Please specify num async tasks in the range [0, 4294967295] (asynchronous mode)")


def open_devices(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects,
                 func: Callable[[d.DevInfo], bool]) -> None:
    """The first steps of both samples' ``sync_event_run``: ``open_doca_device_with_pci`` and, in the DPU
    build, ``open_doca_device_rep_with_pci`` (``DOCA_DEVINFO_REP_FILTER_NET``)."""
    se_rt_objs.dpu = se_cfg.dpu
    se_rt_objs.dev = open_doca_device_with_pci(se_cfg.dev_pci_addr, func)
    if se_rt_objs.dpu:
        se_rt_objs.rep = open_doca_device_rep_with_pci(se_rt_objs.dev, d.DevinfoRepFilter.NET,
                                                       se_cfg.rep_pci_addr)


# -- asynchronous mode ----------------------------------------------------------------------------
def task_completion_cb(task: Any, task_user_data: Any, ctx_user_data: Any) -> None:
    """Every task type's completion callback: the last task succeeded."""
    rt_objs: SyncEventRuntimeObjects = ctx_user_data
    rt_objs.se_task_result = d.ErrorCode.SUCCESS


def task_error_cb(task: Any, task_user_data: Any, ctx_user_data: Any) -> None:
    """Every task type's error callback: the last task failed."""
    rt_objs: SyncEventRuntimeObjects = ctx_user_data
    rt_objs.se_task_result = d.ErrorCode.UNKNOWN


def sync_event_start_async(se_cfg: SyncEventConfig, se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``sync_event_start_async``: the event as a ctx on its own Pe, the get, notify-set, notify-add and
    wait-eq tasks configured with *async_num_tasks* each, ``doca_ctx_start``."""
    assert se_rt_objs.se is not None
    se_rt_objs.se_ctx = se_rt_objs.se.as_ctx()
    se_rt_objs.se_pe = d.Pe()
    se_rt_objs.se_pe.connect_ctx(se_rt_objs.se_ctx)
    se_rt_objs.se_ctx.user_data = se_rt_objs  # doca_ctx_set_user_data
    # The C registers one pair of wrappers per task type (doca_sync_event_task_<type>_as_doca_task):
    # a Python callback takes any task.
    se_rt_objs.se_ctx.task_get_set_conf(task_completion_cb, task_error_cb, se_cfg.async_num_tasks)
    se_rt_objs.se_ctx.task_notify_set_set_conf(task_completion_cb, task_error_cb, se_cfg.async_num_tasks)
    se_rt_objs.se_ctx.task_notify_add_set_conf(task_completion_cb, task_error_cb, se_cfg.async_num_tasks)
    se_rt_objs.se_ctx.task_wait_eq_set_conf(task_completion_cb, task_error_cb, se_cfg.async_num_tasks)
    se_rt_objs.se_ctx.start()


def sync_event_async_task_submit(se_rt_objs: SyncEventRuntimeObjects, se_task: d.Task) -> None:
    """``sync_event_async_task_submit``: submit, progress until something completes (for at most
    ``TIMEOUT_IN_NANOS`` worth of ``SLEEP_IN_NANOS`` sleeps, counted as in C), then check the result.

    The C returns the submit's ``DOCA_SUCCESS`` after logging a failed task; the port raises."""
    assert se_rt_objs.se_pe is not None
    try:
        se_task.submit()
    except d.DocaError as exc:
        log.error("Failed to submit set task for sync event: %s", exc)
        raise
    timeout = TIMEOUT_IN_NANOS
    while not se_rt_objs.se_pe.progress():
        if timeout == 0:
            raise DocaTimeout("Failed to retrieve set task progress: timeout")
        time.sleep(SLEEP_IN_SECONDS)
        timeout -= SLEEP_IN_NANOS
    if se_rt_objs.se_task_result != d.ErrorCode.SUCCESS:
        raise DocaUnknown("Failed to execute set task for sync event")  # the error callback's status


def free_task(se_task: d.Task) -> None:
    """``doca_task_free`` after ``sync_event_async_task_submit``, whatever its result (as the C does). A
    task still in flight (its wait timed out) cannot be freed: it stays DOCA's, and the teardown's stop
    flushes it."""
    try:
        se_task.free()
    except DocaPyError as exc:
        log.error("Failed to free the sync event task: %s", exc)


# -- comch: the exported event travels from one side to the other ---------------------------------------
def comch_send_completion_cb(task: ComchTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
    rt_objs: SyncEventRuntimeObjects = ctx_user_data
    task.free()
    rt_objs.comch_sends_in_flight -= 1


def comch_send_completion_err_cb(task: ComchTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
    rt_objs: SyncEventRuntimeObjects = ctx_user_data
    task.free()
    rt_objs.comch_sends_in_flight -= 1
    log.error("Send Task got a completion error")


def comch_server_connection_cb(comch_connection: ComchConnection, change_successful: bool) -> None:
    """A client connected: remember its connection (the sample serves one)."""
    server = comch_connection.get_server_ctx()  # doca_comch_server_get_server_ctx
    assert server is not None
    se_rt_objs: SyncEventRuntimeObjects = server.user_data  # doca_ctx_get_user_data
    se_rt_objs.comch_connection = comch_connection
    log.info("Server received a new connection")


def comch_server_disconnection_cb(comch_connection: ComchConnection, change_successful: bool) -> None:
    server = comch_connection.get_server_ctx()
    assert server is not None
    se_rt_objs: SyncEventRuntimeObjects = server.user_data
    se_rt_objs.comch_connection = None
    log.info("Client has disconnected from server")


def _poll_comch(se_rt_objs: SyncEventRuntimeObjects, done: Callable[[], bool]) -> bool:
    """Progress the comch Pe until *done*, for at most ``SYNC_EVENT_CC_TIMEOUT_SEC``; False on timeout."""
    assert se_rt_objs.comch_pe is not None
    deadline = time.monotonic() + SYNC_EVENT_CC_TIMEOUT_SEC
    while not done():
        if time.monotonic() >= deadline:
            return False
        if not se_rt_objs.comch_pe.progress():
            time.sleep(SLEEP_IN_SECONDS)
    return True


def sync_event_cc_init(se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``sync_event_cc_init``: a Pe and, on the DPU, a comch server (on the host a client) configured with
    the sample's sizes, its send tasks, the sample's receive callback and the runtime objects as user data."""
    assert se_rt_objs.dev is not None and se_rt_objs.comch_recv_event_cb is not None
    se_rt_objs.comch_pe = d.Pe()
    endpoint: ComchServer | ComchClient
    if se_rt_objs.dpu:
        assert se_rt_objs.rep is not None
        endpoint = se_rt_objs.server = ComchServer(se_rt_objs.dev, se_rt_objs.rep, SYNC_EVENT_CC_SERVICE_NAME)
    else:
        endpoint = se_rt_objs.client = ComchClient(se_rt_objs.dev, SYNC_EVENT_CC_SERVICE_NAME)
    endpoint.set_max_msg_size(SYNC_EVENT_CC_MAX_MSG_SIZE)
    endpoint.set_recv_queue_size(SYNC_EVENT_CC_MAX_QUEUE_SIZE)
    se_rt_objs.comch_pe.connect_ctx(endpoint)
    endpoint.task_send_set_conf(comch_send_completion_cb, comch_send_completion_err_cb, SYNC_EVENT_CC_MAX_TASKS)
    endpoint.event_msg_recv_register(se_rt_objs.comch_recv_event_cb)
    if isinstance(endpoint, ComchServer):
        endpoint.event_connection_status_changed_register(comch_server_connection_cb, comch_server_disconnection_cb)
    endpoint.user_data = se_rt_objs  # doca_ctx_set_user_data


def sync_event_cc_handshake(se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``sync_event_cc_handshake``: the DPU starts its server and waits for the host's client to connect;
    the host starts its client and waits until it is RUNNING (connected), then takes its connection."""
    sync_event_cc_init(se_rt_objs)
    if se_rt_objs.dpu:
        assert se_rt_objs.server is not None
        se_rt_objs.comch_connection = None
        se_rt_objs.server.start()
        # The connection is filled in by the callback when a single client connects
        if not _poll_comch(se_rt_objs, lambda: se_rt_objs.comch_connection is not None):
            raise DocaTimeout("Failed to receive connection from host: timeout")
        log.info("Received connection from host")
    else:
        client = se_rt_objs.client
        assert client is not None
        client.start()  # DOCA_ERROR_IN_PROGRESS in C: STARTING until the server accepts
        # Wait for the client/server handshake to complete
        if not _poll_comch(se_rt_objs, lambda: client.get_state() == d.CtxState.RUNNING):
            raise DocaTimeout("Failed to connect to server: timeout")
        se_rt_objs.comch_connection = client.get_connection()
        log.info("Connection to DPU has been established")


def sync_event_cc_send(se_rt_objs: SyncEventRuntimeObjects, msg: bytes) -> None:
    """``doca_comch_{server,client}_task_send_alloc_init`` + ``doca_task_submit`` (the task is freed by its
    callback, or here when the submit fails)."""
    endpoint = se_rt_objs.server if se_rt_objs.dpu else se_rt_objs.client
    assert endpoint is not None and se_rt_objs.comch_connection is not None
    task = endpoint.task_send_alloc_init(se_rt_objs.comch_connection, msg)
    try:
        task.submit()
    except d.DocaError:
        task.free()
        raise
    se_rt_objs.comch_sends_in_flight += 1


def progress_comch_sends(se_rt_objs: SyncEventRuntimeObjects) -> None:
    """Python-only: progress the comch Pe until the sends submitted have completed.

    The C sample submits its message and goes on without progressing the comch Pe until its teardown:
    DOCA's ``doca_task_submit`` hands the message to the hardware at once. doca_py (the emulator, and
    libdoca over it) starts a task's work only in ``doca_pe_progress``, so the message would leave only at
    the teardown — after the wait for the peer's answer to it, which could never come."""
    if not _poll_comch(se_rt_objs, lambda: se_rt_objs.comch_sends_in_flight == 0):
        raise DocaTimeout("The comch message did not complete: timeout")


# -- teardown -------------------------------------------------------------------------------------
def _stop_comch(se_rt_objs: SyncEventRuntimeObjects, endpoint: ComchServer | ComchClient, what: str) -> None:
    """``doca_ctx_stop`` (``IN_PROGRESS`` is fine), progress until IDLE (bounded), destroy."""
    try:
        endpoint.stop()
    except d.DocaError as exc:
        log.error("Failed to stop comch %s: %s", what, exc)
    if not _poll_comch(se_rt_objs, lambda: endpoint.get_state() == d.CtxState.IDLE):
        log.error("%s could not move to idle state: timeout", what.capitalize())
    endpoint.close()


def sync_event_tear_down(se_rt_objs: SyncEventRuntimeObjects) -> None:
    """``sync_event_tear_down``: comch (the DPU first waits for the host to disconnect), the event's ctx
    (progressing its Pe until no task is in flight) or the stand-alone event, the event, its Pe, the
    representor and the device. Errors are logged, as in C.

    Where the C returns early (a sync event ctx that does not stop), the port logs the same error and
    still closes the rest (Python would otherwise report the objects as leaked at exit)."""
    if se_rt_objs.server is not None:
        # Wait for the client to disconnect before destroying the server
        if not _poll_comch(se_rt_objs, lambda: se_rt_objs.comch_connection is None):
            log.error("Server did not get client disconnection: timeout")
        _stop_comch(se_rt_objs, se_rt_objs.server, "server")
        se_rt_objs.server = None
    if se_rt_objs.client is not None:
        _stop_comch(se_rt_objs, se_rt_objs.client, "client")
        se_rt_objs.client = None
    if se_rt_objs.comch_pe is not None:
        se_rt_objs.comch_pe.close()
        se_rt_objs.comch_pe = None

    if se_rt_objs.se_ctx is not None:
        assert se_rt_objs.se_pe is not None
        try:
            if se_rt_objs.se_ctx.stop() != d.CtxState.IDLE:  # DOCA_ERROR_IN_PROGRESS
                timeout = TIMEOUT_IN_NANOS
                while True:
                    se_rt_objs.se_pe.progress()
                    inflight_tasks = se_rt_objs.se_ctx.get_num_inflight_tasks()
                    time.sleep(SLEEP_IN_SECONDS)
                    timeout -= SLEEP_IN_NANOS
                    if inflight_tasks == 0 or timeout <= 0:
                        break
                if se_rt_objs.se_ctx.get_state() != d.CtxState.IDLE:
                    raise DocaBadState("the sync event ctx did not stop")
        except d.DocaError as exc:
            log.error("Failed to stop DOCA context, err: %s", exc)

    if se_rt_objs.se is not None:
        if se_rt_objs.se_ctx is None:
            try:
                se_rt_objs.se.stop()
            except d.DocaError as exc:
                log.error("Failed to stop se: %s", exc)
        se_rt_objs.se.close()  # doca_sync_event_destroy
        se_rt_objs.se = se_rt_objs.se_ctx = None
    if se_rt_objs.se_pe is not None:
        se_rt_objs.se_pe.close()
        se_rt_objs.se_pe = None
    if se_rt_objs.rep is not None:
        se_rt_objs.rep.close()
        se_rt_objs.rep = None
    if se_rt_objs.dev is not None:
        se_rt_objs.dev.close()
        se_rt_objs.dev = None
