"""The DOCA sample ports in ``examples/`` run as their users run them: as processes.

Every example runs on the emulated backend in strict mode with shuffled completions, with
the test kit's knobs (``doca_knobs``: the suite's seed, ``--doca-version``, ``--doca-faults``). Two-sided samples start the responder or
server first and wait for its readiness line on stdout before starting the other side;
every wait is bounded, and every child is killed if the test fails. The assertions check
what arrived: the text the peer prints, the decompressed bytes, the recovered block.
"""

from __future__ import annotations

import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import lz4.frame
import pytest

from doca_py.testing import Knobs
from ..impl import CHILD_IMPL

pytestmark = pytest.mark.multiprocess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TIMEOUT = 30.0  # seconds, for any one wait


class Sample:
    """One example process; its stdout (with stderr) is read by a thread, line by line."""

    def __init__(self, script: str, args: list[str], env: dict[str, str], stdin: bool = False) -> None:
        self.name = script
        self.proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / script), *args], cwd=ROOT, env=env, text=True,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._new.put(line.rstrip("\n"))
        self._new.put(None)

    def _drain(self, timeout: float) -> bool:
        """Move one line (waiting up to *timeout*) to :attr:`lines`; False at end of output."""
        line = self._new.get(timeout=timeout)
        if line is None:
            self._new.put(None)
            return False
        self.lines.append(line)
        return True

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_line(self, text: str, timeout: float = TIMEOUT) -> None:
        """Wait until a line containing *text* was printed (the readiness signal)."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            left = deadline - time.monotonic()
            try:
                if left <= 0 or not self._drain(left):
                    raise AssertionError(f"{self.name} never printed {text!r}:\n{self.output}")
            except queue.Empty:
                raise AssertionError(f"{self.name} did not print {text!r} within {timeout} s:\n{self.output}")

    def send_enter(self) -> None:
        """The "press enter" of the C samples."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.close()

    def finish(self, timeout: float = TIMEOUT) -> str:
        """Wait for the exit; assert status 0 and a clean teardown; return the output."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with suppress(queue.Empty):  # what it printed so far
                while self._drain(0.5):
                    pass
            raise AssertionError(f"{self.name} did not exit within {timeout} s:\n{self.output}") from None
        self._reader.join(timeout)
        while self._drain(0.1):
            pass
        out = self.output
        assert rc == 0, f"{self.name} exited with {rc}:\n{out}"
        assert "Sample finished successfully" in out, out
        assert "Traceback" not in out and "ResourceWarning" not in out, out
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._reader.join(TIMEOUT)


@pytest.fixture
def env(doca_knobs: Knobs) -> Iterator[dict[str, str]]:
    # The test kit's knobs (seed, DOCA version, faults: a failure report says how to replay it), always
    # strict and shuffled. A comch rendezvous directory of our own (short: it holds Unix socket paths),
    # so that the fixed server names of the samples meet no other test's server.
    with tempfile.TemporaryDirectory(prefix="doca-ex-") as comch_dir:
        e = dict(os.environ)
        e.update(doca_knobs.env())
        e.update(DOCA_PY_IMPL=CHILD_IMPL, DOCA_PY_STRICT="1", DOCA_PY_EMU_SHUFFLE="1", DOCA_PY_COMCH_DIR=comch_dir,
                 PYTHONWARNINGS="error::ResourceWarning")
        yield e


@contextmanager
def samples() -> Iterator[list[Sample]]:
    """Start examples with ``run(...)``; every one still running at the end is killed."""
    started: list[Sample] = []
    try:
        yield started
    finally:
        for s in started:
            s.kill()


def run(started: list[Sample], env: dict[str, str], script: str, *args: str, stdin: bool = False) -> Sample:
    s = Sample(script, list(args), env, stdin)
    started.append(s)
    return s


def run_one(env: dict[str, str], script: str, *args: str) -> str:
    with samples() as started:
        return run(started, env, script, *args).finish()


# -- DMA ------------------------------------------------------------------------------------------
def test_dma_local_copy(env: dict[str, str]) -> None:
    out = run_one(env, "dma_local_copy.py", "-p", "03:00.0", "-t", "copied by a DMA memcpy task")
    assert 'Destination buffer holds: "copied by a DMA memcpy task"' in out


def test_aio_dma_local_copy(env: dict[str, str]) -> None:
    out = run_one(env, "aio_dma_local_copy.py", "-p", "03:00.0", "-t", "copied under asyncio")
    assert "DMA task was completed successfully" in out
    assert 'Destination buffer holds: "copied under asyncio"' in out


# -- Mmap Advise (doca_common) --------------------------------------------------------------------
@pytest.mark.doca_versions("3.0", "3.2")  # doca_mmap_advise exists from DOCA 2.8
def test_cache_invalidate(env: dict[str, str]) -> None:
    out = run_one(env, "cache_invalidate.py")
    lines = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("[CACHE_INVALIDATE")]
    # The invalidate is submitted from the DMA completion, and completes after it.
    done = lines.index("DMA completed, Submitting cache invalidate task")
    assert lines[done + 1] == "Cache invalidate completed"
    assert "The DMA destination holds the source's 1024 bytes" in lines


def test_cache_invalidate_without_mmap_advise(env: dict[str, str]) -> None:
    """The emulator presenting DOCA 2.6 (no doca_mmap_advise): no device passes the capability check. The
    native path runs over libdoca built for 2.6 (a library presents its own version, whatever the variable)."""
    env = {**env, "DOCA_PY_EMU_VERSION": "2.6"}
    if CHILD_IMPL == "native":
        from ..libdoca.env import lib_dir

        env["DOCA_PY_LIBDIR"] = str(lib_dir("2.6"))
    proc = subprocess.run([sys.executable, str(EXAMPLES / "cache_invalidate.py")], cwd=ROOT, timeout=TIMEOUT,
                          env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "no device supports both the DMA memcpy task and the cache invalidate task" in out, out
    assert "Traceback" not in out, out


# -- RDMA -----------------------------------------------------------------------------------------
def _rdma_paths(tmp_path: Path, with_mmap: bool) -> tuple[list[str], list[str]]:
    """(responder args, requester args): each side's local descriptor is the other's remote one."""
    resp, req, mm = (str(tmp_path / n) for n in ("responder.desc", "requester.desc", "mmap.desc"))
    extra = ["-m", mm] if with_mmap else []
    return ["-ld", resp, "-re", req, *extra], ["-ld", req, "-re", resp, *extra]


def test_rdma_write(env: dict[str, str], tmp_path: Path) -> None:
    resp_args, req_args = _rdma_paths(tmp_path, with_mmap=True)
    with samples() as started:
        responder = run(started, env, "rdma_write_responder.py", *resp_args, stdin=True)
        responder.wait_for_line("You can now copy")
        requester = run(started, env, "rdma_write_requester.py", *req_args, "-w", "written by RDMA write")
        assert 'Written to responder "written by RDMA write"' in requester.finish()
        responder.send_enter()  # the requester has finished writing
        assert 'Requester has written: "written by RDMA write"' in responder.finish()
    assert not list(tmp_path.glob("*.desc"))  # both sides delete the descriptor files


def test_rdma_sync_event(env: dict[str, str], tmp_path: Path) -> None:
    resp_args, req_args = _rdma_paths(tmp_path, with_mmap=True)  # -m carries the sync event's blob
    with samples() as started:
        responder = run(started, env, "rdma_sync_event_responder.py", *resp_args)
        responder.wait_for_line("You can now copy")
        requester = run(started, env, "rdma_sync_event_requester.py", *req_args)
        out = requester.finish()
        assert "Remote sync event has been signaled successfully" in out
        assert "Received sync event value 0xD0CB" in out  # the responder's answer, read by a get task
        assert "Remote sync event has been notified for completion successfully" in out
        assert "Sync event was notified for completion" in responder.finish()
    assert not list(tmp_path.glob("*.desc"))


@contextmanager
def _peer_output_on_failure(peer: Sample) -> Iterator[None]:
    """Add *peer*'s output (so far) to an assertion that fails on the other side."""
    try:
        yield
    except AssertionError as exc:
        with suppress(queue.Empty):
            while peer._drain(1.0):
                pass
        raise AssertionError(f"{exc}\n--- {peer.name}:\n{peer.output}") from None


