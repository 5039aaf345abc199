"""File Compression without a peer: the wire format, the checksum, the server's receiver, the
compression worker (DOCA compress and the zlib fallback), the atomic write, the flags and man page."""

from __future__ import annotations

import json
import os
import random
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from doca_py.compress import CompressTaskType
from doca_py.errors import DocaError, DocaNotFound

from apps.common.cli.usage import EXIT_USAGE
from apps.file_compression import FileReceiver, TransferState, build_parser, parse_args, worker
from apps.file_compression.control import write_atomically
from apps.file_compression.wire import (FILE_INFO_SIZE, FINISH_MSG, failure_message, file_checksum,
                                        pack_file_info, parse_file_info, parse_finish, segment_count, segments,
                                        split_checksum)
from apps.file_compression.worker import DeflateWorker, Method, compress_sw, dst_size
from apps.common.cli.manpages import PROGRAMS, build_manpage
from apps.common.errors import ProtocolError

pytestmark = pytest.mark.usefixtures("backend")

DATA = random.Random(1).randbytes(40_000) + b"compressible " * 3000


def test_file_info_layout_is_the_c_struct() -> None:
    msg = pack_file_info(0x0102030405060708, 3)
    assert FILE_INFO_SIZE == 16
    assert msg == bytes.fromhex("0102030405060708" "00000003" "00000000")  # htonq, htonl, tail padding
    info = parse_file_info(msg)
    assert (info.checksum, info.num_segs) == (0x0102030405060708, 3)
    with pytest.raises(ValueError):
        pack_file_info(1 << 64, 1)


@pytest.mark.parametrize("msg", [b"", b"\0" * 12, b"\0" * 15, b"\0" * 17, b"\0" * 20])
def test_file_info_of_the_wrong_size_is_refused(msg: bytes) -> None:
    with pytest.raises(ProtocolError, match=f"size {len(msg)}, expected size 16"):
        parse_file_info(msg)


def test_file_info_without_segments_is_refused() -> None:
    with pytest.raises(ProtocolError, match="0 segments"):
        parse_file_info(pack_file_info(5, 0))


def test_checksum_is_adler_over_crc_of_the_plain_data() -> None:
    cs = file_checksum(DATA)
    assert split_checksum(cs) == (zlib.adler32(DATA), zlib.crc32(DATA))
    assert cs == (zlib.adler32(DATA) << 32) + zlib.crc32(DATA)


def test_segments_cover_the_data() -> None:
    assert segment_count(8160, 4080) == 2 and segment_count(8161, 4080) == 3 and segment_count(1, 4080) == 1
    parts = list(segments(DATA, 4080))
    assert len(parts) == segment_count(len(DATA), 4080)
    assert b"".join(parts) == DATA and all(len(p) == 4080 for p in parts[:-1])
    with pytest.raises(ValueError):
        segment_count(10, 0)


def test_finish_messages() -> None:
    assert FINISH_MSG == b"Server was done receiving messages\x00" and len(FINISH_MSG) == 35
    assert parse_finish(FINISH_MSG) == (True, "Server was done receiving messages")
    failed = failure_message("x" * 100, 40)
    assert len(failed) == 40 and failed.endswith(b"\0")
    assert parse_finish(failed) == (False, ("Server failed: " + "x" * 100)[:39])
    assert parse_finish(b"Server was done receiving messages")[0] is False  # the NUL is part of the text


def _fed(receiver: FileReceiver, *msgs: bytes) -> FileReceiver:
    for m in msgs:
        receiver.on_message(memoryview(m))
    return receiver


def test_receiver_collects_the_announced_segments() -> None:
    r = _fed(FileReceiver(1000), pack_file_info(42, 3), b"a" * 10, b"b" * 10)
    assert r.state is TransferState.IN_PROGRESS and r.received_segments == 2
    _fed(r, b"c" * 5, b"late message, ignored as in the C app")
    assert r.state is TransferState.COMPLETE and r.expected_checksum == 42
    assert bytes(r.data) == b"a" * 10 + b"b" * 10 + b"c" * 5


