"""Hostile bytes on a server's socket: the connection is dropped with a log line, nothing else."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable

import pytest

from doca_py.types import CtxState

from .helpers import pair, pump

pytestmark = pytest.mark.usefixtures("backend")


def _wire():  # type: ignore[no-untyped-def]
    from doca_py.emulated.comch import wire as w

    return w


def _hello(name: str, magic: int | None = None, version: int | None = None) -> bytes:
    w = _wire()
    raw = name.encode()
    return w.HDR.pack(w.T_HELLO, 0, w.VERSION if version is None else version, len(raw),
                      w.MAGIC if magic is None else magic, 4080) + raw


def _attack(p: object, payload: Callable[[str], bytes], shut: bool = False) -> None:
    """Write *payload* to the server socket and wait until the server hangs up."""
    w = _wire()
    name = p.name  # type: ignore[attr-defined]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(w.socket_path("0000:3b:00.0", name))
        s.sendall(payload(name))
        if shut:
            s.shutdown(socket.SHUT_WR)
        s.setblocking(False)
        eof = [False]

        def closed() -> bool:
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        eof[0] = True
                        return True
            except BlockingIOError:
                return False
            except ConnectionResetError:
                eof[0] = True
                return True

        pump(p.pes, closed, fds=[s.fileno()])  # type: ignore[attr-defined]
    finally:
        s.close()


CASES: dict[str, tuple[Callable[[str], bytes], bool, str]] = {
    "unknown type": (lambda n: _wire().HDR.pack(99, 0, 0, 0, 0, 0), False, "unknown frame type 99"),
    "message before hello": (lambda n: _wire().HDR.pack(_wire().T_MSG, 0, 0, 3, 0, 0) + b"abc", False,
                             "message before the handshake"),
    "oversized length": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_MSG, 0, 0, 0xFFFFFFF0, 0, 0), False,
                         "exceeds max_msg_size"),
    "oversized producer data": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_DATA, 0, 0, 0xFFFFFFF0, 1, 1),
                                False, "producer data"),
    "huge name": (lambda n: _wire().HDR.pack(_wire().T_HELLO, 0, 1, 1 << 30, _wire().MAGIC, 0), False,
                  "hello with a"),
    "wrong magic": (lambda n: _hello(n, magic=0x1234), False, "magic"),
    "wrong version": (lambda n: _hello(n, version=77), False, "version 77"),
    "wrong name": (lambda n: _hello(n + "-other"), False, "hello for server"),
    "body on a control frame": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_ACK, 0, 0, 4, 1, 0) + b"1234",
                                False, "body"),
    "ack for nothing": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_ACK, 0, 0, 0, 5, 0), False,
                        "acknowledgement of 5"),
    "credit of zero": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_CREDIT, 0, 0, 0, 1, 0), False,
                       "credit of 0 receives"),
    "body on a credit": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_CREDIT, 0, 0, 4, 1, 1) + b"1234",
                         False, "body"),
    "too many consumers": (lambda n: _hello(n) + b"".join(_wire().HDR.pack(_wire().T_CONSUMER_NEW, 0, 0, 0, i, 0)
                                                          for i in range(1, 600)), False, "consumers announced"),
    "truncated frame": (lambda n: _hello(n) + _wire().HDR.pack(_wire().T_MSG, 0, 0, 100, 0, 0) + b"x" * 10, True,
                        "truncated"),
    "random garbage": (lambda n: bytes([200]) + os.urandom(4096), False, "unknown frame type 200"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_input_drops_only_that_connection(case: str, caplog: pytest.LogCaptureFixture) -> None:
    payload, shut, expect = CASES[case]
    caplog.set_level(logging.WARNING, logger="doca_py")
    with pair() as p:
        _attack(p, payload, shut)
        drops = [r.getMessage() for r in caplog.records if "dropping connection" in r.getMessage()]
        assert len(drops) == 1 and expect in drops[0], drops
        # The server still serves its real client.
        assert p.server.ctx.get_state() == CtxState.RUNNING
        p.client.ctx.task_send_alloc_init(p.cconn, b"still here").submit()
        p.pump(lambda: any(m == b"still here" for m, _ in p.server.msgs))
        p.server.ctx.task_send_alloc_init(p.sconn, b"and back").submit()
        p.pump(lambda: any(m == b"and back" for m, _ in p.client.msgs))


def test_many_hostile_connections_leave_no_state(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL, logger="doca_py")
    with pair() as p:
        for _ in range(20):
            _attack(p, CASES["oversized length"][0])
        # Handshaken-then-dropped raw peers produced connect + disconnect pairs only.
        p.pump(lambda: [k for k, _ in p.server.events].count("disconnect") == 20)
        assert [k for k, _ in p.server.events].count("connect") == 21
        assert p.server.ctx.get_connections() == [p.sconn]
        assert p.sconn.is_connected()
