"""How a storage-app worker sleeps: on its ``Pe`` and on a wake-up eventfd, whichever comes first.

Every worker thread (target, bridges, initiator) progresses its ``Pe`` until idle and then
sleeps until a completion arrives, the control thread wants something (a command, a stop) or a
timeout passes. :class:`Wakeup` is the control thread's side of that (:meth:`Wakeup.set`) and
the worker's sleep (:meth:`Wakeup.sleep`, on top of
[`Pe.wait`][doca_py.pe.Pe.wait] with ``extra_fds``).
"""

from __future__ import annotations

import os
import select

import doca_py as d

__all__ = ["Wakeup"]


class Wakeup:
    """An eventfd that ends a worker's sleep; closed by its owner once nobody can set it."""

    __slots__ = ("_fd", "_fds")

    def __init__(self) -> None:
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._fds: tuple[int, ...] = (self._fd,)  # built once: sleep() passes it to every wait

    def fileno(self) -> int:
        """The eventfd (``-1`` once closed)."""
        return self._fd

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._fd < 0

    def set(self) -> None:
        """End the worker's current or next sleep (any thread; a no-op once closed)."""
        fd = self._fd
        if fd >= 0:
            try:
                os.eventfd_write(fd, 1)
            except OSError:  # closed by the owner meanwhile: nobody is sleeping any more
                pass

    def sleep(self, pe: d.Pe | None, timeout: float) -> bool:
        """Sleep up to *timeout* s until a completion of *pe* (it has then run), :meth:`set`
        or the timeout; whether :meth:`set` ended it (the wake-up is consumed)."""
        if pe is None:
            ready = bool(select.select(self._fds, [], [], timeout)[0])
        else:
            ready = bool(pe.wait(timeout, extra_fds=self._fds))
        if ready:
            try:
                os.eventfd_read(self._fd)
            except BlockingIOError:
                pass
        return ready

    def close(self) -> None:
        """Close the eventfd (idempotent)."""
        fd, self._fd = self._fd, -1
        self._fds = ()
        if fd >= 0:
            os.close(fd)
