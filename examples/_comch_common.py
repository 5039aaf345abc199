"""``comch_ctrl_path_common.c`` and ``comch_data_path_high_speed_common.c`` ported to doca_py.

Control path: the command line (``register_comch_params``), the creation of a
configured server or client with its own progress engine
(``init_comch_ctrl_path_server`` / ``init_comch_ctrl_path_client``), and the callbacks
the four samples share (send task callbacks, state-changed callbacks, consumer events)
with the progress loop (``progress_until``).

Data path: a producer and a consumer on an established connection, each with its own
progress engine as in the C samples (``comch_data_path_send_msg`` /
``comch_data_path_recv_msg``). A producer send to a consumer that has no receive posted
is refused by ``submit()`` with ``DocaAgain``: the task stays with the caller, which
submits it again between progress rounds (the C sample's ``do { submit } while (AGAIN)``).
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py import comch
from doca_py.comch import (ComchClient, ComchConnection, ComchConsumer, ComchConsumerTaskPostRecv, ComchProducer,
                           ComchProducerTaskSend, ComchServer, ComchTaskSend)
from doca_py.errors import DocaAgain, DocaUnexpected

from _common import SLEEP_IN_SECONDS, request_stop

log = logging.getLogger("COMCH_COMMON")

MAX_SAMPLE_TXT_SIZE = 4080  # maximum size of user input text for the sample
CC_REC_QUEUE_SIZE = 10  # maximum amount of messages in queue
CC_SEND_TASK_NUM = 10  # maximum CC send task number
CC_DATA_PATH_TASK_NUM = 2  # maximum amount of CC consumer and producer task number
CC_DATA_PATH_MAX_MSG_SIZE = 1024 * 1024  # CC data path maximum message size
STR_START_DATA_PATH_TEST = b"start_data_path_test"  # the negotiation messages between client and server
STR_STOP_DATA_PATH_TEST = b"stop_data_path_test"
INVALID_CONSUMER_ID = 0xFFFF

SendCallback = Callable[[ComchTaskSend, Any, Any], None]
StateCallback = Callable[[Any, d.Ctx, d.CtxState, d.CtxState], None]


# -- command line ---------------------------------------------------------------------------------
def _text(text: str) -> str:
    if len(text.encode()) > MAX_SAMPLE_TXT_SIZE:
        raise argparse.ArgumentTypeError(f"text exceeds the maximum size of {MAX_SAMPLE_TXT_SIZE} bytes")
    return text


def register_comch_params(parser: argparse.ArgumentParser, pci_addr: str, rep_pci_addr: str, text: str) -> None:
    """``register_comch_params`` with the defaults each sample's ``main`` sets."""
    parser.add_argument("-p", "--pci-addr", default=pci_addr, help="DOCA Comch device PCI address")
    parser.add_argument("-r", "--rep-pci", default=rep_pci_addr,
                        help="DOCA Comch device representor PCI address (server side only)")
    parser.add_argument("-t", "--text", type=_text, default=text, help="Text to be sent to the other side of channel")


# -- control path ---------------------------------------------------------------------------------
@dataclass
class CtrlPathServerCbConfig:
    """``struct comch_ctrl_path_server_cb_config``."""

    send_task_comp_cb: SendCallback
    send_task_comp_err_cb: SendCallback
    msg_recv_cb: comch.MsgRecvCallback
    server_connection_event_cb: comch.ConnectionStatusCallback
    server_disconnection_event_cb: comch.ConnectionStatusCallback
    ctx_user_data: Any
    ctx_state_changed_cb: StateCallback
    data_path_mode: bool = False
    new_consumer_cb: comch.ConsumerCallback | None = None
    expired_consumer_cb: comch.ConsumerCallback | None = None


@dataclass
class CtrlPathClientCbConfig:
    """``struct comch_ctrl_path_client_cb_config``."""

    send_task_comp_cb: SendCallback
    send_task_comp_err_cb: SendCallback
    msg_recv_cb: comch.MsgRecvCallback
    ctx_user_data: Any
    ctx_state_changed_cb: StateCallback
    data_path_mode: bool = False
    new_consumer_cb: comch.ConsumerCallback | None = None
    expired_consumer_cb: comch.ConsumerCallback | None = None


