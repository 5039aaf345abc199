"""The File Compression flow: the client compresses and sends a file, the server receives,
decompresses, checks and writes it (``file_compression_client`` / ``file_compression_server``).

Client (host): read ``--file``, compress it (DOCA compress, else zlib), send the file info
message and the segments (`.wire`), then wait for the server's answer.

Server (DPU): `FileReceiver` takes the messages (the C app's ``server_recv_event_cb``); once every
announced segment arrived the data is decompressed with DOCA compress, its checksum compared with
the announced one, and only then written: to a temporary file in the target directory, renamed
to ``--file`` when complete, so a failed transfer never leaves a partial file under that name.
``SUCCESS`` is logged once the file is on disk, and before accepting a client the server tries
``--file``'s directory (`check_writable`), so an unwritable ``--file`` fails before any transfer.
The server answers `FINISH_MSG` on success, ``Server failed: <reason>`` otherwise.

Both sides fail (exit status 1, ``EXCEPTION: <reason>``) when the peer goes away, on a malformed
or oversized transfer, a checksum mismatch or the ``--timeout`` without a message.
"""

from __future__ import annotations

import enum
import errno
import fcntl
import logging
import os
import secrets
import stat
import threading
import time
from pathlib import Path

from doca_py.compress import CompressTaskType
from doca_py.errors import DocaError, ErrorCode
from doca_py.log import TRACE

from apps.common.errors import PeerClosedError, ProtocolError, StorageAppError

from apps.common.comch_channel import POLL_INTERVAL, Aborted, ComchChannel
from .config import FileCompressionConfig
from .wire import (FINISH_MSG, pack_file_info, parse_file_info, parse_finish, segment_count, segments,
                   failure_message)
from .worker import DeflateWorker

__all__ = ["SERVER_NAME", "ANSWER_WAIT", "STOPPED", "TransferState", "FileReceiver", "run", "run_client",
           "run_server", "write_atomically", "check_writable", "OUTPUT_MODE", "PART_SUFFIX", "remove_stale_parts"]

SERVER_NAME = "file_compression_server"
"""The comch server name (``SERVER_NAME`` of the C app)."""
ANSWER_WAIT = 0.5
"""Longest wait for a failure answer to leave: a stopped (Ctrl-C) or failed server ends within it,
whatever the client does."""
STOPPED = "the server was stopped (Ctrl-C or SIGTERM)"
"""The failure answer of a server stopped mid-transfer."""
PART_SUFFIX = ".part"
"""Suffix of the temporary name a received file has between its write and its rename."""
OUTPUT_MODE = 0o440
"""Permissions of the written file before the umask (``S_IRUSR | S_IRGRP``, as the C server)."""

log = logging.getLogger("apps.file_compression")


class TransferState(enum.Enum):
    """``enum transfer_state``."""

    IDLE = 0
    IN_PROGRESS = 1
    COMPLETE = 2
    ERROR = 3


class FileReceiver:
    """The server's side of one transfer, fed message by message (no DOCA objects).

    The first message must be the file info; then segments are appended until the announced
    count arrived (COMPLETE). ERROR, with `error`, on a malformed file info or when the data would
    exceed *max_len* bytes (the C app's ``max_compress_file_len``). Messages after COMPLETE or
    ERROR are ignored, as in the C app.
    """

    def __init__(self, max_len: int) -> None:
        self.max_len = max_len
        self.state = TransferState.IDLE
        self.error = ""
        """Why the transfer failed (ERROR)."""
        self.expected_checksum = 0
        self.expected_segments = 0
        self.received_segments = 0
        self.data = bytearray()
        """The compressed file received so far."""
        self.last_message = time.monotonic()
        """When the last message arrived (``time.monotonic``)."""

    def on_message(self, msg: memoryview | bytes) -> None:
        """``server_recv_event_cb``."""
        if self.state in (TransferState.COMPLETE, TransferState.ERROR):
            return
        self.last_message = time.monotonic()
        if self.state is TransferState.IDLE:
            try:
                info = parse_file_info(msg)
            except ProtocolError as exc:
                self._fail(str(exc))
                return
            self.expected_checksum, self.expected_segments = info.checksum, info.num_segs
            self.state = TransferState.IN_PROGRESS
            return
        if len(self.data) + len(msg) > self.max_len:
            self._fail(f"received file exceeded maximum file size. Received length: {len(self.data) + len(msg)}, "
                       f"maximum size: {self.max_len}")
            self.data = bytearray()
            return
        self.data += msg
        self.received_segments += 1
        log.log(TRACE, "Received segment %d of %d (%d bytes)", self.received_segments, self.expected_segments,
                len(msg))
        if self.received_segments == self.expected_segments:
            self.state = TransferState.COMPLETE

    def _fail(self, reason: str) -> None:
        self.error = reason
        self.state = TransferState.ERROR
        log.error("%s", reason[:1].upper() + reason[1:])