def test_receiver_refuses_a_bad_file_info_and_ignores_what_follows() -> None:
    r = _fed(FileReceiver(1000), b"\0" * 12, pack_file_info(1, 1), b"data")
    assert r.state is TransferState.ERROR and "size 12" in r.error and not r.data


def test_receiver_refuses_more_data_than_the_maximum() -> None:
    r = _fed(FileReceiver(25), pack_file_info(1, 3), b"a" * 10, b"b" * 10, b"c" * 10)
    assert r.state is TransferState.ERROR
    assert r.error == "received file exceeded maximum file size. Received length: 30, maximum size: 25"
    assert not r.data  # nothing of an oversized file is kept


def test_software_compression_is_zlib_with_the_c_settings() -> None:
    out, cs = compress_sw(DATA, len(DATA) * 2)
    c = zlib.compressobj(-1, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY)
    assert out == c.compress(DATA) + c.flush()
    assert zlib.decompress(out, -15) == DATA and cs == file_checksum(DATA)
    with pytest.raises(DocaError, match="exceed"):
        compress_sw(random.Random(2).randbytes(1000), 100)


def test_destination_sizes_are_the_c_apps() -> None:
    assert dst_size(CompressTaskType.COMPRESS_DEFLATE, 4, 1 << 27) == 20  # n + 16
    assert dst_size(CompressTaskType.COMPRESS_DEFLATE, 100, 1 << 27) == 200  # 2n
    assert dst_size(CompressTaskType.COMPRESS_DEFLATE, 100, 150) == 150
    assert dst_size(CompressTaskType.DECOMPRESS_DEFLATE, 10, 1 << 27) == 10_320  # 1032 n
    assert dst_size(CompressTaskType.DECOMPRESS_DEFLATE, 1 << 20, 1 << 27) == 1 << 27


def test_doca_compress_round_trip_and_checksums() -> None:
    with DeflateWorker.open(CompressTaskType.COMPRESS_DEFLATE) as comp, \
            DeflateWorker.open(CompressTaskType.DECOMPRESS_DEFLATE) as decomp:
        assert comp.method is Method.HW and decomp.method is Method.HW
        stream, cs = comp.run(bytearray(DATA))
        assert zlib.decompress(stream, -15) == DATA and cs == file_checksum(DATA)
        plain, cs2 = decomp.run(bytearray(stream))
        assert plain == DATA and cs2 == cs
        with pytest.raises(DocaError):
            decomp.run(bytearray(stream[: len(stream) // 2]))  # a truncated stream fails the task
        again, _ = decomp.run(bytearray(stream))  # and the worker still works afterwards
        assert again == DATA
        with pytest.raises(DocaError, match="empty"):
            comp.run(bytearray())


def test_fallback_is_zlib_for_compression_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_device(task: CompressTaskType) -> None:
        raise DocaNotFound(f"no device for {task.value}")

    monkeypatch.setattr(worker, "_find_device", no_device)
    with DeflateWorker.open(CompressTaskType.COMPRESS_DEFLATE) as sw:
        assert sw.method is Method.SW and sw.max_buf_size == 128 << 20
        assert sw.run(bytearray(DATA)) == compress_sw(DATA, len(DATA) * 2)
    with pytest.raises(DocaNotFound, match="decompress_deflate"):
        DeflateWorker.open(CompressTaskType.DECOMPRESS_DEFLATE)


def test_atomic_write_leaves_nothing_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"previous")
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(OSError, match="No space"):
        write_atomically(target, b"new content")
    assert target.read_bytes() == b"previous" and sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    monkeypatch.undo()
    write_atomically(target, b"new content")
    assert target.read_bytes() == b"new content" and sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_flags_are_dogas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("y", "z"):
        (tmp_path / name).write_bytes(b"data")
    c = parse_args(["-p", "03:00.0", "-r", "3b:00.0", "-f", "x.bin", "-t", "3"])
    assert (c.pci_addr, c.rep_pci, str(c.file), c.timeout) == ("03:00.0", "3b:00.0", "x.bin", 3)
    assert parse_args(["--pci-addr", "3b:00.0", "--file", "y"]).timeout == 10  # DEFAULT_TIMEOUT
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"doca_program_flags": {"pci-addr": "3b:00.0", "file": "z", "timeout": 4},
                               "doca_general_flags": {"log-level": 60}}))
    c = parse_args(["--json", str(cfg), "-t", "7"])  # the command line wins
    assert (c.pci_addr, str(c.file), c.timeout, int(c.log_level)) == ("3b:00.0", "z", 7, 60)