def init_comch_ctrl_path_server(server_name: str, hw_dev: d.Dev, rep_dev: d.DevRep,
                                cb_cfg: CtrlPathServerCbConfig) -> tuple[ComchServer, d.Pe]:
    """``init_comch_ctrl_path_server``: a configured, started server on its own Pe."""
    pe = d.Pe()
    try:
        server = ComchServer(hw_dev, rep_dev, server_name)
        pe.connect_ctx(server)
        server.set_state_changed_cb(cb_cfg.ctx_state_changed_cb)
        server.task_send_set_conf(cb_cfg.send_task_comp_cb, cb_cfg.send_task_comp_err_cb, CC_SEND_TASK_NUM)
        server.event_msg_recv_register(cb_cfg.msg_recv_cb)
        server.event_connection_status_changed_register(cb_cfg.server_connection_event_cb,
                                                        cb_cfg.server_disconnection_event_cb)
        if cb_cfg.data_path_mode:
            assert cb_cfg.new_consumer_cb is not None and cb_cfg.expired_consumer_cb is not None
            server.event_consumer_register(cb_cfg.new_consumer_cb, cb_cfg.expired_consumer_cb)
        server.set_max_msg_size(comch.cap_get_max_msg_size(hw_dev.as_devinfo()))
        server.set_recv_queue_size(CC_REC_QUEUE_SIZE)
        server.user_data = cb_cfg.ctx_user_data  # doca_ctx_set_user_data
        server.start()
    except BaseException:
        pe.close()
        raise
    return server, pe


def clean_comch_ctrl_path_server(server: ComchServer, pe: d.Pe) -> None:
    server.close()
    pe.close()


def init_comch_ctrl_path_client(server_name: str, hw_dev: d.Dev,
                                cb_cfg: CtrlPathClientCbConfig) -> tuple[ComchClient, d.Pe]:
    """``init_comch_ctrl_path_client``: a configured client on its own Pe, started (STARTING
    until the server accepts it)."""
    pe = d.Pe()
    try:
        client = ComchClient(hw_dev, server_name)
        pe.connect_ctx(client)
        client.set_state_changed_cb(cb_cfg.ctx_state_changed_cb)
        client.task_send_set_conf(cb_cfg.send_task_comp_cb, cb_cfg.send_task_comp_err_cb, CC_SEND_TASK_NUM)
        client.event_msg_recv_register(cb_cfg.msg_recv_cb)
        if cb_cfg.data_path_mode:
            assert cb_cfg.new_consumer_cb is not None and cb_cfg.expired_consumer_cb is not None
            client.event_consumer_register(cb_cfg.new_consumer_cb, cb_cfg.expired_consumer_cb)
        client.set_max_msg_size(comch.cap_get_max_msg_size(hw_dev.as_devinfo()))
        client.set_recv_queue_size(CC_REC_QUEUE_SIZE)
        client.user_data = cb_cfg.ctx_user_data  # doca_ctx_set_user_data
        client.start()  # DOCA_ERROR_IN_PROGRESS in C: the ctx is STARTING
    except BaseException:
        pe.close()
        raise
    return client, pe


def clean_comch_ctrl_path_client(client: ComchClient, pe: d.Pe) -> None:
    client.close()
    pe.close()


class SendTracker:
    """Stops a server or client only once its own send tasks have completed.

    The C samples call ``doca_ctx_stop`` right after submitting their last message (or
    on a reply that can overtake the completion of their own send). A stop flushes the
    tasks still in flight — their error callback would report the flush as a failure —
    so the ports ask for the stop and carry it out when no send is left in flight."""

    def __init__(self, ctx: d.Ctx) -> None:
        self.ctx = ctx
        self.in_flight = 0
        self.stop_requested = False

    def submitted(self) -> None:
        self.in_flight += 1

    def completed(self) -> None:
        self.in_flight -= 1
        if self.stop_requested and not self.in_flight:
            request_stop(self.ctx)

    def stop(self) -> None:
        self.stop_requested = True
        if not self.in_flight:
            request_stop(self.ctx)


def send_msg(endpoint: ComchServer | ComchClient, tracker: SendTracker, connection: ComchConnection,
             msg: bytes) -> None:
    """``server_send_msg`` / ``client_send_msg``: allocate a send task and submit it."""
    task = endpoint.task_send_alloc_init(connection, msg)
    try:
        task.submit()
    except d.DocaError:
        task.free()
        raise
    tracker.submitted()


