"""The Secure Channel flow (``sc_start``): metadata exchange, the two fast-path threads while the
main thread progresses the comch connection, the end handshake and the statistics.

1. Each side sends ``START`` with the number and size of the messages its producer will send and
   waits for the peer's (`PeerMessages`, the C app's ``comch_recv_event_cb``).
2. A producer thread sends this side's messages to the consumer the peer announces (the
   new-consumer event); a consumer thread receives the peer's. The main thread keeps progressing
   the comch connection, which carries the consumers' announcements.
3. Once both threads succeeded the DPU sends ``END``; the host waits for it, then disconnects.
4. Both print the C app's two statistics lines.

A malformed metadata message, a thread's failure, the peer going away or Ctrl-C end the run with
``EXCEPTION: <reason>`` and exit status 1.
"""

from __future__ import annotations

import logging
import threading
import time

from apps.common.comch_channel import POLL_INTERVAL, Aborted, ComchChannel
from apps.common.errors import ProtocolError, StorageAppError
from doca_py.errors import ErrorCode

from .config import SecureChannelConfig
from .wire import Metadata, MsgType, pack_metadata, parse_metadata
from .worker import ConsumerThread, ProducerThread, ThreadResult

__all__ = ["SERVER_NAME", "PeerMessages", "run", "sc_start", "statistics_lines", "LINGER", "LOSS_GRACE", "LOSS_TIMEOUT"]

SERVER_NAME = "secure_channel_server"
"""The comch server name (``SERVER_NAME`` of the C app)."""
LINGER = 10.0
"""Seconds the DPU waits, after ``END``, for the host to disconnect."""
LOSS_GRACE = 2.0
"""Seconds the main thread keeps progressing the comch channel after a fast-path thread failed for a reason
of its own while the connection still looked up: should the connection go meanwhile, the loss is reported."""
LOSS_TIMEOUT = 30.0
"""Seconds the main thread waits at most for the comch channel to report the loss of a connection a
fast-path thread already met (`ThreadResult.lost`): the transport reports the loss on the channel's progress
engine only after it failed the thread's tasks, and on a loaded machine that may come much later than a
grace; this bound is only a safety net, after which the message says what was seen."""

log = logging.getLogger("apps.secure_channel")


class PeerMessages:
    """What the peer said on the comch connection (``comch_recv_event_cb``), and its consumers."""

    def __init__(self) -> None:
        self.start: Metadata | None = None
        """The peer's ``START``: how many messages of which size its producer sends."""
        self.ended = False
        """Whether the peer sent ``END``."""
        self.error: str | None = None
        """The first malformed or unexpected message, described."""
        self.consumer_ids: list[int] = []
        """The peer's consumers, in the order they were announced."""
        self.producer: ProducerThread | None = None

    def on_message(self, msg: memoryview) -> None:
        """A comch message from the peer."""
        try:
            meta = parse_metadata(msg)
        except ProtocolError as exc:
            self._bad(str(exc))
            return
        if meta.type is MsgType.END:
            if self.start is None:
                self._bad("the peer sent END before START")
            self.ended = True
        elif self.start is not None:
            self._bad("the peer sent a second START")
        else:
            self.start = meta

    def on_new_consumer(self, consumer_id: int) -> None:
        """``new_consumer_callback``: the peer's consumer, for this side's producer."""
        self.consumer_ids.append(consumer_id)
        if self.producer is not None and len(self.consumer_ids) == 1:
            self.producer.set_consumer(consumer_id)

    def _bad(self, text: str) -> None:
        log.error("Got a bad metadata message on comch: %s", text)
        if self.error is None:
            self.error = text


def statistics_lines(sent: ThreadResult, received: ThreadResult) -> list[str]:
    """The C app's two statistics lines."""
    return [f"Producer sent {sent.processed} messages in approximately {sent.elapsed_ms:0.4f} milliseconds",
            f"Consumer received {received.processed} messages in approximately {received.elapsed_ms:0.4f} "
            "milliseconds"]


def _check(channel: ComchChannel, peer: PeerMessages, abort: threading.Event, what: str) -> None:
    if peer.error is not None:
        raise ProtocolError(f"got a bad metadata message on comch while {what}: {peer.error}")
    if abort.is_set():
        raise Aborted(f"stopped while {what}")
    channel.check()


