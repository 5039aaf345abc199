"""Handing exported memory to another local process, only for a valid blob.

An exporting process listens on a Unix socket in its private runtime directory
(mode 0700: other users cannot connect). An importer sends the export blob; the
exporter checks it against its own export records (key, kind, permissions, range)
and only then passes the memfd back with ``SCM_RIGHTS`` — read-only when the
export grants no write — with, for a re-export, its revocation table (read-only). Nothing is
reachable through ``/proc/<pid>/fd``: exporters and importers mark themselves non-dumpable
(:func:`doca_py.memory.keep_memory_private`, ``PR_SET_DUMPABLE``), which closes their ``/proc``
entries to other processes of the same user; ``DOCA_PY_EMU_DUMPABLE=1`` keeps them
dumpable (for a debugger) at the price of that isolation.
"""

from __future__ import annotations

import atexit
import os
import socket
import struct
import threading
from collections.abc import Callable

from ..errors import DocaError, DocaNotFound, DocaNotPermitted, lookup
from ..log import logger
from ..memory import keep_memory_private
from .rundir import private_dir

__all__ = ["Grant", "serve", "request_fd", "socket_path", "HANDSHAKE_TIMEOUT"]

#: How long either side waits for the other during the handshake.
HANDSHAKE_TIMEOUT = 5.0
_STATUS = struct.Struct("<I")

#: What the exporter's resolver returns for a valid blob: the memfd, whether to grant writes, and
#: further descriptors the importer may only read (a re-exporter's revocation table).
Grant = tuple[int, bool, tuple[int, ...]]
Resolver = Callable[[bytes], Grant]

_lock = threading.Lock()
_served_pid = 0
_resolver: Resolver | None = None


def socket_path(pid: int) -> str:
    """The handshake socket of the exporting process *pid*."""
    return os.path.join(private_dir("mem", os.environ.get("DOCA_PY_MEM_DIR")), f"{pid}.sock")


def serve(resolver: Resolver) -> None:
    """Start answering import requests for this process (idempotent; again after a fork)."""
    global _served_pid, _resolver
    with _lock:
        _resolver = resolver
        if _served_pid == os.getpid():
            return
        path = socket_path(os.getpid())
        try:
            os.unlink(path)  # a dead process with our pid left it
        except FileNotFoundError:
            pass
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        srv.bind(path)
        srv.listen(64)
        keep_memory_private()
        _served_pid = os.getpid()
        threading.Thread(target=_accept_loop, args=(srv,), name="doca_py-memshare", daemon=True).start()
        atexit.register(_unlink, path, os.getpid())


def _unlink(path: str, pid: int) -> None:
    if os.getpid() == pid:
        try:
            os.unlink(path)
        except OSError:
            pass


def _accept_loop(srv: socket.socket) -> None:
    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        with conn:
            try:
                _answer(conn)
            except OSError as exc:  # a peer that hangs up or stalls loses only its own request
                logger.debug("memory import handshake failed: %s", exc)


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _answer(conn: socket.socket) -> None:
    conn.settimeout(HANDSHAKE_TIMEOUT)
    (n,) = _STATUS.unpack(_recv_exact(conn, _STATUS.size) or bytes(_STATUS.size))
    blob = _recv_exact(conn, min(n, 4096))
    resolver = _resolver
    try:
        if resolver is None:
            raise DocaNotFound("this process exports no memory")
        fd, writable, extra = resolver(blob)
    except DocaError as exc:
        msg = str(exc).encode()[:512]
        conn.sendall(_STATUS.pack(int(exc.code)) + _STATUS.pack(len(msg)) + msg)
        return
    # A read-only grant is a read-only descriptor: the importer cannot write even by mistake.
    send = [fd if writable else _read_only(fd), *(_read_only(x) for x in extra)]
    try:
        socket.send_fds(conn, [_STATUS.pack(0) + _STATUS.pack(0)], send)
    finally:
        for x in send:
            if x != fd:
                os.close(x)


def _read_only(fd: int) -> int:
    return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)


def request_fd(pid: int, blob: bytes) -> tuple[int, tuple[int, ...]]:
    """Present *blob* to the exporting process *pid*; its memfd and the read-only extras
    (:data:`Grant`), or the exporter's refusal."""
    keep_memory_private()  # the memfd about to arrive must not be reachable through our /proc either
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        try:
            sock.connect(socket_path(pid))
        except (FileNotFoundError, ConnectionRefusedError):
            raise DocaNotFound(f"exporting process {pid} or its memory is gone") from None
        sock.sendall(_STATUS.pack(len(blob)) + blob)
        msg, fds, _, _ = socket.recv_fds(sock, 2 * _STATUS.size, 4)
        if len(msg) < 2 * _STATUS.size:
            for fd in fds:
                os.close(fd)
            raise DocaNotPermitted(f"exporting process {pid} closed the import handshake")
        code, n = struct.unpack("<II", msg[:8])
        if code:
            for fd in fds:
                os.close(fd)
            why = _recv_exact(sock, min(n, 4096)).decode(errors="replace")
            raise lookup(code)(f"the exporter refused the import: {why}")
        if not fds:
            raise DocaNotPermitted("the exporter sent no memory descriptor")
        return fds[0], tuple(fds[1:])
    except DocaError:
        raise  # the exporter's answer (DocaError classes mix in OSError subclasses)
    except (OSError, ValueError) as exc:
        raise DocaNotFound(f"cannot reach exporting process {pid}: {exc}") from None
    finally:
        sock.close()