# -- control path: the callbacks and loop every comch sample shares --------------------------------
# The samples keep their result and finish flags under their C names (``result`` / ``finish``,
# ``server_result`` / ``server_finish``, ...): *result_attr* and *finish_attr* name them.
def server_objects_of(connection: ComchConnection) -> Any:
    """``doca_comch_server_get_server_ctx`` + ``doca_ctx_get_user_data``: the sample's objects."""
    server = connection.get_server_ctx()
    assert server is not None
    return server.user_data


def client_objects_of(connection: ComchConnection) -> Any:
    """``doca_comch_client_get_client_ctx`` + ``doca_ctx_get_user_data``: the sample's objects."""
    client = connection.get_client_ctx()
    assert client is not None
    return client.user_data


SendTaskCallback = Callable[[ComchTaskSend, Any, Any], None]


def send_task_callbacks(sample_log: logging.Logger, success_msg: str,
                        result_attr: str = "result") -> tuple[SendTaskCallback, SendTaskCallback]:
    """The samples' send task completion and error callbacks: record the result, free the
    task, tell the objects' ``tracker`` (an error also stops the ctx)."""

    def send_task_completion_callback(task: ComchTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
        setattr(ctx_user_data, result_attr, d.ErrorCode.SUCCESS)
        sample_log.info(success_msg)
        task.free()
        tracker: SendTracker = ctx_user_data.tracker
        tracker.completed()

    def send_task_completion_err_callback(task: ComchTaskSend, task_user_data: Any, ctx_user_data: Any) -> None:
        setattr(ctx_user_data, result_attr, task.get_status())
        sample_log.error("Message failed to send with error = %s", task.exception())
        task.free()
        tracker: SendTracker = ctx_user_data.tracker
        tracker.completed()
        tracker.stop()

    return send_task_completion_callback, send_task_completion_err_callback


StateChangedCallback = Callable[[Any, d.Ctx, d.CtxState, d.CtxState], None]


def server_state_changed_callback(sample_log: logging.Logger, finish_attr: str = "finish") -> StateChangedCallback:
    """The servers' state-changed callback: log the states; IDLE ends the progress loop."""

    def callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
        if next_state == d.CtxState.IDLE:
            sample_log.info("CC server context has been stopped")
            setattr(user_data, finish_attr, True)  # we can stop progressing the PE
        elif next_state == d.CtxState.STARTING:
            sample_log.error("CC server context entered into starting state. Unexpected transition")
        elif next_state == d.CtxState.RUNNING:
            sample_log.info("CC server context is running. Waiting for clients to connect")
        elif next_state == d.CtxState.STOPPING:
            sample_log.info("CC server context entered into stopping state. Terminating connections with clients")

    return callback


def client_state_changed_callback(sample_log: logging.Logger, on_running: Callable[[Any], None],
                                  finish_attr: str = "finish") -> StateChangedCallback:
    """The clients' state-changed callback: log the states, *on_running* (the sample's own
    step) once connected; IDLE ends the progress loop."""

    def callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState, next_state: d.CtxState) -> None:
        if next_state == d.CtxState.IDLE:
            sample_log.info("CC client context has been stopped")
            setattr(user_data, finish_attr, True)  # we can stop progressing the PE
        elif next_state == d.CtxState.STARTING:
            sample_log.info("CC client context entered into starting state. Waiting for connection establishment")
        elif next_state == d.CtxState.RUNNING:
            on_running(user_data)
        elif next_state == d.CtxState.STOPPING:
            sample_log.info("CC client context entered into stopping state. Waiting for connection termination")

    return callback


def server_disconnection_event_callback(sample_log: logging.Logger) -> Callable[[ComchConnection, bool], None]:
    """The servers' disconnection event callback: only a failure is logged."""

    def callback(connection: ComchConnection, change_success: bool) -> None:
        if not change_success:
            sample_log.error("Failed disconnection received")

    return callback


def new_consumer_callback(sample_log: logging.Logger, objects_of: Callable[[ComchConnection], Any]
                          ) -> Callable[[ComchConnection, int], None]:
    """The data path samples' new consumer callback: remember the peer's consumer id."""

    def callback(connection: ComchConnection, remote_consumer_id: int) -> None:
        objects_of(connection).data_path.remote_consumer_id = remote_consumer_id
        sample_log.info("Got a new remote consumer with ID = [%d]", remote_consumer_id)

    return callback


def expired_consumer_callback(connection: ComchConnection, remote_consumer_id: int) -> None:
    """Not in use."""


