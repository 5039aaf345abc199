"""The target's control port: the listen address, and stray clients before the real requester.

A session starts only with a ``query_storage_request`` as the first control message. A client
that closes, sends garbage, an oversized or malformed frame, another request, or nothing
within ``--first-message-timeout`` is dropped (WARNING with its address) and the target keeps
listening; the real session (``client.Requester``) then completes. Every wait is on a log
line or a socket event, bounded by ``DEADLINE``.
"""

from __future__ import annotations

import select
import signal
import socket
import subprocess
from collections.abc import Iterator

import pytest

from apps.storage.wire.control import ControlMessage, ErrorPayload, MessageType, encode_frame
from apps.storage.channels.control_channel import FrameDecoder
from apps.storage_target.control import DROPPED_PREFIX, LISTEN_BACKLOG

from tests import deadlines

from .client import DEADLINE, Requester, TargetProcess

pytestmark = pytest.mark.multiprocess
M = MessageType


@pytest.fixture
def cleanup() -> Iterator[list[TargetProcess | Requester | socket.socket]]:
    things: list[TargetProcess | Requester | socket.socket] = []
    yield things
    for t in reversed(things):
        if isinstance(t, TargetProcess):
            t.kill()
        else:
            t.close()


def _connect(port: int, host: str = "127.0.0.1") -> tuple[socket.socket, str]:
    """A raw TCP client; its ``host:port`` as the target logs it."""
    s = socket.create_connection((host, port), timeout=DEADLINE)
    local = s.getsockname()
    return s, f"{local[0]}:{local[1]}"


def _dropped(target: TargetProcess, peer: str, within: float = DEADLINE) -> str:
    """The WARNING that says *peer* was dropped (the text after ``<peer>: ``)."""
    line = target.wait_for(lambda s: f"{DROPPED_PREFIX}{peer}:" in s, f"the line dropping {peer}", within)
    assert "[WARNING]" in line, line
    return line.split(f"{DROPPED_PREFIX}{peer}: ", 1)[1]


def _closed_by_target(s: socket.socket) -> None:
    """*s* sees the target close it (EOF or reset) within the deadline."""
    assert select.select([s], [], [], DEADLINE)[0], "the target did not close the connection"
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass


def _real_session(target: TargetProcess, cleanup: list[TargetProcess | Requester | socket.socket]) -> None:
    """A whole session with the test requester: setup, one read, stop, shutdown, exit 0."""
    req = Requester(target.port)
    cleanup.append(req)
    details = req.setup()
    assert req.read(0, 0, 0, details.block_size) == 0
    req.call(M.STOP_STORAGE_REQUEST)
    req.call(M.SHUTDOWN_REQUEST)
    assert target.wait() == 0, target.stderr
    assert "Traceback" not in target.stdout + target.stderr
    assert "| Operation count: 1" in target.stdout


def _finish_session(req: Requester, target: TargetProcess) -> None:
    """The rest of a session whose query was answered: init, connections, start, stop, shutdown, exit 0."""
    req.init()
    req.connect_all()
    req.start()
    req.call(M.STOP_STORAGE_REQUEST)
    req.call(M.SHUTDOWN_REQUEST)
    assert target.wait() == 0, target.stderr


def test_stray_client_that_closes_before_the_bridge(
        cleanup: list[TargetProcess | Requester | socket.socket]) -> None:
    target = TargetProcess()
    cleanup.append(target)
    stray, peer = _connect(target.port)
    stray.close()
    assert _dropped(target, peer) == "closed the connection before sending a request; still listening"
    _real_session(target, cleanup)


# a query_storage_request frame: body length 0x0c, then type 1, message id and correlation id
_QUERY = encode_frame(ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0))


