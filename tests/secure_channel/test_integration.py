"""``python -m apps.secure_channel`` in separate processes: both sides of this app, and this app's
server against a host written from the wire format (``peer.py``) that misbehaves."""

from __future__ import annotations

import re
import signal
import struct
from collections.abc import Callable

import pytest

from tests.file_compression.procs import DPU_PCI, HOST_PCI, Proc

pytestmark = [pytest.mark.multiprocess, pytest.mark.usefixtures("backend")]

APP = "apps.secure_channel"
PEER = "tests.secure_channel.peer"
Spawn = Callable[..., Proc]
STATS = re.compile(r"(Producer sent|Consumer received) (\d+) messages in approximately (\d+\.\d{4}) milliseconds")


def _stats(out: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in STATS.finditer(out)}


def _server(spawn: Spawn, *flags: str) -> Proc:
    server = spawn(APP, "-p", DPU_PCI, "-r", HOST_PCI, "-l", "debug", *flags)
    server.wait_for("Server waiting on a client to connect")
    return server


def test_both_directions_complete_with_the_c_statistics(spawn: Spawn) -> None:
    """More messages than the 1024 tasks (each task is submitted again), different sizes and counts
    each way; every message arrives whole and intact."""
    server = _server(spawn, "-s", "4096", "-n", "2500")
    client = spawn(APP, "-p", HOST_PCI, "-s", "100", "-n", "1500", "-l", "debug")
    crc, cout, cerr = client.finish()
    src, sout, serr = server.finish()
    assert (crc, src) == (0, 0), (cout, cerr, sout, serr)
    assert _stats(sout) == {"Producer sent": 2500, "Consumer received": 1500}, sout
    assert _stats(cout) == {"Producer sent": 1500, "Consumer received": 2500}, cout
    assert "2500 sends submitted for 2500 messages; 1500 of 1500 messages received held the producer's byte " \
           "pattern" in sout
    assert "1500 sends submitted for 1500 messages; 2500 of 2500 messages received held the producer's byte " \
           "pattern" in cout
    assert "The peer sends 1500 messages of 100 bytes" in sout


def _meta(kind: int, n: int, size: int) -> str:
    return (struct.pack("<I", kind) + struct.pack(">II", n, size)).hex()


@pytest.mark.parametrize(("message", "problem"), [
    ("00" * 11, "invalid message length detected: 11"),
    (_meta(0, 1, 1) + "00", "invalid message length detected: 13"),
    (_meta(7, 1, 1), "unknown metadata message type 7"),
    (_meta(1, 1, 1), "the peer sent END before START"),
    (_meta(0, 0, 64), "the peer announces 0 messages"),
    (_meta(0, 5, 0), "the peer announces messages of 0 bytes"),
    (_meta(0, 5, 65536), "the peer announces messages of 65536 bytes"),
])
def test_a_malformed_metadata_message_fails_the_server(spawn: Spawn, message: str, problem: str) -> None:
    server = _server(spawn, "-s", "64", "-n", "10")
    peer = spawn(PEER, "raw", message)
    peer.wait_for("ready")
    rc, out, err = server.finish()
    assert rc == 1 and "got a bad metadata message on comch" in err and problem in err, (out, err)
    assert "Traceback" not in err
    assert peer.wait_for("lost")


@pytest.mark.parametrize(("real", "problem"), [
    (32, "received a message of 32 bytes where the peer announced 64"),
    (128, "received a consumer post recv completion error"),
])
def test_messages_of_the_wrong_size_fail_the_consumer(spawn: Spawn, real: int, problem: str) -> None:
    server = _server(spawn, "-s", "64", "-n", "10")
    peer = spawn(PEER, "send", "20", "64", str(real))
    rc, out, err = server.finish()
    assert rc == 1 and "Receive thread finished unsuccessfully" in err and problem in err, (out, err)
    assert peer.wait_for("lost")


def test_a_peer_dying_mid_run_fails_the_server(spawn: Spawn) -> None:
    server = _server(spawn, "-s", "64", "-n", "10")
    peer = spawn(PEER, "send", "1000", "64", "64", "5")
    peer.wait_for("dying")
    rc, out, err = server.finish()
    assert peer.finish()[0] == -signal.SIGKILL
    assert rc == 1 and "EXCEPTION: the comch client closed the connection" in err, (out, err)


def test_the_host_fails_when_the_dpu_dies(spawn: Spawn) -> None:
    """The DPU side answers START and dies before its fast path: the host gives up with a clear error
    instead of waiting for ever."""
    peer = spawn(PEER, "server-die")
    peer.wait_for("ready")
    client = spawn(APP, "-p", HOST_PCI, "-s", "64", "-n", "10")
    peer.wait_for("dying")
    rc, out, err = client.finish()
    assert peer.finish()[0] == -signal.SIGKILL
    assert rc == 1 and "EXCEPTION: the comch server closed the connection" in err, (out, err)


def test_ctrl_c_while_waiting_for_the_peers_consumer(spawn: Spawn) -> None:
    """The peer announces its messages but never creates a consumer: this side's producer waits, and
    SIGINT ends the run (threads stopped and cleaned up) with status 1."""
    server = _server(spawn, "-s", "64", "-n", "10")
    peer = spawn(PEER, "raw", _meta(0, 5, 64))
    peer.wait_for("ready")
    server.wait_for("The peer sends 5 messages of 64 bytes")
    server.kill(signal.SIGINT)
    rc, out, err = server.finish()
    assert rc == 1 and "EXCEPTION: stopped while the messages were exchanged" in err, (out, err)
    assert "Traceback" not in err