def progress_until(pe: d.Pe | None, done: Callable[[], bool]) -> None:
    """Progress *pe* until *done*."""
    assert pe is not None
    while not done():
        if not pe.progress():
            time.sleep(SLEEP_IN_SECONDS)


# -- data path: local memory ----------------------------------------------------------------------
@dataclass
class LocalMemBufs:
    """``struct local_mem_bufs``: one mmap over local memory and an inventory for its buffers."""

    mmap: d.Mmap | None = None
    buf_inv: d.BufInventory | None = None


def init_local_mem_bufs(local: LocalMemBufs, dev: d.Dev, mem: bytearray, max_bufs: int) -> None:
    """``init_local_mem_bufs``: an inventory of *max_bufs*, an mmap of *mem* the device may access."""
    local.buf_inv = d.BufInventory(max_bufs, start=False)
    local.buf_inv.start()
    local.mmap = d.Mmap()
    local.mmap.add_dev(dev)
    local.mmap.set_permissions(d.AccessFlag.PCI_READ_WRITE)
    local.mmap.set_memrange(mem)
    local.mmap.start()


def clean_local_mem_bufs(local: LocalMemBufs) -> None:
    if local.mmap is not None:
        local.mmap.close()
        local.mmap = None
    if local.buf_inv is not None:
        local.buf_inv.close()
        local.buf_inv = None


# -- data path: objects ---------------------------------------------------------------------------
@dataclass
class ComchDataPathObjects:
    """``struct comch_data_path_objects``."""

    text: str
    hw_dev: d.Dev | None = None
    pe: d.Pe | None = None  # the connection's (server's or client's) Pe
    connection: ComchConnection | None = None
    consumer: ComchConsumer | None = None
    consumer_pe: d.Pe | None = None
    consumer_mem: LocalMemBufs = field(default_factory=LocalMemBufs)
    producer: ComchProducer | None = None
    producer_pe: d.Pe | None = None
    producer_mem: LocalMemBufs = field(default_factory=LocalMemBufs)
    remote_consumer_id: int = 0  # consumer ID on the peer side (0: not announced yet)
    producer_result: d.ErrorCode = d.ErrorCode.SUCCESS
    producer_finish: bool = False
    consumer_result: d.ErrorCode = d.ErrorCode.SUCCESS
    consumer_finish: bool = False
    #: A producer send ``submit()`` refused with AGAIN: submitted again by the send loop.
    pending_send: ComchProducerTaskSend | None = None


# -- data path: producer --------------------------------------------------------------------------
def producer_send_task_completion_callback(task: ComchProducerTaskSend, task_user_data: Any,
                                           ctx_user_data: Any) -> None:
    data_path: ComchDataPathObjects = ctx_user_data
    data_path.producer_result = d.ErrorCode.SUCCESS
    log.info("Producer task sent successfully")
    buf = task.get_buf()
    task.free()
    buf.dec_refcount()
    assert data_path.producer is not None
    request_stop(data_path.producer)


def producer_send_task_completion_err_callback(task: ComchProducerTaskSend, task_user_data: Any,
                                               ctx_user_data: Any) -> None:
    data_path: ComchDataPathObjects = ctx_user_data
    data_path.producer_result = task.get_status()
    log.error("Producer message failed to send with error = %s", task.exception())
    buf = task.get_buf()
    task.free()
    buf.dec_refcount()
    assert data_path.producer is not None
    request_stop(data_path.producer)


def submit_pending_send(data_path: ComchDataPathObjects) -> None:
    """One turn of ``do { submit } while (AGAIN)``: keep the task if the consumer has no receive posted."""
    task = data_path.pending_send
    assert task is not None
    try:
        task.submit()
    except DocaAgain:
        return  # the remote consumer has no receive posted yet: try again after progressing
    except d.DocaError as exc:
        data_path.pending_send = None
        buf = task.get_buf()
        task.free()
        buf.dec_refcount()
        log.error("Failed submitting send task with error = %s", exc)
        data_path.producer_result = d.ErrorCode(exc.code)
        assert data_path.producer is not None
        request_stop(data_path.producer)
        return
    data_path.pending_send = None