@pytest.mark.parametrize("first, reason", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
     "its first frame announces a 1195725856-byte body; a session starts with a query_storage_request, whose "
     "body is 12 bytes"),
    (bytes.fromhex("ffffffff") + bytes(12),  # oversized: past any limit
     "its first frame announces a 4294967295-byte body; a session starts with a query_storage_request, whose "
     "body is 12 bytes"),
    (bytes.fromhex("00000004 00000001"),  # shorter than the 12-byte prefix
     "its first frame announces a 4-byte body; a session starts with a query_storage_request, whose body is "
     "12 bytes"),
    (bytes.fromhex("0000000c 00000063 00000000 00000000"),  # unknown message type
     "sent a malformed first frame: unknown control message type 99 (mid=0, cid=0)"),
    (bytes.fromhex("0000000c 00000003 00000000 00000000"),  # init_storage_request without its payload
     "sent a malformed first frame: "),
])
def test_a_client_sending_garbage_first_is_dropped(cleanup: list[TargetProcess | Requester | socket.socket],
                                                   first: bytes, reason: str) -> None:
    target = TargetProcess()
    cleanup.append(target)
    stray, peer = _connect(target.port)
    cleanup.append(stray)
    stray.sendall(first)
    got = _dropped(target, peer)
    assert got.startswith(reason) and got.endswith("; still listening"), got
    _closed_by_target(stray)
    _real_session(target, cleanup)


def test_another_request_first_is_answered_unexpected_and_dropped(
        cleanup: list[TargetProcess | Requester | socket.socket]) -> None:
    target = TargetProcess()
    cleanup.append(target)
    stray, peer = _connect(target.port)
    cleanup.append(stray)
    stray.sendall(encode_frame(ControlMessage(M.START_STORAGE_REQUEST, 7, 9)))
    assert _dropped(target, peer) == ("sent a start_storage_request first; a session starts with a "
                                      "query_storage_request; still listening")
    # the target said why before closing (it read exactly the frame, so nothing is reset)
    dec = FrameDecoder()
    while (reply := dec.next_message()) is None:
        assert select.select([stray], [], [], DEADLINE)[0], "no error response"
        data = stray.recv(4096)
        assert data, "closed without an error response"
        dec.feed(data)
    assert (reply.type, reply.message_id, reply.correlation_id) == (M.ERROR_RESPONSE, 7, 9)
    assert isinstance(reply.payload, ErrorPayload)
    assert reply.payload.message == "Unexpected start_storage_request while expecting a query_storage_request"
    _closed_by_target(stray)
    _real_session(target, cleanup)


@pytest.mark.parametrize("partial", [b"", _QUERY[:6]], ids=["silent", "half a frame"])
def test_a_silent_client_is_dropped_after_the_timeout(cleanup: list[TargetProcess | Requester | socket.socket],
                                                      partial: bytes) -> None:
    # short, so the silent client is dropped soon; long enough that the real requester that follows (a
    # loaded machine included) sends its first message within it
    first = deadlines.product_timeout(1)
    target = TargetProcess("--first-message-timeout", str(first))
    cleanup.append(target)
    target.wait_for(lambda s: f"first message within {first} s" in s, "the control port line")
    stray, peer = _connect(target.port)
    cleanup.append(stray)
    stray.sendall(partial)
    got = f" ({len(partial)} bytes of a frame received)" if partial else ""
    assert _dropped(target, peer, deadlines.bound(first, starts=1)) == \
        f"no complete first message within {first} s{got}; still listening"
    _closed_by_target(stray)
    _real_session(target, cleanup)


def test_a_silent_client_does_not_hold_up_the_bridge(cleanup: list[TargetProcess | Requester | socket.socket]) \
        -> None:
    """Clients wait for their first message side by side: the requester that connects after a
    silent client gets its session at once (default timeout, 5 s), and the silent one is
    dropped when the session starts."""
    target = TargetProcess()
    cleanup.append(target)
    stray, peer = _connect(target.port)
    cleanup.append(stray)
    target.wait_for(lambda s: f"control connection from {peer}" in s, "the stray's connection")
    req = Requester(target.port)
    cleanup.append(req)
    req.query()
    assert _dropped(target, peer).startswith("the session with 127.0.0.1:")
    _closed_by_target(stray)
    _finish_session(req, target)


SILENT_CLIENTS = 100