def _await_loss(channel: ComchChannel, within: float) -> None:
    """Progress *channel* until it reports a lost connection, for at most *within* seconds."""
    deadline = time.monotonic() + within
    while channel.connected and time.monotonic() < deadline:
        channel.progress(POLL_INTERVAL)


def _thread_failure(channel: ComchChannel, producer: ProducerThread,
                    consumer: ConsumerThread) -> StorageAppError | None:
    """The first thread's failure; a thread that failed because the peer went away says so only
    indirectly, so then the peer's departure is the failure: the channel reports it, as late as the
    machine makes it (`LOSS_TIMEOUT` as a safety net)."""
    for result, what in ((producer.result, "Send"), (consumer.result, "Receive")):
        if result.error is not None:
            _await_loss(channel, LOSS_TIMEOUT if result.lost else LOSS_GRACE)
            if not channel.connected:
                # a fast-path task that failed with IO_FAILED tells a stopped peer from one that left
                channel.unanswered = channel.unanswered or producer.result.unanswered or consumer.result.unanswered
                return channel.peer_closed()
            text = f"{what} thread finished unsuccessfully: {result.error}"
            if result.lost:
                text += f" (the comch connection looked lost to it, but the channel did not report a loss within " \
                        f"{LOSS_TIMEOUT:g} s)"
            return StorageAppError(ErrorCode.BAD_STATE, text)
    return None


def _run_threads(config: SecureChannelConfig, channel: ComchChannel, peer: PeerMessages,
                 abort: threading.Event) -> tuple[ThreadResult, ThreadResult]:
    assert peer.start is not None and channel.connection is not None
    stop = threading.Event()
    producer = ProducerThread(channel.connection, channel.dev, config.num_msgs, config.msg_size, stop)
    consumer = ConsumerThread(channel.connection, channel.dev, peer.start.num_msgs, peer.start.msg_size, stop)
    peer.producer = producer
    if peer.consumer_ids:
        producer.set_consumer(peer.consumer_ids[0])
    producer.start()
    consumer.start()
    failure: BaseException | None = None
    while not (producer.done.is_set() and consumer.done.is_set()):
        if failure is None:
            failure = _thread_failure(channel, producer, consumer)
            if failure is None:
                try:
                    _check(channel, peer, abort, "the messages were exchanged")
                except (StorageAppError, Aborted) as exc:
                    failure = exc
            if failure is not None:
                stop.set()  # the other thread stops its fast path and cleans up
        channel.progress(POLL_INTERVAL)
    failure = failure or _thread_failure(channel, producer, consumer)
    if failure is not None:
        raise failure
    log.debug("%d sends submitted for %d messages; %d of %d messages received held the producer's byte pattern",
              producer.submitted, producer.total, consumer.intact, consumer.result.processed)
    return producer.result, consumer.result


def sc_start(config: SecureChannelConfig, channel: ComchChannel, peer: PeerMessages,
             abort: threading.Event) -> list[str]:
    """Exchange the metadata, run the threads, finish with the END handshake; the statistics lines."""
    channel.send(pack_metadata(MsgType.START, config.num_msgs, config.msg_size), abort)
    while peer.start is None:
        _check(channel, peer, abort, "waiting for the peer's metadata")
        channel.progress(POLL_INTERVAL)
    log.debug("The peer sends %d messages of %d bytes", peer.start.num_msgs, peer.start.msg_size)
    sent, received = _run_threads(config, channel, peer, abort)
    if channel.is_server:
        channel.send(pack_metadata(MsgType.END, config.num_msgs, config.msg_size), abort)
        channel.progress()
    else:
        while not peer.ended:
            _check(channel, peer, abort, "waiting for the DPU's END message")
            channel.progress(POLL_INTERVAL)
    return statistics_lines(sent, received)


def run(config: SecureChannelConfig, abort: threading.Event) -> int:
    """Open the comch channel (server on a DPU device, client on a host device) and run."""
    peer = PeerMessages()
    channel = ComchChannel.open(SERVER_NAME, config.pci_addr, config.rep_pci or None, peer.on_message,
                                on_new_consumer=peer.on_new_consumer, on_expired_consumer=lambda cid: None)
    linger = 0.0
    try:
        channel.start(abort)
        started = time.monotonic()
        for line in sc_start(config, channel, peer, abort):
            log.info("%s", line)
        log.debug("Run took %.3f s", time.monotonic() - started)
        linger = LINGER if channel.is_server else 0.0  # the host disconnects once END arrived
        return 0
    finally:
        channel.close(linger=linger)
