"""Framing and the control channel over TCP and over a pluggable transport (spec §3.1)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from apps.storage.channels.control_channel import ControlChannel, FrameDecoder, TcpListener, TransportSink, connect_tcp
from apps.storage.wire.control import (
    ControlMessage, InitStorage, MessageType, StorageDetails, encode_frame, make_error_response, make_response,
)
from apps.common.errors import ControlRequestError, PeerClosedError, ProtocolError, StorageAppError
from doca_py.errors import ErrorCode

M = MessageType
QUERY = ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0)


def test_decoder_byte_by_byte_and_batched() -> None:
    msgs = [QUERY, ControlMessage(M.INIT_STORAGE_REQUEST, 1, 1, InitStorage(64, 2, b"blob")),
            ControlMessage(M.START_STORAGE_REQUEST, 2, 2)]
    stream = b"".join(encode_frame(m) for m in msgs)
    dec = FrameDecoder()
    got = []
    for i in range(len(stream)):
        dec.feed(stream[i:i + 1])
        m = dec.next_message()
        if m is not None:
            got.append(m)
    assert got == msgs and dec.buffered == 0
    dec.feed(stream)
    assert [dec.next_message() for _ in msgs] == msgs and dec.next_message() is None


def test_oversized_length_rejected_before_body() -> None:
    dec = FrameDecoder(max_body=4096)
    with pytest.raises(ProtocolError, match="announces a 4294967295-byte body, more than the 4096-byte limit"):
        dec.feed(b"\xff\xff\xff\xff")
    assert dec.buffered == 0
    with pytest.raises(ProtocolError):  # the decoder stays failed: the stream position is lost
        dec.feed(encode_frame(QUERY))


def test_body_shorter_than_prefix_and_unknown_type() -> None:
    with pytest.raises(ProtocolError, match="shorter than the 12-byte prefix"):
        FrameDecoder().feed(bytes.fromhex("00000004 00000001"))
    dec = FrameDecoder()
    dec.feed(bytes.fromhex("0000000C 00000063 00000000 00000000"))
    with pytest.raises(ProtocolError, match="unknown control message type 99"):
        dec.next_message()
    with pytest.raises(ValueError):
        FrameDecoder(max_body=4)


class MemoryTransport:
    """A transport like a comch connection: whole frames delivered through events."""

    def __init__(self) -> None:
        self.peer: MemoryTransport | None = None
        self.sink: TransportSink | None = None
        self.inbox: list[bytes | None] = []
        self.closed = False

    def set_sink(self, sink: TransportSink) -> None:
        self.sink = sink

    def send(self, frame: bytes) -> None:
        assert self.peer is not None
        self.peer.inbox.append(frame)

    def pump(self, timeout: float | None) -> None:
        assert self.sink is not None
        while self.inbox:
            item = self.inbox.pop(0)
            if item is None:
                self.sink.connection_lost(None)
            else:
                self.sink.data_received(item)

    def close(self) -> None:
        self.closed = True
        if self.peer is not None:
            self.peer.inbox.append(None)


def _pair() -> tuple[ControlChannel, ControlChannel]:
    a, b = MemoryTransport(), MemoryTransport()
    a.peer, b.peer = b, a
    return ControlChannel(a, name="a"), ControlChannel(b, name="b")


def test_pluggable_transport_request_response() -> None:
    client, server = _pair()
    client.send(QUERY)
    req = server.poll()
    assert req == QUERY
    server.send(make_response(req, StorageDetails(1 << 20, 4096)))
    resp = client.poll()
    assert resp is not None and resp.payload == StorageDetails(1 << 20, 4096)
    assert client.poll(0) is None
    client.close()
    with pytest.raises(PeerClosedError):
        server.poll(0)
    assert server.is_closed


def test_request_helper_raises_on_error_response() -> None:
    client, server = _pair()
    server.transport.send(encode_frame(make_error_response(QUERY, ErrorCode.NOT_FOUND, "nope")))
    with pytest.raises(ControlRequestError, match="query_storage_response id: 0 failed!: nope"):
        client.request(QUERY, timeout=0)


def test_receive_times_out_and_aborts() -> None:
    client, _ = _pair()
    with pytest.raises(StorageAppError, match="Timed out") as info:
        client.receive(0.0)
    assert info.value.code is ErrorCode.TIME_OUT
    with pytest.raises(StorageAppError, match="Aborted") as info:
        client.receive(None, should_abort=lambda: True)
    assert info.value.code is ErrorCode.CONNECTION_ABORTED


@pytest.fixture
def tcp_pair() -> Iterator[tuple[ControlChannel, ControlChannel]]:
    with TcpListener(0, host="127.0.0.1") as listener:
        client = connect_tcp("127.0.0.1", listener.port, timeout=5)
        server = listener.accept(5)
        assert server is not None
        try:
            yield client, server
        finally:
            client.close()
            server.close()


def test_tcp_round_trip(tcp_pair: tuple[ControlChannel, ControlChannel]) -> None:
    client, server = tcp_pair
    init = ControlMessage(M.INIT_STORAGE_REQUEST, 1, 1, InitStorage(128, 2, bytes(3000)))
    client.send(QUERY)
    client.send(init)
    assert server.receive(5) == QUERY
    assert server.receive(5) == init
    server.send(make_response(init))
    assert client.receive(5).type is M.INIT_STORAGE_RESPONSE


def test_tcp_peer_close_detected(tcp_pair: tuple[ControlChannel, ControlChannel]) -> None:
    client, server = tcp_pair
    client.send(QUERY)
    client.close()
    assert server.receive(5) == QUERY  # what arrived before the close is still delivered
    with pytest.raises(PeerClosedError, match="closed by the peer"):
        server.receive(5)
    with pytest.raises(PeerClosedError):
        server.send(QUERY)


def test_tcp_close_mid_frame(tcp_pair: tuple[ControlChannel, ControlChannel]) -> None:
    client, server = tcp_pair
    client.transport.send(encode_frame(QUERY)[:7])
    client.close()
    with pytest.raises(ProtocolError, match="middle of a frame"):
        server.receive(5)


def test_tcp_oversized_frame(tcp_pair: tuple[ControlChannel, ControlChannel]) -> None:
    client, server = tcp_pair
    client.transport.send(b"\x7f\xff\xff\xff" + b"x" * 100)
    with pytest.raises(ProtocolError, match="limit"):
        server.receive(5)


def test_connect_refused_times_out() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(StorageAppError, match="Timed out connecting") as info:
        connect_tcp("127.0.0.1", port, timeout=0.05, retry_interval=0.01)
    assert info.value.code is ErrorCode.TIME_OUT


def test_listener_accept_timeout() -> None:
    with TcpListener(0, host="127.0.0.1") as listener:
        assert listener.accept(0) is None
    with pytest.raises(StorageAppError, match="listener is closed"):
        listener.accept(0)
