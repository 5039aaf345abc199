"""``python -m apps.file_compression`` in separate processes: server and client of this app, and
each of them against a peer written from the wire format (``peer.py``): byte-exact round trips,
the wire layout, zlib compatibility, and every failure path of a transfer."""

from __future__ import annotations

import json
import os
import random
import signal
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from doca_py.errors import DocaNotFound
from tests import deadlines

from .procs import DPU_PCI, HOST_PCI, Proc

pytestmark = [pytest.mark.multiprocess, pytest.mark.usefixtures("backend")]

APP = "apps.file_compression"
PEER = "tests.file_compression.peer"
Spawn = Callable[..., Proc]


def _payload(size: int, seed: int = 7) -> bytes:
    """Half random, half text: both DEFLATE's literal and match paths."""
    rng = random.Random(seed)
    text = b"".join(b"line %d of the doca_py file compression test\n" % i for i in range(size // 90 + 1))
    return (rng.randbytes(size // 2) + text)[:size]


def _server(spawn: Spawn, out: Path, *extra: str) -> Proc:
    server = spawn(APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out), *extra)
    server.wait_for("Server waiting on a client to connect")
    return server


def _no_partial_file(out: Path) -> None:
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")] == []


def test_round_trip_is_byte_exact(spawn: Spawn, tmp_path: Path) -> None:
    src, out = tmp_path / "in.bin", tmp_path / "out" / "result.bin"
    out.parent.mkdir()
    data = _payload(300_000)
    src.write_bytes(data)
    server = _server(spawn, out)
    client = spawn(APP, "-p", HOST_PCI, "-f", str(src))
    crc, cout, cerr = client.finish()
    src_rc, sout, serr = server.finish()
    assert (crc, src_rc) == (0, 0), (cout, cerr, sout, serr)
    assert out.read_bytes() == data
    assert "Received message: Server was done receiving messages" in cout
    assert "SUCCESS: file was received and decompressed successfully" in sout
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o440 & ~umask  # S_IRUSR | S_IRGRP, as the C server
    assert sorted(p.name for p in out.parent.iterdir()) == ["result.bin"]  # no temporary file left


def test_json_flags_run_the_same(spawn: Spawn, tmp_path: Path) -> None:
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(_payload(20_000, seed=3))
    (tmp_path / "server.json").write_text(json.dumps(
        {"doca_program_flags": {"pci-addr": DPU_PCI, "rep-pci": HOST_PCI, "file": str(out), "timeout": 5}}))
    (tmp_path / "client.json").write_text(json.dumps({"pci-addr": HOST_PCI, "file": str(src)}))
    server = spawn(APP, "--json", str(tmp_path / "server.json"))
    server.wait_for("Server waiting on a client to connect")
    client = spawn(APP, "-j", str(tmp_path / "client.json"))
    assert client.finish()[0] == 0
    assert server.finish()[0] == 0
    assert out.read_bytes() == src.read_bytes()


def test_client_speaks_the_wire_format(spawn: Spawn, tmp_path: Path) -> None:
    """Against a peer server: 16-byte big-endian file info, full-size segments, a raw DEFLATE stream
    that zlib inflates to the file, the checksum zlib computes."""
    src = tmp_path / "in.bin"
    data = _payload(100_000, seed=11)
    src.write_bytes(data)
    peer = spawn(PEER, "server", str(tmp_path), "finish")
    peer.wait_for("ready")
    client = spawn(APP, "-p", HOST_PCI, "-f", str(src))
    peer.wait_for("answered")
    assert client.finish()[0] == 0
    info = json.loads((tmp_path / "info.json").read_text())
    stream = (tmp_path / "data.bin").read_bytes()
    assert info["size"] == 16
    assert info["checksum"] == (zlib.adler32(data) << 32) | zlib.crc32(data)
    max_msg = info["max_msg"]
    assert info["num_segs"] == -(-len(stream) // max_msg) == len(info["seg_lens"])
    assert all(n == max_msg for n in info["seg_lens"][:-1]) and 0 < info["seg_lens"][-1] <= max_msg
    assert zlib.decompress(stream, -15) == data


def test_software_fallback_is_zlib_byte_exact(spawn: Spawn, tmp_path: Path, comch_env: dict[str, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """No device can compress: the client (in this process) deflates with zlib's settings of the C app,
    byte for byte, and the peer server receives exactly that stream."""
    import apps.file_compression as fc
    from apps.file_compression import worker

    def no_device(task: object) -> object:
        raise DocaNotFound("no device in this test")

    monkeypatch.setattr(worker, "_find_device", no_device)
    monkeypatch.setenv("DOCA_PY_COMCH_DIR", comch_env["DOCA_PY_COMCH_DIR"])
    src = tmp_path / "in.bin"
    data = _payload(50_000, seed=5)
    src.write_bytes(data)
    peer = spawn(PEER, "server", str(tmp_path), "finish")
    peer.wait_for("ready")
    assert fc.main(["-p", HOST_PCI, "-f", str(src), "-l", "error"]) == 0
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY)
    assert (tmp_path / "data.bin").read_bytes() == c.compress(data) + c.flush()


def test_client_fails_when_the_server_reports_a_failure(spawn: Spawn, tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(_payload(10_000))
    peer = spawn(PEER, "server", str(tmp_path), "Server failed: disk full")
    peer.wait_for("ready")
    rc, out, err = spawn(APP, "-p", HOST_PCI, "-f", str(src)).finish()
    assert rc == 1 and "EXCEPTION: the server could not deliver the file: Server failed: disk full" in err


def test_client_fails_when_the_server_dies_mid_file(spawn: Spawn, tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(random.Random(2).randbytes(200_000))
    peer = spawn(PEER, "server", str(tmp_path), "finish", "3")
    peer.wait_for("ready")
    rc, out, err = spawn(APP, "-p", HOST_PCI, "-f", str(src)).finish()
    assert peer.finish()[0] == -signal.SIGKILL
    assert rc == 1 and "EXCEPTION: the comch server closed the connection" in err, (out, err)


def test_client_fails_when_the_real_server_is_killed_mid_transfer(spawn: Spawn, tmp_path: Path) -> None:
    """SIGKILL this app's server while it receives. It logs every segment at trace level and its stdout
    is not read once connected, so it blocks on the full pipe long before the last of 2000 segments:
    the kill lands mid-transfer, whatever the machine's speed."""
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(random.Random(4).randbytes(8 << 20))
    server = spawn(APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out), "-l", "trace")
    client = spawn(APP, "-p", HOST_PCI, "-f", str(src))
    server.wait_for("Server connection established")
    client.wait_for("Sending")
    server.kill()
    rc, cout, cerr = client.finish()
    assert server.finish()[0] == -signal.SIGKILL
    assert rc == 1 and "EXCEPTION: " in cerr and "Traceback" not in cerr, (cout, cerr)
    _no_partial_file(out)


@pytest.mark.parametrize(("scenario", "message"), [
    ("short-info", "unexpected file info message received: size 12, expected size 16"),
    ("long-info", "unexpected file info message received: size 20, expected size 16"),
    ("bad-checksum", "file checksum is different"),
    ("truncated-stream", "failed to decompress the received file"),
])
def test_server_refuses_a_bad_transfer(spawn: Spawn, tmp_path: Path, scenario: str, message: str) -> None:
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(_payload(60_000))
    server = _server(spawn, out)
    peer = spawn(PEER, "client", scenario, str(src))
    answer = peer.wait_for("answer")
    rc, sout, serr = server.finish()
    assert rc == 1 and message in serr and "Traceback" not in serr, (sout, serr)
    assert answer.startswith("answer Server failed: ") and message in answer
    _no_partial_file(out)


def test_server_fails_when_the_client_dies_mid_file(spawn: Spawn, tmp_path: Path) -> None:
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(random.Random(9).randbytes(100_000))
    server = _server(spawn, out)
    peer = spawn(PEER, "client", "die-after", str(src), "3")
    rc, sout, serr = server.finish()
    assert peer.finish()[0] == -signal.SIGKILL
    assert rc == 1 and "the client disconnected after 3 of 25 segments: no file written" in serr, serr
    _no_partial_file(out)


def test_server_times_out_on_a_stalled_client(spawn: Spawn, tmp_path: Path) -> None:
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(random.Random(9).randbytes(100_000))
    # short, so the stall is found soon; long enough that a loaded machine does not delay a segment past it
    timeout = deadlines.product_timeout(1)
    server = _server(spawn, out, "-t", str(timeout))
    peer = spawn(PEER, "client", "stall-after", str(src), "3")
    peer.wait_for("stalled")
    rc, sout, serr = server.finish(deadlines.bound(timeout, starts=1))
    assert rc == 1 and f"message was not received at the given timeout ({timeout} s; 3 of 25 segments)" in serr, serr
    _no_partial_file(out)


def test_ctrl_c_while_waiting_for_a_client(spawn: Spawn, tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    server = _server(spawn, out)
    server.kill(signal.SIGINT)
    rc, sout, serr = server.finish()
    assert rc == 1 and "EXCEPTION: stopped while waiting for the comch connection" in serr, (sout, serr)
    assert serr.strip().splitlines() == ["EXCEPTION: stopped while waiting for the comch connection"]
    _no_partial_file(out)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_transfer_stops_the_server_at_once_and_tells_the_client(spawn: Spawn, tmp_path: Path,
                                                                            sig: int) -> None:
    """The server used to wait --timeout seconds for the client to disconnect (here an hour: past the
    children's deadline), and a second Ctrl-C did not help; now it answers and ends."""
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(random.Random(9).randbytes(100_000))
    server = _server(spawn, out, "-t", "3600")  # deadline: never fires here
    peer = spawn(PEER, "client", "pause-after", str(src), "3")
    peer.wait_for("stalled")
    server.kill(sig)
    rc, sout, serr = server.finish()
    assert rc == 1 and serr.strip().splitlines() == ["EXCEPTION: stopped while receiving the file"], (sout, serr)
    assert peer.wait_for("answer") == "answer Server failed: the server was stopped (Ctrl-C or SIGTERM)"
    _no_partial_file(out)


def test_client_says_a_stopped_server_did_not_answer(spawn: Spawn, tmp_path: Path,
                                                     comch_env: dict[str, str]) -> None:
    """A server that stops (SIGSTOP) mid-file is not one that closed the connection: once the client's
    sends wait a whole retry window, it says that the server did not answer."""
    # short, so the stop is found soon; long enough that a loaded machine does not make the server look
    # stopped before it is (tests/deadlines.py)
    window = deadlines.product_timeout(1)
    comch_env.update(PEER_STOP="1", DOCA_PY_COMCH_RETRY_WINDOW=str(window))
    src = tmp_path / "in.bin"
    src.write_bytes(random.Random(3).randbytes(4_000_000))  # incompressible: more than the transport buffers
    peer = spawn(PEER, "server", str(tmp_path), "finish", "3")
    peer.wait_for("ready")
    try:
        rc, out, err = spawn(APP, "-p", HOST_PCI, "-f", str(src)).finish(deadlines.bound(window, starts=1))
    finally:
        peer.kill(signal.SIGKILL)
    assert rc == 1, (out, err)
    assert "EXCEPTION: the comch server did not answer within the retry window" in err, (out, err)
    assert "closed the connection" not in err, err


def test_a_client_started_before_its_server_waits_for_it(spawn: Spawn, tmp_path: Path) -> None:
    """As NVIDIA's client does: no error, no time limit; the transfer happens once the server is up."""
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    data = _payload(20_000)
    src.write_bytes(data)
    client = spawn(APP, "-p", HOST_PCI, "-f", str(src))
    server = _server(spawn, out)
    crc, cout, cerr = client.finish()
    assert (crc, server.finish()[0]) == (0, 0), (cout, cerr)
    assert out.read_bytes() == data and cerr == ""