def producer_send_msg(data_path: ComchDataPathObjects) -> None:
    """``producer_send_msg``: the text's buffer to the remote consumer."""
    mem = data_path.producer_mem
    assert mem.buf_inv is not None and mem.mmap is not None and data_path.producer is not None
    base, length = mem.mmap.get_memrange()
    buf = mem.buf_inv.buf_get_by_data(mem.mmap, base, length)
    try:
        task = data_path.producer.task_send_alloc_init(buf, None, data_path.remote_consumer_id)
    except d.DocaError:
        buf.dec_refcount()
        raise
    data_path.pending_send = task
    submit_pending_send(data_path)


def producer_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                    next_state: d.CtxState) -> None:
    data_path: ComchDataPathObjects = user_data
    if next_state == d.CtxState.IDLE:
        log.info("CC producer context has been stopped")
        data_path.producer_finish = True  # we can stop progressing the PE
    elif next_state == d.CtxState.STARTING:
        log.info("CC producer context entered into starting state")
    elif next_state == d.CtxState.RUNNING:
        log.info("CC producer context is running. Posting message to consumer, waiting finish")
        try:
            producer_send_msg(data_path)
        except d.DocaError as exc:
            log.error("Failed to submit producer send task with error = %s", exc)
            data_path.producer_result = d.ErrorCode(exc.code)
            request_stop(ctx)
    elif next_state == d.CtxState.STOPPING:
        log.info("CC producer context entered into stopping state")


def init_comch_producer(connection: ComchConnection, user_data: Any) -> tuple[ComchProducer, d.Pe]:
    """``init_comch_producer``: a producer on *connection*, with its own Pe, started."""
    pe = d.Pe()
    try:
        producer = ComchProducer(connection)
        pe.connect_ctx(producer)
        producer.set_state_changed_cb(producer_state_changed_callback)
        producer.task_send_set_conf(producer_send_task_completion_callback,
                                    producer_send_task_completion_err_callback, CC_DATA_PATH_TASK_NUM)
        producer.user_data = user_data
        producer.start()
    except BaseException:
        pe.close()
        raise
    return producer, pe


def clean_comch_producer(producer: ComchProducer | None, pe: d.Pe | None) -> None:
    if producer is not None:
        producer.close()
    if pe is not None:
        pe.close()


def comch_data_path_send_msg(data_path: ComchDataPathObjects) -> d.ErrorCode:
    """Send the text to the peer's consumer with a producer."""
    assert data_path.pe is not None and data_path.hw_dev is not None and data_path.connection is not None
    # The peer announces its consumer (new_consumer event) before it can be sent to.
    while data_path.remote_consumer_id == 0:
        if not data_path.pe.progress():
            time.sleep(SLEEP_IN_SECONDS)
    if data_path.remote_consumer_id == INVALID_CONSUMER_ID:
        raise DocaUnexpected("the peer stopped the data path test")

    pmem = data_path.producer_mem
    init_local_mem_bufs(pmem, data_path.hw_dev, bytearray(data_path.text.encode()), 1)
    try:
        data_path.producer, data_path.producer_pe = init_comch_producer(data_path.connection, data_path)
        # Send the message: the RUNNING callback allocates and submits; a send refused with
        # AGAIN is submitted again here, between progress rounds.
        while not data_path.producer_finish:
            if data_path.pending_send is not None:
                submit_pending_send(data_path)
            if not data_path.producer_pe.progress():
                time.sleep(SLEEP_IN_SECONDS)
    finally:
        clean_comch_producer(data_path.producer, data_path.producer_pe)
        data_path.producer = data_path.producer_pe = None
        clean_local_mem_bufs(pmem)
    return data_path.producer_result


# -- data path: consumer --------------------------------------------------------------------------
def consumer_recv_task_completion_callback(task: ComchConsumerTaskPostRecv, task_user_data: Any,
                                           ctx_user_data: Any) -> None:
    data_path: ComchDataPathObjects = ctx_user_data
    buf = task.get_buf()
    # The producer's bytes are the buffer's data now, in the completion callback.
    recv_msg = bytes(buf.data_view())
    log.info("Message received: '%s'", recv_msg.decode(errors="replace"))
    data_path.consumer_result = d.ErrorCode.SUCCESS
    task.free()
    buf.dec_refcount()
    assert data_path.consumer is not None
    request_stop(data_path.consumer)