def _part_prefix(path: Path) -> str:
    return f".{path.name}."


def _part_name(path: Path) -> str:
    """A temporary name beside *path* that says which process wrote it: ``.<name>.<pid>.<random>.part``."""
    return f"{_part_prefix(path)}{os.getpid()}.{secrets.token_hex(4)}{PART_SUFFIX}"


def _open_unnamed(directory: Path) -> int | None:
    """An unnamed file in *directory* (``O_TMPFILE``: the kernel frees it if this process dies before
    it is linked), or ``None`` where the kernel or the file system cannot make one."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


def _write_fd(fd: int, data: bytes, mode: int) -> None:
    with os.fdopen(fd, "wb", closefd=False) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.fchmod(fd, mode)


def _link_unnamed(fd: int, tmp: Path) -> bool:
    """Give the unnamed file *fd* the name *tmp*; ``False`` where the kernel will not link it through
    ``/proc`` (some sandboxes answer ``EXDEV``)."""
    try:
        os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.ENOENT, errno.EPERM, errno.EACCES, errno.EOPNOTSUPP):
            return False
        raise
    return True


def write_atomically(path: Path, data: bytes, mode: int = OUTPUT_MODE) -> None:
    """Write *data* to an unnamed file in *path*'s directory (``O_TMPFILE``), flush it to disk, name it
    and rename it to *path*: readers never see a partial file under that name, and a process killed
    while writing leaves nothing. Where the kernel or the file system cannot (no ``O_TMPFILE``, or no
    linking it), the file is written under a temporary name (`_part_name`), which
    `remove_stale_parts` deletes at the next start should this process be killed meanwhile."""
    directory = path.parent if str(path.parent) else Path(".")
    umask = os.umask(0)
    os.umask(umask)
    tmp = directory / _part_name(path)
    named = False
    fd = _open_unnamed(directory)
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held while it has a name: `remove_stale_parts` leaves it alone
            _write_fd(fd, data, mode & ~umask)
            named = _link_unnamed(fd, tmp)
            if not named:
                os.close(fd)
                fd = None
        if fd is None:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            named = True
            fcntl.flock(fd, fcntl.LOCK_EX)
            _write_fd(fd, data, mode & ~umask)
        os.replace(tmp, path)
        named = False
    finally:
        if fd is not None:
            os.close(fd)
        if named:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def check_writable(path: Path) -> None:
    """Raise the ``OSError`` that `write_atomically` would meet making a file in *path*'s directory
    (``EACCES``, ``EROFS``, ``ENOENT``, ``ENOTDIR``, ``ENOSPC`` on a file system already full …): an
    unnamed file (else a temporary name, removed at once) gets one byte written and flushed to disk.
    The server runs it before it accepts a client, so an unwritable ``--file`` fails before any
    transfer; a file system that fills up during the transfer still fails the write itself."""
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    fd = _open_unnamed(directory)
    tmp = None
    if fd is None:
        tmp = directory / _part_name(path)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, b"\0")
        os.fsync(fd)
    finally:
        os.close(fd)
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_parts(path: Path) -> list[Path]:
    """Delete the temporary files of `write_atomically` beside *path* that a killed server left: named
    ``.<name>.<pid>.<random>.part``, owned by this user, their writer's process gone and their lock free.
    Returns the files removed (the server logs them)."""
    directory = path.parent if str(path.parent) else Path(".")
    prefix = _part_prefix(path)
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(PART_SUFFIX)):
            continue
        pid_text, _, tag = name[len(prefix):-len(PART_SUFFIX)].partition(".")
        if not (pid_text.isdigit() and tag) or _alive(int(pid_text)):
            continue
        candidate = directory / name
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if os.fstat(fd).st_uid != os.getuid() or not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its writer is alive (in another PID namespace)
            os.unlink(candidate)
            removed.append(candidate)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


# -- client ------------------------------------------------------------------------------------------
def _read_input(path: Path, max_len: int) -> bytearray:
    try:
        size = path.stat().st_size
        if size == 0 or size > max_len:
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"invalid file size {size}: should be greater than zero "
                                  f"and at most {max_len} bytes")
        with open(path, "rb") as f:
            data = bytearray(f.read(max_len + 1))
    except FileNotFoundError:
        raise StorageAppError(ErrorCode.NOT_FOUND, f"file was not found: {path}") from None
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED, f"failed to read {path}: {exc.strerror or exc}") from None
    if not 0 < len(data) <= max_len:
        raise StorageAppError(ErrorCode.INVALID_VALUE, f"{path} changed size while being read")
    return data


def run_client(config: FileCompressionConfig, channel: ComchChannel, answers: list[bytes],
               abort: threading.Event) -> int:
    """``file_compression_client``: compress, connect, send, wait for the server's answer (which the
    channel's receive callback appends to *answers*)."""
    with DeflateWorker.open(CompressTaskType.COMPRESS_DEFLATE) as worker:
        data = _read_input(config.file, worker.max_buf_size)
        log.debug("File size: %d", len(data))
        compressed, checksum = worker.run(data)
        log.debug("Compressed file size: %d (%s)", len(compressed), worker.method.value)
    channel.start(abort)
    total = segment_count(len(compressed), channel.max_msg_size)
    log.info("Sending %d compressed bytes in %d segments", len(compressed), total)
    channel.send(pack_file_info(checksum, total), abort)
    for seg in segments(compressed, channel.max_msg_size):
        if answers:  # the server stopped receiving before the file was complete
            ok, text = parse_finish(answers[0])
            raise StorageAppError(ErrorCode.IO_FAILED, f"the server stopped receiving mid-file: {text}")
        channel.send(seg, abort)
        channel.progress()
    while not answers:
        channel.check()
        if abort.is_set():
            raise Aborted("stopped while waiting for the server's answer")
        channel.progress(POLL_INTERVAL)
    ok, text = parse_finish(answers[0])
    log.info("Received message: %s", text)
    if not ok:
        raise StorageAppError(ErrorCode.BAD_STATE, f"the server could not deliver the file: {text}")
    return 0