def _cm_server(started: list[Sample], env: dict[str, str], script: str, *args: str,
               stdin: bool = False) -> tuple[Sample, list[str]]:
    """Start *script* as the RDMA-CM server on any free port; (it, the client's address flags).

    The emulated backend listens on a port of its choice for port 0 and the sample prints which. DOCA's C
    API cannot report the port it picked, so the native backend gets a random port below the ephemeral
    range (the kernel gives those to no connection), and another if the sample finds it in use."""
    if CHILD_IMPL == "emulated":
        server = run(started, env, script, "-cm", "-lp", "0", *args, stdin=stdin)
        server.wait_for_line("listening on port")
        port = next(m.group(1) for line in server.lines if (m := re.search(r"listening on port (\d+)", line)))
        return server, ["-cm", "-sa", "127.0.0.1", "-lp", port]
    rng = random.Random()
    for _ in range(16):
        port = str(rng.randrange(20000, 32768))
        server = run(started, env, script, "-cm", "-lp", port, *args, stdin=stdin)
        try:
            server.wait_for_line("listening on port")
        except AssertionError:
            if "DOCA_ERROR_IN_USE" not in server.output:
                raise
            server.kill()
            continue
        return server, ["-cm", "-sa", "127.0.0.1", "-lp", port]
    raise AssertionError("no free port in [20000, 32768) after 16 tries")