def consumer_recv_task_completion_err_callback(task: ComchConsumerTaskPostRecv, task_user_data: Any,
                                               ctx_user_data: Any) -> None:
    data_path: ComchDataPathObjects = ctx_user_data
    data_path.consumer_result = task.get_status()
    log.error("Consumer failed to recv message with error = %s", task.exception())
    buf = task.get_buf()
    task.free()
    buf.dec_refcount()
    assert data_path.consumer is not None
    request_stop(data_path.consumer)


def consumer_recv_msg(data_path: ComchDataPathObjects) -> None:
    """``consumer_recv_msg``: post one receive buffer of up to 1 MiB."""
    mem = data_path.consumer_mem
    assert mem.buf_inv is not None and mem.mmap is not None and data_path.consumer is not None
    base, _ = mem.mmap.get_memrange()
    buf = mem.buf_inv.buf_get_by_addr(mem.mmap, base, CC_DATA_PATH_MAX_MSG_SIZE)
    task = data_path.consumer.task_post_recv_alloc_init(buf)
    try:
        task.submit()
    except d.DocaError:
        task.free()
        buf.dec_refcount()
        raise


def consumer_state_changed_callback(user_data: Any, ctx: d.Ctx, prev_state: d.CtxState,
                                    next_state: d.CtxState) -> None:
    data_path: ComchDataPathObjects = user_data
    if next_state == d.CtxState.IDLE:
        log.info("CC consumer context has been stopped")
        # A move to IDLE from neither RUNNING nor STOPPING means there has been an error
        if prev_state not in (d.CtxState.RUNNING, d.CtxState.STOPPING):
            data_path.consumer_result = d.ErrorCode.UNEXPECTED
        data_path.consumer_finish = True  # we can stop progressing the PE
    elif next_state == d.CtxState.STARTING:
        log.info("CC consumer context entered into starting state. Waiting consumer producer negotiation finish")
    elif next_state == d.CtxState.RUNNING:
        log.info("CC consumer context is running. Receiving message from producer, waiting finish")
        try:
            consumer_recv_msg(data_path)
        except d.DocaError as exc:
            log.error("Failed to submit consumer recv task with error = %s", exc)
            data_path.consumer_result = d.ErrorCode(exc.code)
            request_stop(ctx)
    elif next_state == d.CtxState.STOPPING:
        log.info("CC consumer context entered into stopping state")


def init_comch_consumer(connection: ComchConnection, user_mmap: d.Mmap, user_data: Any) -> tuple[ComchConsumer,
                                                                                                    d.Pe]:
    """``init_comch_consumer``: a consumer on *connection*, with its own Pe, started (STARTING)."""
    pe = d.Pe()
    try:
        consumer = ComchConsumer(connection, user_mmap)
        pe.connect_ctx(consumer)
        consumer.set_state_changed_cb(consumer_state_changed_callback)
        consumer.task_post_recv_set_conf(consumer_recv_task_completion_callback,
                                         consumer_recv_task_completion_err_callback, CC_DATA_PATH_TASK_NUM)
        consumer.user_data = user_data
        consumer.start()  # DOCA_ERROR_IN_PROGRESS in C: RUNNING comes from progress
    except BaseException:
        pe.close()
        raise
    return consumer, pe


def clean_comch_consumer(consumer: ComchConsumer | None, pe: d.Pe | None) -> None:
    if consumer is not None:
        consumer.close()
    if pe is not None:
        pe.close()


def comch_data_path_recv_msg(data_path: ComchDataPathObjects) -> d.ErrorCode:
    """Receive one message from the peer's producer with a consumer."""
    assert data_path.pe is not None and data_path.hw_dev is not None and data_path.connection is not None
    cmem = data_path.consumer_mem
    init_local_mem_bufs(cmem, data_path.hw_dev, bytearray(CC_DATA_PATH_MAX_MSG_SIZE), 1)
    assert cmem.mmap is not None
    try:
        data_path.consumer, data_path.consumer_pe = init_comch_consumer(data_path.connection, cmem.mmap,
                                                                        data_path)
        # Receive the message: progress the connection's Pe (consumer announcements) and the consumer's.
        while not data_path.consumer_finish:
            if not data_path.pe.progress():
                time.sleep(SLEEP_IN_SECONDS)
            if not data_path.consumer_pe.progress():
                time.sleep(SLEEP_IN_SECONDS)
    finally:
        clean_comch_consumer(data_path.consumer, data_path.consumer_pe)
        data_path.consumer = data_path.consumer_pe = None
        clean_local_mem_bufs(cmem)
    return data_path.consumer_result