@pytest.mark.parametrize(("argv", "problem"), [
    (["-f", "x"], "--pci-addr: is required"),
    (["-p", "3b:00.0"], "--file: is required"),
    (["-p", "3b:00.0", "-f", "x", "-t", "0"], "positive value"),
    (["-p", "3b:00.0", "-f", "x" * 256], "too long"),
    # -f '' was Path('.'): the client failed on "." and the server logged SUCCESS, then failed to write
    (["-p", "3b:00.0", "-f", ""], "--file: the file name must not be empty"),
    (["-p", "03:00.0", "-r", "3b:00.0", "-f", ""], "--file: the file name must not be empty"),
    (["-p", "03:00.0", "-r", "3b:00.0", "-f", "."], "--file: '.' is a directory, not a file"),
    (["-p", "03:00.0", "-r", "3b:00.0", "-f", "out/"], "--file: 'out/' names a directory, not a file"),
    (["-p", "03:00.0", "-r", "3b:00.0", "-f", "no/such/dir/x"], "the directory of 'no/such/dir/x' does not exist"),
    (["-p", "3b:00.0", "-f", "."], "--file: '.' is a directory, not a file"),
    (["-p", "3b:00.0", "-f", "absent.bin"], "--file: 'absent.bin' does not exist (the client sends it)"),
    (["-p", "3b:00.0", "-f", "fifo"], "--file: 'fifo' is not a regular file (the client sends it)"),
])
def test_bad_flags_exit_2(argv: list[str], problem: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    err = capsys.readouterr().err
    assert exc.value.code == EXIT_USAGE and problem in err, err
    assert len([line for line in err.splitlines() if ": error: " in line]) == 1, err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_input_is_refused_at_parse_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "secret.bin"
    src.write_bytes(b"data")
    src.chmod(0)
    with pytest.raises(SystemExit) as exc:
        parse_args(["-p", "3b:00.0", "-f", str(src)])
    assert exc.value.code == EXIT_USAGE and "is not readable (the client sends it)" in capsys.readouterr().err


def test_man_page_is_named_like_the_doca_binary() -> None:
    assert PROGRAMS["doca_file_compression"] == "apps.file_compression"
    page = build_manpage(build_parser())
    assert page.startswith(".TH DOCA_FILE_COMPRESSION") and "\\-\\-rep\\-pci" in page


class _Clock:
    """A fake ``time`` for the server's waits: time passes only when the server waits."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class _StalledClient:
    """The server's channel to a client that sent the file info and then nothing (never disconnects)."""

    is_server = True
    max_msg_size = 4080
    lost = False

    def __init__(self, clock: _Clock, on_message: Callable[[memoryview], None]) -> None:
        self.clock, self.on_message = clock, on_message
        self.sent: list[bytes] = []

    def start(self, abort: object) -> None:
        self.on_message(memoryview(pack_file_info(1, 5)))

    def progress(self, timeout: float = 0.0) -> bool:
        self.clock.now += max(timeout, 0.001)
        return False

    def send(self, data: bytes, abort: object = None) -> None:
        self.sent.append(bytes(data))

    def flush(self, timeout: float, abort: object = None) -> bool:
        return True

    def wait_disconnected(self, timeout: float, abort: object = None) -> bool:
        self.clock.now += timeout
        return False

    def close(self, linger: float = 0.0, abort: object = None) -> None:
        self.clock.now += linger


def test_a_stalled_client_ends_the_server_after_one_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server failed after --timeout, then waited a second --timeout for the silent client to
    disconnect, while its message named one: one bound, stated truly (on a fake clock)."""
    import contextlib
    import threading
    import types

    from apps.file_compression import control
    from apps.common.errors import StorageAppError

    clock = _Clock()
    monkeypatch.setattr(control, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    channels: list[_StalledClient] = []

    def open_channel(name: str, pci: str, rep: str | None, on_message: Callable[[memoryview], None]) \
            -> _StalledClient:
        channels.append(_StalledClient(clock, on_message))
        return channels[-1]

    monkeypatch.setattr(control.ComchChannel, "open", staticmethod(open_channel))
    monkeypatch.setattr(control.DeflateWorker, "open",
                        classmethod(lambda cls, task: contextlib.nullcontext(types.SimpleNamespace(max_buf_size=1 << 20))))
    config = parse_args(["-p", "03:00.0", "-r", "3b:00.0", "-f", "out.bin", "-t", "5"])
    with pytest.raises(StorageAppError, match=r"message was not received at the given timeout \(5 s; 0 of 5"):
        control.run(config, threading.Event())
    assert channels[0].sent and channels[0].sent[0].startswith(b"Server failed: ")
    assert clock.now <= 5 + control.ANSWER_WAIT + 0.2, clock.now


_KILLED_WHILE_WRITING = """
import os, signal, sys
from pathlib import Path
from apps.file_compression import control
if sys.argv[2] == "named":
    control._open_unnamed = lambda directory: None
os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)  # killed between the write and the rename
control.write_atomically(Path(sys.argv[1]), b"x" * 100_000)
"""


def _killed_while_writing(target: Path, how: str) -> None:
    import signal
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _KILLED_WHILE_WRITING, str(target), how],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr


def test_a_server_killed_while_writing_leaves_no_temporary_file(tmp_path: Path) -> None:
    """Written through an unnamed file (O_TMPFILE), linked only once complete: nothing to clean up."""
    target = tmp_path / "received.bin"
    _killed_while_writing(target, "unnamed")
    assert list(tmp_path.iterdir()) == []


def test_stale_temporary_files_are_removed_at_the_next_start(tmp_path: Path) -> None:
    """Where O_TMPFILE is not available the temporary file has a name; the next server removes it, and
    only it: not a live writer's, not another file's."""
    from apps.file_compression.control import remove_stale_parts

    target = tmp_path / "received.bin"
    _killed_while_writing(target, "named")
    stale = [p for p in tmp_path.iterdir()]
    assert len(stale) == 1 and stale[0].name.startswith(".received.bin.") and stale[0].name.endswith(".part")
    live = tmp_path / f".received.bin.{os.getpid()}.abcd1234.part"  # this process is alive
    other = tmp_path / ".other.bin.1.abcd1234.part"
    for keep in (live, other):
        keep.write_bytes(b"keep")
    assert remove_stale_parts(target) == stale
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
    write_atomically(target, b"complete")
    assert target.read_bytes() == b"complete"


def test_help_and_man_page_say_what_a_user_meets() -> None:
    """Start order, exit statuses and what -t bounds (issue 26 item 16)."""
    help_text = " ".join(build_parser().format_help().split())
    assert "A client started before its server waits for it silently, as NVIDIA's does, until Ctrl-C" in help_text
    assert "2 on a usage error" in help_text
    assert "-t bounds only the server's wait for the next message of a transfer" in help_text
    assert "nothing else: not the wait for a client to connect, nor the client's waits" in help_text
    page = build_manpage(build_parser())
    assert "waits for it silently" in page and "2 on a usage error" in page
