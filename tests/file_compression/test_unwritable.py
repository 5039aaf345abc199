"""An output the server cannot write (issue 35 item 23): ``-f`` is tried before any transfer, and
``SUCCESS`` is logged only once the file is on disk.

The tests run as root, which permission bits do not stop, so the unwritable places are ones the
kernel refuses to root too: a directory of sysfs (``EACCES``), a path under a regular file
(``ENOTDIR``), and, in a mount namespace of the server's own (``unshare -m``, skipped where it is
not allowed), a read-only bind mount (``EROFS``) and a small tmpfs that is full at the start or
fills up during the write (``ENOSPC``).
"""

from __future__ import annotations

import errno
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from apps.common.errors import StorageAppError
from apps.file_compression import control
from apps.file_compression.cli import parse_args
from apps.file_compression.control import FileReceiver, TransferState, check_writable

from .procs import DEADLINE, DPU_PCI, HOST_PCI, ROOT, Proc

APP = "apps.file_compression"
SYS_FILE = Path("/sys/doca_py_file_compression.bin")


def _sysfs_refuses_files() -> bool:
    try:
        os.close(os.open(SYS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        return exc.errno == errno.EACCES
    os.unlink(SYS_FILE)
    return False


# -- check_writable ---------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["unnamed", "named"])
def test_a_writable_directory_passes_and_keeps_nothing(tmp_path: Path, how: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "named":  # where O_TMPFILE is not available: a temporary name, removed at once
        monkeypatch.setattr(control, "_open_unnamed", lambda directory: None)
    (tmp_path / "out.bin").write_bytes(b"previous")
    check_writable(tmp_path / "out.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    assert (tmp_path / "out.bin").read_bytes() == b"previous"


def test_what_the_kernel_refuses_is_raised(tmp_path: Path) -> None:
    (tmp_path / "plain").write_bytes(b"")
    for path, code in [(tmp_path / "plain" / "out.bin", errno.ENOTDIR), (tmp_path / "missing" / "out.bin", errno.ENOENT),
                       (tmp_path, errno.EISDIR)]:
        with pytest.raises(OSError) as err:
            check_writable(path)
        assert err.value.errno == code, (path, err.value)
    if _sysfs_refuses_files():
        with pytest.raises(PermissionError):
            check_writable(SYS_FILE)


# -- SUCCESS only once written ---------------------------------------------------------------------
class _Worker:
    def run(self, data: bytearray) -> tuple[bytes, int]:
        plain = zlib.decompress(bytes(data), -zlib.MAX_WBITS)
        return plain, 1234


def _received(plain: bytes) -> FileReceiver:
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    receiver = FileReceiver(1 << 20)
    receiver.data = bytearray(c.compress(plain) + c.flush())
    receiver.expected_checksum, receiver.state = 1234, TransferState.COMPLETE
    return receiver


def test_success_is_logged_once_the_file_is_on_disk(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "out.bin"
    config = parse_args(["-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out)])
    on_disk_at_success: list[bool] = []

    class Spy(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("SUCCESS"):
                on_disk_at_success.append(out.exists() and out.read_bytes() == b"plain data")

    spy = Spy()
    caplog.set_level(logging.INFO, logger="apps.file_compression")
    logging.getLogger("apps.file_compression").addHandler(spy)
    try:
        control._deliver(config, _Worker(), _received(b"plain data"))  # type: ignore[arg-type]
    finally:
        logging.getLogger("apps.file_compression").removeHandler(spy)
    assert on_disk_at_success == [True]


def test_a_full_disk_fails_the_file_without_success(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC while the file is written (simulated in the write itself): no SUCCESS, no file, the
    failure names the cause."""
    out = tmp_path / "out.bin"
    config = parse_args(["-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out)])

    def full(fd: int, data: bytes, mode: int) -> None:
        os.write(fd, data[:10])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(control, "_write_fd", full)
    caplog.set_level(logging.INFO, logger="apps.file_compression")
    with pytest.raises(StorageAppError, match="failed to write .*out.bin: No space left on device"):
        control._deliver(config, _Worker(), _received(b"plain data"))  # type: ignore[arg-type]
    assert "SUCCESS" not in caplog.text
    assert list(tmp_path.iterdir()) == []


# -- the server, in a mount namespace of its own -------------------------------------------------------
def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, timeout=60)
    return probe.returncode == 0


needs_unshare = pytest.mark.skipif(not _unshare_works(), reason="unshare -m is not allowed here")
Start = Callable[..., Proc]


@pytest.fixture
def start(tmp_path: Path, comch_env: dict[str, str]) -> Iterator[Start]:
    """``start(argv, setup="")`` → `Proc` of ``python -m argv``, after the shell *setup* in a mount
    namespace of its own when *setup* is given (then ``ls -A`` of ``$D``, the namespace's view of
    the output directory, once the app ended, between ``listing:`` and ``end``)."""
    started: list[Proc] = []

    def run(argv: list[str], setup: str = "") -> Proc:
        app = shlex.join([sys.executable, "-m", *argv])
        if setup:
            cmd = ["unshare", "-m", "--propagation", "private", "sh", "-ec",
                   f"{setup}\nset +e\n{app}\nrc=$?\necho listing:; ls -A \"$D\"; echo end\nexit $rc"]
        else:
            cmd = shlex.split(app)
        errpath = tmp_path / f"child-{len(started)}.err"
        with open(errpath, "wb") as errf:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=comch_env, stdout=subprocess.PIPE, stderr=errf,
                                    start_new_session=True)
        started.append(Proc(proc, errpath))
        return started[-1]

    yield run
    for p in started:
        if p.proc.poll() is None:
            os.killpg(p.proc.pid, signal.SIGKILL)
        p.proc.wait(DEADLINE)
        if p.proc.stdout is not None:
            p.proc.stdout.close()


def _server_fails_at_start(server: Proc, reason: str) -> str:
    rc, out, err = server.finish()
    assert rc == 1, (rc, out, err)
    assert "Server waiting on a client to connect" not in out, out  # before accepting anyone
    assert "EXCEPTION: cannot write --file " in err and reason in err and "Traceback" not in err, err
    return out


@pytest.mark.multiprocess
def test_a_server_refused_by_the_kernel_fails_before_any_transfer(start: Start) -> None:
    if not _sysfs_refuses_files():
        pytest.skip("creating a file in /sys is not refused with EACCES here")
    server = start([APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(SYS_FILE)])
    _server_fails_at_start(server, "Permission denied")


@pytest.mark.multiprocess
@needs_unshare
def test_a_read_only_output_directory_fails_before_any_transfer(start: Start, tmp_path: Path) -> None:
    out = tmp_path / "ro" / "out.bin"
    out.parent.mkdir()
    server = start([APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out)],
                   setup=f"D={shlex.quote(str(out.parent))}\nmount --bind \"$D\" \"$D\"\n"
                         "mount -o remount,bind,ro \"$D\"")
    _server_fails_at_start(server, "Read-only file system")


@pytest.mark.multiprocess
@needs_unshare
def test_a_full_output_directory_fails_before_any_transfer(start: Start, tmp_path: Path) -> None:
    out = tmp_path / "full" / "out.bin"
    out.parent.mkdir()
    server = start([APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out)],
                   setup=f"D={shlex.quote(str(out.parent))}\nmount -t tmpfs -o size=64k tmpfs \"$D\"\n"
                         "head -c 1000000 /dev/zero > \"$D/filler\" || true")
    listing = _server_fails_at_start(server, "No space left on device")
    assert listing.split("listing:")[1].split() == ["filler", "end"]


@pytest.mark.multiprocess
@needs_unshare
def test_a_disk_that_fills_up_during_the_write_fails_the_file_without_success(start: Start, tmp_path: Path) -> None:
    """The check passes (a tmpfs of 64 KiB with room), the file does not fit: the server writes no
    SUCCESS, leaves nothing in the directory, and its answer tells the client why."""
    src, out = tmp_path / "in.bin", tmp_path / "small" / "out.bin"
    out.parent.mkdir()
    src.write_bytes(b"a line of the file that compresses well\n" * 10_000)  # 400 KB, a few KB compressed
    server = start([APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(out)],
                   setup=f"D={shlex.quote(str(out.parent))}\nmount -t tmpfs -o size=64k tmpfs \"$D\"")
    server.wait_for("Server waiting on a client to connect")
    client = start([APP, "-p", HOST_PCI, "-f", str(src)])
    crc, cout, cerr = client.finish()
    rc, sout, serr = server.finish()
    assert rc == 1 and "SUCCESS" not in sout, (sout, serr)
    assert f"failed to write {out}: No space left on device" in serr and "Traceback" not in serr, serr
    assert sout.split("listing:")[1].split() == ["end"]  # no partial file, no temporary file
    assert crc == 1 and "Server failed: failed to write" in cerr and "No space left on device" in cerr, (cout, cerr)