def test_rdma_cm_write(env: dict[str, str]) -> None:
    with samples() as started:
        responder, client = _cm_server(started, env, "rdma_write_responder.py", stdin=True)
        requester = run(started, env, "rdma_write_requester.py", *client, "-w", "written over RDMA-CM")
        with _peer_output_on_failure(responder):
            requester.wait_for_line('Written to responder "written over RDMA-CM"')
        responder.send_enter()  # the responder disconnects; the requester ends on its disconnection
        assert 'Requester has written: "written over RDMA-CM"' in responder.finish()
        requester.finish()


def test_rdma_cm_read(env: dict[str, str]) -> None:
    with samples() as started:
        # The requester listens this time: the roles of the connection and of the sample are independent.
        requester, client = _cm_server(started, env, "rdma_read_requester.py")
        responder = run(started, env, "rdma_read_responder.py", *client, "-r", "read over RDMA-CM", stdin=True)
        with _peer_output_on_failure(responder):
            requester.wait_for_line('Read from responder: "read over RDMA-CM"')
        responder.send_enter()
        responder.finish()
        requester.finish()


@pytest.mark.parametrize("pair", [("rdma_receive.py", "rdma_send.py"),
                                  ("rdma_receive_immediate.py", "rdma_send_immediate.py")])
def test_rdma_cm_send_receive(env: dict[str, str], pair: tuple[str, str]) -> None:
    with samples() as started:
        receiver, client = _cm_server(started, env, pair[0])
        sender = run(started, env, pair[1], *client, "-s", "sent over RDMA-CM")
        with _peer_output_on_failure(receiver):
            sender.finish()
        assert 'Got from sender: "sent over RDMA-CM"' in receiver.finish()


def test_rdma_cm_sync_event(env: dict[str, str]) -> None:
    with samples() as started:
        responder, client = _cm_server(started, env, "rdma_sync_event_responder.py")
        requester = run(started, env, "rdma_sync_event_requester.py", *client)
        with _peer_output_on_failure(responder):
            out = requester.finish()
        assert "Received sync event value 0xD0CB" in out
        assert "Remote sync event has been notified for completion successfully" in out
        assert "Sync event was notified for completion" in responder.finish()


def test_rdma_read(env: dict[str, str], tmp_path: Path) -> None:
    resp_args, req_args = _rdma_paths(tmp_path, with_mmap=True)
    with samples() as started:
        responder = run(started, env, "rdma_read_responder.py", *resp_args, "-r", "read by RDMA read", stdin=True)
        responder.wait_for_line("You can now copy")
        requester = run(started, env, "rdma_read_requester.py", *req_args)
        assert 'Read from responder: "read by RDMA read"' in requester.finish()
        responder.send_enter()  # the requester has finished reading
        responder.finish()