# -- server ------------------------------------------------------------------------------------------
def _receive(channel: ComchChannel, receiver: FileReceiver, timeout: int, abort: threading.Event) -> None:
    while receiver.state not in (TransferState.COMPLETE, TransferState.ERROR):
        if abort.is_set():
            raise Aborted("stopped while receiving the file")
        if channel.lost:
            got = (f"after {receiver.received_segments} of {receiver.expected_segments} segments"
                   if receiver.state is TransferState.IN_PROGRESS else "before the file info message")
            raise PeerClosedError(f"the client disconnected {got}: no file written")
        if receiver.state is TransferState.IN_PROGRESS and time.monotonic() - receiver.last_message > timeout:
            raise StorageAppError(ErrorCode.BAD_STATE, f"message was not received at the given timeout ({timeout} s; "
                                  f"{receiver.received_segments} of {receiver.expected_segments} segments)")
        channel.progress(POLL_INTERVAL)
    if receiver.state is TransferState.ERROR:
        raise StorageAppError(ErrorCode.BAD_STATE, f"error detected during comch exchange: {receiver.error}")


def _deliver(config: FileCompressionConfig, worker: DeflateWorker, receiver: FileReceiver) -> None:
    try:
        plain, checksum = worker.run(receiver.data)
    except DocaError as exc:
        raise StorageAppError(exc.code, f"failed to decompress the received file: {exc}") from None
    if checksum != receiver.expected_checksum:
        raise StorageAppError(ErrorCode.BAD_STATE, f"file checksum is different. received: "
                              f"0x{receiver.expected_checksum:x}, calculated: 0x{checksum:x}")
    try:
        write_atomically(config.file, plain)
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED, f"failed to write {config.file}: {exc.strerror or exc}; "
                              f"the file was received and decompressed, but not written") from None
    log.info("SUCCESS: file was received and decompressed successfully")  # only once it is on disk