def test_a_hundred_silent_clients_do_not_hold_up_the_bridge(
        cleanup: list[TargetProcess | Requester | socket.socket]) -> None:
    """Default flags: 100 connections that send nothing are all accepted and held side by side, and a
    requester arriving behind them gets its query answered while the test still holds every one of
    them open (they used to fill the 8 pending places: the query waited until they left)."""
    target = TargetProcess()
    cleanup.append(target)
    peers: list[str] = []
    for _ in range(SILENT_CLIENTS):
        s, peer = _connect(target.port)
        cleanup.append(s)
        # Accepted by the target, not left in the kernel's backlog (which a burst would overflow).
        target.wait_for(lambda line, p=peer: f"control connection from {p}" in line, f"{peer}'s connection")
        peers.append(peer)
    req = Requester(target.port)
    cleanup.append(req)
    assert req.query().block_size == 4096  # a hang guard bounds it (DEADLINE), no timing is asserted
    for peer in peers:  # held by the target until the session started, then dropped
        assert _dropped(target, peer).startswith("the session with 127.0.0.1:")
    _finish_session(req, target)


def test_sigint_while_a_client_is_pending(cleanup: list[TargetProcess | Requester | socket.socket]) -> None:
    target = TargetProcess()
    cleanup.append(target)
    stray, peer = _connect(target.port)
    cleanup.append(stray)
    target.wait_for(lambda s: f"control connection from {peer}" in s, "the stray's connection")
    target.p.send_signal(signal.SIGINT)
    assert target.wait() == 1
    assert target.stderr.strip().splitlines()[-1:] == ["EXCEPTION: Aborted: User requested abort"]
    _closed_by_target(stray)


def _listening_line(target: TargetProcess) -> str:
    line = target.wait_for(lambda s: "control port listening on " in s, "the control port line")
    return line.split("control port listening on ", 1)[1].split(" ", 1)[0]


def _listening_sockets(port: int) -> str:
    """``ss``'s listening TCP sockets on *port* (empty if ``ss`` is missing)."""
    try:
        return subprocess.run(["ss", "-Htln", f"sport = :{port}"], capture_output=True, text=True,
                              timeout=DEADLINE).stdout
    except FileNotFoundError:
        return ""


def test_listen_address_is_honoured(cleanup: list[TargetProcess | Requester | socket.socket]) -> None:
    target = TargetProcess("--listen-address", "127.0.0.1")
    cleanup.append(target)
    assert _listening_line(target) == f"127.0.0.1:{target.port}"
    assert '\tlisten-address : "127.0.0.1",' in target.stdout
    ss = _listening_sockets(target.port).split()
    if ss:  # LISTEN <queued> <backlog> <local address> <peer>
        assert ss[0] == "LISTEN" and ss[2:4] == [str(LISTEN_BACKLOG), f"127.0.0.1:{target.port}"], ss
    # another local address of this machine is not served
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", target.port), timeout=DEADLINE).close()
    _real_session(target, cleanup)


def test_default_listen_address_is_every_interface(cleanup: list[TargetProcess | Requester | socket.socket]) \
        -> None:
    target = TargetProcess()
    cleanup.append(target)
    assert _listening_line(target) == f"0.0.0.0:{target.port}"  # as the reference (INADDR_ANY)
    stray, peer = _connect(target.port, "127.0.0.2")
    stray.close()
    assert _dropped(target, peer).startswith("closed the connection before sending a request")


def test_one_client_too_many_pushes_out_the_longest_waiting(caplog: pytest.LogCaptureFixture) -> None:
    """In process, with room for two pending clients: a third silent one pushes out the first
    (WARNING), and a requester arriving after them still gets the session."""
    import logging
    import threading

    from apps.storage_target.control import accept_requester, listen

    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    abort = threading.Event()
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(accept_requester(listener, abort, None, max_pending=2)))
    clients = []
    with caplog.at_level(logging.INFO, logger="apps.storage_target"):
        thread.start()
        try:
            for _ in range(3):
                s, peer = _connect(port)
                clients.append((s, peer))
            _closed_by_target(clients[0][0])
            query = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
            clients.append((query, ""))
            query.sendall(_QUERY)
            thread.join(DEADLINE)
        finally:
            abort.set()
            thread.join(DEADLINE)
            listener.close()
    assert result, "no session"
    channel, first = result[0]  # type: ignore[misc]
    channel.close()
    assert first.type is M.QUERY_STORAGE_REQUEST
    pushed = [r.getMessage() for r in caplog.records if clients[0][1] + ":" in r.getMessage()
              and r.levelname == "WARNING"]
    assert pushed == [f"{DROPPED_PREFIX}{clients[0][1]}: the longest-waiting of 2 clients without a first message, "
                      f"the most this target keeps, made room for a new one; still listening"]
    for s, _peer in clients:
        s.close()