def test_rdma_send_receive(env: dict[str, str], tmp_path: Path) -> None:
    recv_args, send_args = _rdma_paths(tmp_path, with_mmap=False)
    with samples() as started:
        receiver = run(started, env, "rdma_receive.py", *recv_args)
        receiver.wait_for_line("You can now copy")
        sender = run(started, env, "rdma_send.py", *send_args, "-s", "sent by RDMA send")
        assert "RDMA send task was done successfully" in sender.finish()
        assert 'Got from sender: "sent by RDMA send"' in receiver.finish()


def test_rdma_send_immediate_receive(env: dict[str, str], tmp_path: Path) -> None:
    recv_args, send_args = _rdma_paths(tmp_path, with_mmap=False)
    with samples() as started:
        receiver = run(started, env, "rdma_receive_immediate.py", *recv_args)
        receiver.wait_for_line("You can now copy")
        sender = run(started, env, "rdma_send_immediate.py", *send_args, "-s", "sent with immediate")
        sender.finish()
        assert 'Got from sender: "sent with immediate" with immediate: 43981' in receiver.finish()  # 0xABCD


@pytest.mark.parametrize("receiver, sender", [("aio_rdma_receive.py", "aio_rdma_send.py"),
                                              ("rdma_receive.py", "aio_rdma_send.py"),
                                              ("aio_rdma_receive.py", "rdma_send.py")])
def test_aio_rdma_send_receive(env: dict[str, str], tmp_path: Path, receiver: str, sender: str) -> None:
    recv_args, send_args = _rdma_paths(tmp_path, with_mmap=False)
    with samples() as started:
        r = run(started, env, receiver, *recv_args)
        r.wait_for_line("You can now copy")
        s = run(started, env, sender, *send_args, "-s", "sent under asyncio")
        assert "RDMA send task was done successfully" in s.finish()
        out = r.finish()
    assert 'Got from sender: "sent under asyncio"' in out
    assert not list(tmp_path.glob("*.desc"))


# -- Comch ----------------------------------------------------------------------------------------
def test_comch_ctrl_path(env: dict[str, str]) -> None:
    with samples() as started:
        server = run(started, env, "comch_ctrl_path_server.py", "-p", "03:00.0", "-r", "3b:00.0",
                     "-t", "answer from the server")
        server.wait_for_line("CC server context is running")
        client = run(started, env, "comch_ctrl_path_client.py", "-p", "3b:00.0", "-t", "hello from the client")
        assert "Message received: 'answer from the server'" in client.finish()
        assert "Message received: 'hello from the client'" in server.finish()


def test_comch_data_path_high_speed(env: dict[str, str]) -> None:
    with samples() as started:
        server = run(started, env, "comch_data_path_high_speed_server.py", "-p", "03:00.0", "-r", "3b:00.0",
                     "-t", "server data through a producer")
        server.wait_for_line("CC server context is running")
        client = run(started, env, "comch_data_path_high_speed_client.py", "-p", "3b:00.0",
                     "-t", "client data through a producer")
        client_out = client.finish()
        server_out = server.finish()
    # The consumer of each side prints what the other side's producer wrote into its buffer.
    assert re.search(r"COMCH_COMMON\] INFO: Message received: 'server data through a producer'", client_out), client_out
    assert re.search(r"COMCH_COMMON\] INFO: Message received: 'client data through a producer'", server_out), server_out


# -- Erasure coding -------------------------------------------------------------------------------
def test_erasure_coding_recover_both(env: dict[str, str], tmp_path: Path) -> None:
    original = os.urandom(10_000)
    src = tmp_path / "input.bin"
    src.write_bytes(original)
    blocks = tmp_path / "new" / "blocks"  # made by the sample
    run_one(env, "erasure_coding_recover.py", "-p", "03:00.0", "-i", str(src), "-o", str(blocks), "-b",
            "-x", "cauchy", "-t", "4", "-r", "2", "-d", "1,2")
    block_size = 2560  # ceil(10000 / 4), rounded up to a multiple of 64
    padded = original.ljust(4 * block_size, b"\0")
    for i in (1, 2):  # the deleted blocks are back, byte for byte
        assert (blocks / f"data_block_{i}").read_bytes() == padded[i * block_size:(i + 1) * block_size]
    assert Path(f"{src}_recovered").read_bytes() == original


