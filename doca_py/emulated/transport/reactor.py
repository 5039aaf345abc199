"""The emulated backend's I/O thread: one per process, shared by every transport.

It owns one selector (sockets of comch and rdma), a command queue and timers. It
moves bytes and posts completions to the owning ``Pe``; it never runs user code.
Started on first use, and again in a forked child.
"""

from __future__ import annotations

import heapq
import itertools
import os
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable

from ...log import logger

__all__ = ["Reactor", "reactor"]

_EVR = selectors.EVENT_READ


class Reactor:
    """One selector, a command queue and timers, served by one daemon thread."""

    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.sel.register(self.efd, _EVR, None)
        self.cmds: deque[Callable[[], object]] = deque()
        self.timers: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._run, name="doca_py-io", daemon=True)
        self.thread.start()

    # -- any thread -------------------------------------------------------------------------
    def call(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` on the I/O thread: at once when already on it, else soon."""
        if threading.get_ident() == self.thread.ident:
            fn()
            return
        self.cmds.append(fn)
        os.eventfd_write(self.efd, 1)

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Queue ``fn()`` for the I/O thread, even from the I/O thread (after the current event)."""
        self.cmds.append(fn)
        if threading.get_ident() != self.thread.ident:
            os.eventfd_write(self.efd, 1)

    def on_thread(self) -> bool:
        """Whether the caller is the I/O thread."""
        return threading.get_ident() == self.thread.ident

    # -- I/O thread only ----------------------------------------------------------------------
    def call_later(self, delay: float, fn: Callable[[], object]) -> None:
        """Run ``fn()`` on the I/O thread after *delay* seconds."""
        heapq.heappush(self.timers, (time.monotonic() + delay, next(self._seq), fn))

    def set_mask(self, fileobj: object, old: int, new: int, cb: Callable[[int], None]) -> int:
        """Change what the selector watches for *fileobj*; returns *new*."""
        if old == new:
            return new
        if not old:
            self.sel.register(fileobj, new, cb)  # type: ignore[arg-type]
        elif not new:
            self.sel.unregister(fileobj)  # type: ignore[arg-type]
        else:
            self.sel.modify(fileobj, new, cb)  # type: ignore[arg-type]
        return new

    def _run(self) -> None:
        sel, cmds, timers = self.sel, self.cmds, self.timers
        while True:
            timeout: float | None = None
            if timers:
                timeout = max(0.0, timers[0][0] - time.monotonic())
            if cmds:
                timeout = 0.0
            try:
                events = sel.select(timeout)
            except Exception:  # noqa: BLE001 - the thread must survive anything
                logger.exception("I/O thread: select failed")
                continue
            for key, mask in events:
                cb = key.data
                if cb is None:
                    try:
                        os.eventfd_read(self.efd)
                    except BlockingIOError:
                        pass
                    continue
                try:
                    cb(mask)
                except Exception:  # noqa: BLE001
                    logger.exception("I/O thread: event handler failed")
            while cmds:
                fn = cmds.popleft()
                try:
                    fn()
                except Exception:  # noqa: BLE001
                    logger.exception("I/O thread: command failed")
            if timers:
                now = time.monotonic()
                while timers and timers[0][0] <= now:
                    fn = heapq.heappop(timers)[2]
                    try:
                        fn()
                    except Exception:  # noqa: BLE001
                        logger.exception("I/O thread: timer failed")


_reactor: Reactor | None = None
_reactor_lock = threading.Lock()


def reactor() -> Reactor:
    """This process's I/O thread (started on first use, again after a fork)."""
    global _reactor
    r = _reactor
    if r is not None and r.pid == os.getpid():
        return r
    with _reactor_lock:
        if _reactor is None or _reactor.pid != os.getpid():
            _reactor = Reactor()
        return _reactor
