"""TCP/Unix byte streams on the process's shared I/O thread (:mod:`.reactor`).

A :class:`Stream` reads into a fixed buffer and hands it to its owner's parser, or fills payload
segments straight from the socket (:attr:`Stream.sink`); writers append to :attr:`Stream.out`
under :attr:`Stream.lock` and many frames leave per system call. :attr:`Stream.heard` records the
peer's last sign of life for the transports' retry windows. A :class:`Listener` accepts.
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ...log import logger
from .reactor import reactor

__all__ = ["Stream", "Listener", "RX_SIZE"]

#: Receive buffer of a stream; frames whose payload does not fit are streamed
#: straight into their destination.
RX_SIZE = 1 << 18
_EVR, _EVW = selectors.EVENT_READ, selectors.EVENT_WRITE
_monotonic = time.monotonic


class Listener:
    """A listening TCP socket; ``on_accept(sock)`` runs on the I/O thread."""

    def __init__(self, host: str, port: int, on_accept: Callable[[socket.socket], None]) -> None:
        # A *host* starting with "/" is a Unix socket path (same-host peers: descriptors can travel).
        self.path = host if host.startswith("/") else ""
        family = socket.AF_UNIX if self.path else socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            if self.path:
                try:
                    os.unlink(self.path)  # a dead process's socket (the name holds our pid)
                except FileNotFoundError:
                    pass
                sock.bind(self.path)
            else:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.addr: tuple[str, int] = (self.path, 0) if self.path else sock.getsockname()[:2]
        self.on_accept = on_accept
        self.closed = False
        self.unlinked = False
        self.r = reactor()
        self.r.call(self._register)

    def _register(self) -> None:
        if not self.closed:
            self.r.sel.register(self.sock, _EVR, self._event)

    def _event(self, mask: int) -> None:
        try:
            s, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            logger.exception("listener: accept failed")
            return
        self.on_accept(s)

    def close(self) -> None:
        """Stop listening (any thread)."""
        def do() -> None:
            if self.closed:
                return
            self.closed = True
            try:
                self.r.sel.unregister(self.sock)
            except (KeyError, ValueError):
                pass
            self.sock.close()

        if self.path and not self.unlinked:  # now, not on the I/O thread: a restarted owner binds the name again
            self.unlinked = True
            try:
                os.unlink(self.path)
            except OSError:
                pass
        self.r.call(do)


class Stream:
    """One TCP stream of a connection.

    ``on_data(stream)`` parses frames from ``rx[rpos:rend]`` (I/O thread); it may set
    :attr:`sink` (payload segments filled straight from the socket, then
    ``sink_done()``) or :meth:`pause` the stream. ``on_close(stream, code)`` runs once
    when the stream dies. :attr:`out` holds frames to send, guarded by :attr:`lock`.
    """

    def __init__(self, sock: socket.socket, on_data: Callable[[Stream], None],
                 on_close: Callable[[Stream, int], None]) -> None:
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.r = reactor()
        self.rx = bytearray(RX_SIZE)
        self.mv = memoryview(self.rx)
        self.rpos = 0
        self.rend = 0
        self.out = bytearray()
        self.opos = 0
        self.lock = threading.Lock()
        self.want_write = False
        self.paused = False
        self.registered = 0  # event mask in the selector
        self.closed = False
        self.sink: deque[memoryview] = deque()
        self.sink_done: Callable[[], None] | None = None
        self.on_data = on_data
        self.on_close = on_close
        self.flush_posted = False
        self.ctx: Any = None  # the owner's bookkeeping (set by the rdma layer)
        #: ``time.monotonic()`` when the peer last showed life on this stream: bytes read from it,
        #: or room it made in a socket that had refused our bytes (retry windows, I/O thread).
        self.heard = 0.0

    # -- registration (I/O thread) ------------------------------------------------------------
    def start(self) -> None:
        """Begin reading (any thread)."""
        self.r.call(self._update)

    def _update(self) -> None:
        if self.closed:
            return
        mask = (0 if self.paused else _EVR) | (_EVW if self.want_write else 0)
        if mask == self.registered:
            return
        sel = self.r.sel
        if not self.registered:
            sel.register(self.sock, mask, self._event)
        elif not mask:
            sel.unregister(self.sock)
        else:
            sel.modify(self.sock, mask, self._event)
        self.registered = mask

    def pause(self) -> None:
        """Stop reading until :meth:`resume` (I/O thread)."""
        self.paused = True
        self._update()

    def resume(self) -> None:
        """Read again and parse what is buffered (I/O thread)."""
        if self.closed:
            return
        self.paused = False
        self._update()
        if self.rend > self.rpos:
            self.on_data(self)

    def _event(self, mask: int) -> None:
        if mask & _EVW:
            self._write_ready()
        if mask & _EVR and not self.closed and not self.paused:
            self._read_ready()

    def drain(self) -> None:
        """Read and handle what the socket holds now, without waiting (I/O thread): input that was sent
        before a message that arrived on another stream of the same peer."""
        for _ in range(1024):  # bounded: a peer that keeps sending is read by the reactor as usual
            heard = self.heard
            if self.closed or self.paused:
                return
            self._read_ready()
            if self.heard == heard:
                return

    def _read_ready(self) -> None:
        sink = self.sink
        try:
            if sink:
                seg = sink[0]
                n = self.sock.recv_into(seg)
                if n:
                    self.heard = _monotonic()
                    if n < len(seg):
                        sink[0] = seg[n:]
                    else:
                        sink.popleft()
                        if not sink:
                            done, self.sink_done = self.sink_done, None
                            if done is not None:
                                done()
                    return
            else:
                if self.rpos == self.rend:
                    self.rpos = self.rend = 0
                elif self.rend == RX_SIZE:
                    n = self.rend - self.rpos
                    self.rx[:n] = self.mv[self.rpos:self.rend]
                    self.rpos, self.rend = 0, n
                n = self.sock.recv_into(self.mv[self.rend:])
                if n:
                    self.heard = _monotonic()
                    self.rend += n
                    self.on_data(self)
                    return
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        self.close()  # n == 0: the peer closed its end

    # -- writing ----------------------------------------------------------------------------
    def flush(self) -> None:
        """Send what :attr:`out` holds; the I/O thread finishes what the socket refuses."""
        arm = False
        with self.lock:
            self.flush_posted = False
            if self.closed or self.want_write or self.opos >= len(self.out):
                return
            arm = self._send_locked()
        if arm:
            self.r.call(self._update)

    def _send_locked(self) -> bool:
        out = self.out
        try:
            with memoryview(out) as m, m[self.opos:] as rest:
                n = self.sock.send(rest)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self.r.call(self.close)
            return False
        self.opos += n
        if self.opos >= len(out):
            del out[:]
            self.opos = 0
            self.want_write = False
            return False
        self.want_write = True
        return True

    def _write_ready(self) -> None:
        self.heard = _monotonic()  # the peer drained what its socket had refused
        with self.lock:
            if not self.closed:
                self._send_locked()
        self._update()

    def close(self, code: int = 11) -> None:
        """Close the stream and report *code* (default ``CONNECTION_RESET``) once (I/O thread)."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
        if self.registered:
            try:
                self.r.sel.unregister(self.sock)
            except (KeyError, ValueError):
                pass
            self.registered = 0
        try:
            self.sock.close()
        except OSError:
            pass
        self.sink.clear()
        self.on_close(self, code)