def test_erasure_coding_output_folder_that_is_a_file(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "input.bin").write_bytes(b"x" * 1000)
    (tmp_path / "taken").write_text("a file, not a folder")
    proc = subprocess.run([sys.executable, str(EXAMPLES / "erasure_coding_recover.py"), "-i", str(tmp_path / "input.bin"),
                           "-o", str(tmp_path / "taken")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out, out
    assert f"Can't create the output folder {tmp_path / 'taken'}" in out
    assert (tmp_path / "taken").read_text() == "a file, not a folder"


def test_erasure_coding_encode_then_decode(env: dict[str, str], tmp_path: Path) -> None:
    original = b"erasure coding, step by step " * 100
    src = tmp_path / "input.txt"
    src.write_bytes(original)
    blocks = tmp_path / "blocks"
    blocks.mkdir()
    run_one(env, "erasure_coding_recover.py", "-i", str(src), "-o", str(blocks), "-x", "vandermonde")
    (blocks / "data_block_0").unlink()  # lose a data block
    out = tmp_path / "decoded.txt"
    run_one(env, "erasure_coding_recover.py", "-i", str(blocks), "-o", str(out), "-x", "vandermonde")
    assert out.read_bytes() == original


# -- Compress -------------------------------------------------------------------------------------
TEXT = b"".join(b"DOCA compress sample line %05d: the quick brown fox\n" % i for i in range(3000))


def test_compress_deflate_then_decompress(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(TEXT)
    run_one(env, "compress_deflate.py", "-f", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.deflate"), "-c")
    compressed = (tmp_path / "out.deflate").read_bytes()
    assert len(compressed) < len(TEXT) and zlib.decompress(compressed, -15) == TEXT  # raw DEFLATE
    run_one(env, "decompress_deflate.py", "-f", str(tmp_path / "out.deflate"), "-o", str(tmp_path / "back.txt"))
    assert (tmp_path / "back.txt").read_bytes() == TEXT


def test_compress_deflate_with_zlib_frame(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(TEXT)
    run_one(env, "compress_deflate.py", "-f", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.zlib"), "-wf")
    assert zlib.decompress((tmp_path / "out.zlib").read_bytes()) == TEXT  # header and Adler-32 trailer
    (tmp_path / "python.zlib").write_bytes(zlib.compress(TEXT))
    run_one(env, "decompress_deflate.py", "-f", str(tmp_path / "python.zlib"), "-o", str(tmp_path / "back.txt"),
            "-wf")
    assert (tmp_path / "back.txt").read_bytes() == TEXT


def test_decompress_lz4_frame(env: dict[str, str], tmp_path: Path) -> None:
    frame = lz4.frame.compress(TEXT, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                               block_checksum=True, content_checksum=False, store_size=False)
    (tmp_path / "in.lz4").write_bytes(frame)
    run_one(env, "decompress_lz4_stream.py", "-f", str(tmp_path / "in.lz4"), "-o", str(tmp_path / "out.txt"),
            "-wf", "-c")
    assert (tmp_path / "out.txt").read_bytes() == TEXT


def test_decompress_lz4_stream_without_frame(env: dict[str, str], tmp_path: Path) -> None:
    frame = lz4.frame.compress(TEXT, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=True,
                               block_checksum=False, content_checksum=False, store_size=False)
    (tmp_path / "blocks.bin").write_bytes(frame[7:-4])  # the data blocks: no header (7 bytes), no end mark
    run_one(env, "decompress_lz4_stream.py", "-f", str(tmp_path / "blocks.bin"), "-o", str(tmp_path / "out.txt"))
    assert (tmp_path / "out.txt").read_bytes() == TEXT


def test_decompress_lz4_frame_with_content_checksum(env: dict[str, str], tmp_path: Path) -> None:
    # The sample compares the task's xxHash with htobe32() of the frame's content checksum.
    frame = lz4.frame.compress(TEXT, block_size=lz4.frame.BLOCKSIZE_MAX64KB, content_checksum=True,
                               store_size=False)
    (tmp_path / "in.lz4").write_bytes(frame)
    run_one(env, "decompress_lz4_stream.py", "-f", str(tmp_path / "in.lz4"), "-o", str(tmp_path / "out.txt"),
            "-wf")
    assert (tmp_path / "out.txt").read_bytes() == TEXT