def _answer(channel: ComchChannel, answer: bytes, abort: threading.Event | None, wait: float) -> None:
    """Send the server's *answer* and progress until it left (at most *wait* seconds)."""
    try:
        channel.send(answer, abort)
        if not channel.flush(wait, abort):
            log.error("The client did not take the server's answer within %g s", wait)
    except (PeerClosedError, DocaError, Aborted) as exc:
        log.error("Failed to send finish message: %s", exc)


def run_server(config: FileCompressionConfig, channel: ComchChannel, receiver: FileReceiver,
               abort: threading.Event) -> int:
    """``file_compression_server``: receive, decompress, verify, write, answer."""
    for stale in remove_stale_parts(config.file):
        log.info("Removed %s, left by a server that was killed while writing", stale)
    try:
        check_writable(config.file)
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED, f"cannot write --file {config.file}: {exc.strerror or exc} "
                              f"(checked before accepting a client)") from None
    with DeflateWorker.open(CompressTaskType.DECOMPRESS_DEFLATE) as worker:
        receiver.max_len = worker.max_buf_size
        channel.start(abort)
        failure: StorageAppError | None = None
        try:
            _receive(channel, receiver, config.timeout, abort)
            _deliver(config, worker, receiver)
        except PeerClosedError:
            raise
        except StorageAppError as exc:
            failure = exc
        except Aborted:
            # Ctrl-C / SIGTERM mid-transfer: tell the client, then go without waiting for it (it may be
            # stalled, and a second Ctrl-C would only set the same flag)
            _answer(channel, failure_message(STOPPED, channel.max_msg_size), None, ANSWER_WAIT)
            raise
        if failure is None:
            _answer(channel, FINISH_MSG, abort, float(config.timeout))
            # the client disconnects once it has the answer: wait for it (within --timeout), as the C helper does
            channel.wait_disconnected(float(config.timeout), abort)
            return 0
        # a failure: the client may be the one not answering (a --timeout), so do not wait a second
        # --timeout for it to disconnect; the answer only has to leave
        _answer(channel, failure_message(str(failure), channel.max_msg_size), abort, ANSWER_WAIT)
        raise failure


def run(config: FileCompressionConfig, abort: threading.Event) -> int:
    """Open the comch channel, then run the client or the server as the device's side says."""
    receiver = FileReceiver(0)
    answers: list[bytes] = []

    def on_message(msg: memoryview) -> None:
        if channel.is_server:
            receiver.on_message(msg)
        else:
            answers.append(bytes(msg))

    channel = ComchChannel.open(SERVER_NAME, config.pci_addr, config.rep_pci or None, on_message)
    try:
        if channel.is_server:
            return run_server(config, channel, receiver, abort)
        return run_client(config, channel, answers, abort)
    finally:
        channel.close()
