"""``comch_utils`` of NVIDIA's DOCA applications: one comch connection between a host client and a
DPU server, shared by File Compression and Secure Channel.

The C helper opens the device by PCI address and, being built for one side, is a server on the
DPU (with the host's representor) or a client on the host. One Python program serves both
sides, so the role follows the device: a device that can run a comch server
(``doca_comch_cap_server_is_supported``, the DPU) makes a server, one that can run a client makes
a client. Both set the connection's largest message to the device's
``doca_comch_cap_get_max_msg_size`` and size the send task pool to `COMCH_NUM_TASKS`; the server
keeps exactly one client (a second one is disconnected).

Differences from the C helper, which spins on ``doca_pe_progress`` and never looks at the
connection again: `ComchChannel.progress` sleeps on the Pe's notification handle, and the peer
going away (server: the client's disconnect event; client: the ctx leaving RUNNING) is reported
by `ComchChannel.lost`, so the apps fail with a clear error instead of waiting for ever.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import doca_py as d
from doca_py import comch
from doca_py.comch import ComchClient, ComchConnection, ComchServer, ComchTaskSend
from doca_py.errors import (DocaAgain, DocaBadState, DocaConnectionReset, DocaError, DocaInvalidValue, DocaNoMemory,
                            DocaNotConnected, DocaNotSupported, DocaTimeout, ErrorCode)
from doca_py.types import CtxState, DevinfoRepFilter

from apps.common.errors import PeerClosedError
from apps.common.runtime.device import open_device
from apps.common.runtime.doca_features import doca_features

__all__ = ["ComchChannel", "COMCH_NUM_TASKS", "POLL_INTERVAL", "MessageCallback", "ConsumerCallback",
           "Aborted"]

COMCH_NUM_TASKS = 1024
"""Send tasks of the channel (``COMCH_NUM_TASKS`` of comch_utils.c)."""
POLL_INTERVAL = 0.1
"""Longest sleep of one wait, so an abort (Ctrl-C) is seen quickly."""

log = logging.getLogger("apps.comch_utils")

#: ``cb(message)``: a control message, valid only during the call (copy it to keep it).
MessageCallback = Callable[[memoryview], None]
#: ``cb(consumer_id)``: the peer created (or destroyed) a consumer.
ConsumerCallback = Callable[[int], None]


class Aborted(Exception):
    """The program was asked to stop (SIGINT/SIGTERM) while waiting."""


class ComchChannel:
    """One comch connection: `open`, `send`, `progress`, `close` (``comch_utils_*``).

    *on_message* runs inside `progress` for each message received, like the C app's receive
    callbacks; *on_new_consumer* / *on_expired_consumer* likewise for the peer's consumers
    (the fast path of Secure Channel).
    """

    def __init__(self, name: str, dev: d.Dev, rep: d.DevRep | None, on_message: MessageCallback, *,
                 on_new_consumer: ConsumerCallback | None = None,
                 on_expired_consumer: ConsumerCallback | None = None) -> None:
        self.name = name
        """The comch server name."""
        self.dev = dev
        """The comch device (owned: closed by `close`)."""
        self.rep = rep
        """The host representor on the server side (owned), ``None`` on the client side."""
        self.is_server = rep is not None
        """Whether this side is the DPU's server."""
        self.max_msg_size = comch.cap_get_max_msg_size(dev.as_devinfo())
        """Largest message of the connection (``comch_utils_get_max_buffer_size``)."""
        self.connection: ComchConnection | None = None
        """The one active connection, once `wait_connected` returned."""
        self.send_error: str | None = None
        """Why a send task failed, if one did."""
        self.unanswered = False
        """Whether a send failed with ``IO_FAILED``: the peer did not answer within the transport's retry
        window (stopped, hung or unreachable) and the connection was dropped."""
        self.refused_clients = 0
        """Clients refused because one was already connected (server): disconnected, or ignored on DOCA 2.6."""
        # DOCA 2.6 has no doca_comch_server_disconnect: there a refused client stays connected, ignored.
        self._can_disconnect = doca_features().comch_server_disconnect
        self._on_message = on_message
        self._new_consumer = on_new_consumer
        self._expired_consumer = on_expired_consumer
        self._disconnected = False
        self._ever_running = False
        self._started = False
        self.pe = d.Pe()
        """The channel's progress engine (progress it from one thread only)."""
        try:
            self.ctx: ComchServer | ComchClient
            if rep is not None:
                server = ComchServer(dev, rep, name)
                server.event_connection_status_changed_register(self._on_connect, self._on_disconnect)
                self.ctx = server
            else:
                self.ctx = ComchClient(dev, name)
                # RUNNING may be entered and left within one progress (a server refusing this client)
                self.ctx.set_state_changed_cb(self._state_changed)
            self.ctx.set_max_msg_size(self.max_msg_size)
            self.pe.connect_ctx(self.ctx)
            self.ctx.task_send_set_conf(self._sent, self._send_failed, COMCH_NUM_TASKS)
            self.ctx.event_msg_recv_register(self._on_msg)
            if on_new_consumer is not None or on_expired_consumer is not None:
                self.ctx.event_consumer_register(self._on_new, self._on_expired)
        except BaseException:
            self.pe.close()
            raise

    @classmethod
    def open(cls, name: str, pci_addr: str, rep_pci: str | None, on_message: MessageCallback, *,
             on_new_consumer: ConsumerCallback | None = None,
             on_expired_consumer: ConsumerCallback | None = None) -> ComchChannel:
        """Open the device *pci_addr* and build the server (DPU device, representor *rep_pci*) or
        the client (host device) of *name*; not started yet (`start`)."""
        dev = open_device(pci_addr)
        rep = None
        try:
            info = dev.as_devinfo()
            if ComchServer.cap_is_supported(info):
                if not rep_pci:
                    raise DocaInvalidValue("missing representor PCI address for the server (-r/--rep-pci): "
                                           f"{pci_addr} is a DPU device")
                rep = dev.open_rep_by_pci_addr(rep_pci, DevinfoRepFilter.NET)
            elif not ComchClient.cap_is_supported(info):
                raise DocaNotSupported(f"device {pci_addr} supports neither a comch server nor a comch client")
            return cls(name, dev, rep, on_message, on_new_consumer=on_new_consumer,
                       on_expired_consumer=on_expired_consumer)
        except BaseException:
            if rep is not None:
                rep.close()
            dev.close()
            raise

    # -- callbacks (inside Pe.progress) ------------------------------------------------------------
    def _sent(self, task: ComchTaskSend, user_data: object, ctx_user_data: object) -> None:
        task.free()

    def _send_failed(self, task: ComchTaskSend, user_data: object, ctx_user_data: object) -> None:
        status = task.get_status()
        if status is ErrorCode.IO_FAILED:
            self.unanswered = True
        if self.send_error is None:
            # The peer's death reaches us as a failed send or as the connection's status change, in
            # whichever order the two arrive: report it the same way.
            gone = status in (ErrorCode.CONNECTION_RESET, ErrorCode.NOT_CONNECTED, ErrorCode.CONNECTION_ABORTED)
            self.send_error = (str(self._gone_error()) if status is ErrorCode.IO_FAILED
                               else f"{self._gone_error()} (a send failed: {status.name})" if gone
                               else f"a comch send task failed: {status.name}")
        task.free()

    def _ours(self, conn: ComchConnection) -> bool:
        if self.connection is None and not self.is_server:
            self.connection = conn  # a client's messages may come in the progress that makes it RUNNING
        return conn is self.connection

    def _on_msg(self, msg: memoryview, conn: ComchConnection) -> None:
        if self._ours(conn):
            self._on_message(msg)

    def _on_new(self, conn: ComchConnection, consumer_id: int) -> None:
        if self._ours(conn) and self._new_consumer is not None:
            self._new_consumer(consumer_id)

    def _on_expired(self, conn: ComchConnection, consumer_id: int) -> None:
        if self._ours(conn) and self._expired_consumer is not None:
            self._expired_consumer(consumer_id)

    def _on_connect(self, conn: ComchConnection, ok: bool) -> None:
        if not ok:
            log.error("Connection event unsuccessful")
            return
        if self.connection is not None:
            self.refused_clients += 1
            if not self._can_disconnect:
                log.error("A connection already exists on the server - ignoring new attempt (DOCA 2.6 has no "
                          "doca_comch_server_disconnect)")
                return
            log.error("A connection already exists on the server - rejecting new attempt")
            try:
                assert isinstance(self.ctx, ComchServer)
                self.ctx.disconnect(conn)
            except DocaError as exc:
                log.error("Failed to properly reject connection: %s", exc)
            return
        self.connection = conn

    def _state_changed(self, user_data: object, ctx: d.Ctx, prev: CtxState, next_state: CtxState) -> None:
        if next_state is CtxState.RUNNING:
            self._ever_running = True

    def _on_disconnect(self, conn: ComchConnection, ok: bool) -> None:
        if conn is self.connection:
            self._disconnected = True

    # -- use -------------------------------------------------------------------------------------------
    @property
    def lost(self) -> bool:
        """Whether the peer went away: the server's client disconnected; the client left RUNNING, or
        stopped before it got there (a server that refused it)."""
        if self.is_server:
            return self._disconnected
        state = self.ctx.get_state()
        if state is CtxState.RUNNING:
            self._ever_running = True
            return False
        return self._started and (self._ever_running or state is not CtxState.STARTING)

    def start(self, abort: threading.Event, timeout: float | None = None) -> ComchConnection:
        """`start_ctx`, then `wait_connected`."""
        self.start_ctx()
        return self.wait_connected(abort, timeout)

    def start_ctx(self) -> None:
        """Start the server or client ctx (a client then connects from `progress`)."""
        self.ctx.start()
        self._started = True
        if self.is_server:
            log.info("Server waiting on a client to connect")

    def wait_connected(self, abort: threading.Event, timeout: float | None = None) -> ComchConnection:
        """Progress until the connection is up (server: one client; client: RUNNING), as the C
        helper does, forever unless *timeout* (``DocaTimeout``) or *abort* (`Aborted`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.is_server:
                if self.connection is not None:
                    log.info("Server connection established")
                    return self.connection
            elif self.ctx.get_state() == CtxState.RUNNING:
                self._ever_running = True
                assert isinstance(self.ctx, ComchClient)
                self.connection = self.ctx.get_connection()
                return self.connection
            elif self.lost:
                raise PeerClosedError("the comch server refused or dropped the connection")
            if abort.is_set():
                raise Aborted("stopped while waiting for the comch connection")
            if deadline is not None and time.monotonic() >= deadline:
                raise DocaTimeout(f"no comch connection on {self.name!r} within {timeout} s")
            self.pe.wait(POLL_INTERVAL)

    def progress(self, timeout: float = 0.0) -> bool:
        """Progress the channel's Pe, sleeping up to *timeout* seconds when idle; whether anything ran."""
        return self.pe.wait(timeout) if timeout > 0 else self.pe.progress()

    def _gone_error(self) -> PeerClosedError:
        peer = "client" if self.is_server else "server"
        if self.unanswered:
            return PeerClosedError(f"the comch {peer} did not answer within the retry window: it stopped or hangs "
                                   "(a send failed with IO_FAILED and the connection was dropped)")
        return PeerClosedError(f"the comch {peer} closed the connection")

    def peer_closed(self) -> PeerClosedError:
        """The error that says the peer went away: it closed the connection, or it stopped answering (a
        send failed with ``IO_FAILED``: the transport's retry window ran out, the connection dropped)."""
        # The failed sends that tell the two apart may still wait in the Pe: deliver them first
        for _ in range(64):
            if not self.pe.progress():
                break
        return self._gone_error()

    @property
    def connected(self) -> bool:
        """Whether the connection is up: false as soon as the transport knows the peer is gone, which
        may be before this channel's Pe reports it (`lost`)."""
        conn = self.connection
        return conn is not None and conn.is_connected() and not self.lost

    def check(self) -> None:
        """``PeerClosedError`` if the peer went away or a send failed."""
        if self.lost:
            raise self.peer_closed()
        if self.send_error is not None:
            raise PeerClosedError(self.send_error)

    def try_send(self, data: bytes | bytearray | memoryview) -> bool:
        """``comch_utils_send``: submit one message; ``False`` when no send task is free (the C
        helper's ``DOCA_ERROR_AGAIN``: progress and try again). ``DocaInvalidValue`` when longer
        than `max_msg_size`."""
        if len(data) > self.max_msg_size:
            raise DocaInvalidValue(f"message length of {len(data)} larger than max comch length of "
                                   f"{self.max_msg_size}")
        conn = self.connection
        if conn is None:
            raise PeerClosedError("no comch connection")
        try:
            task = self.ctx.task_send_alloc_init(conn, data)
        except (DocaNoMemory, DocaAgain):
            return False
        except (DocaNotConnected, DocaBadState, DocaConnectionReset):
            if self.lost or not conn.is_connected():
                raise self.peer_closed() from None
            raise
        try:
            task.submit()
        except DocaError:
            task.free()
            raise
        return True

    def send(self, data: bytes | bytearray | memoryview, abort: threading.Event | None = None) -> None:
        """Send one message, progressing while every send task is in flight; `PeerClosedError`
        if the peer goes away meanwhile."""
        while not self.try_send(data):
            self.check()
            if abort is not None and abort.is_set():
                raise Aborted("stopped while sending")
            self.progress(POLL_INTERVAL)

    def flush(self, timeout: float, abort: threading.Event | None = None) -> bool:
        """Progress until every submitted send completed (the messages are with the transport), at most
        *timeout* seconds or until *abort*; whether they all did."""
        deadline = time.monotonic() + timeout
        while self.ctx.get_num_inflight_tasks() > 0:
            left = deadline - time.monotonic()
            if left <= 0 or (abort is not None and abort.is_set()) or self.lost:
                return False
            self.pe.wait(min(POLL_INTERVAL, left))
        return True

    def wait_disconnected(self, timeout: float, abort: threading.Event | None = None) -> bool:
        """Server: progress until the client disconnected, at most *timeout* seconds or until *abort*;
        whether it did."""
        deadline = time.monotonic() + timeout
        if self.is_server and self.connection is not None:
            while not self._disconnected and time.monotonic() < deadline and not (abort and abort.is_set()):
                self.pe.wait(min(POLL_INTERVAL, max(deadline - time.monotonic(), 0.0)))
        return self._disconnected

    def close(self, linger: float = 0.0, abort: threading.Event | None = None) -> None:
        """``comch_utils_destroy``: a server first waits up to *linger* seconds for its client to
        disconnect (the C helper waits for ever), less once *abort* is set; then stop the ctx and
        close everything."""
        self.wait_disconnected(linger, abort)
        try:
            if self.ctx.get_state() != CtxState.IDLE:
                self.ctx.stop(wait=5.0)
        except DocaError as exc:
            log.debug("stopping the comch ctx: %s", exc)
        self.ctx.close()
        self.pe.close()
        if self.rep is not None:
            self.rep.close()
        self.dev.close()

    def __enter__(self) -> ComchChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
