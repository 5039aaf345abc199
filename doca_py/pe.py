"""``doca_pe``: the progress engine that runs completion callbacks.

Callbacks of every ctx connected to a [`Pe`][doca_py.pe.Pe] run inside [`Pe.progress`][doca_py.pe.Pe.progress],
on the caller's thread. To sleep instead of spinning:

```python
pe.request_notification()
if not pe.progress():
    select.select([pe], [], [], timeout)   # Pe has fileno()
pe.clear_notification()
```
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from typing import TYPE_CHECKING, overload

from ._args import wrong_type
from ._backend import backend
from ._lifetime import DocaObject
from ._backend.protocols.core import PeHandle
from .errors import DocaUsageError
from .types import PeEventMode

if TYPE_CHECKING:
    from .ctx import Ctx

__all__ = ["Pe"]


def _closed_progress() -> bool:
    raise DocaUsageError("Pe is closed")



class Pe(DocaObject):
    """``doca_pe``. Closing it closes (stops and destroys) every connected ctx first."""

    _warn_unclosed = True

    def __init__(self, *, _handle: PeHandle | None = None) -> None:
        super().__init__()
        self._h: PeHandle = backend.pe.pe_create() if _handle is None else _handle
        self._arm_finalizer(self._h.destroy)
        # Bound once: progress() is the hottest call in every event loop.
        self.progress = self._h.progress  # type: ignore[method-assign]

    @classmethod
    def from_handle(cls, handle: PeHandle | int) -> Pe:
        """Python-only: wrap an existing ``doca_pe`` without taking ownership.

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_pe`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        pe = cls(_handle=backend.borrow_pe(handle) if isinstance(handle, int) else handle)
        pe._borrow()
        return pe

    def progress(self) -> bool:
        """``doca_pe_progress``: run pending completions, events and state changes; ``True`` if progress was
        made (a task completed, an event was handled, a ctx changed state), as DOCA's 1. Starting the work of
        a submitted task is not progress: a task that waits (a sync event wait, a transfer in flight) makes
        none until it completes."""
        return self._h.progress()

    def connect_ctx(self, ctx: Ctx) -> None:
        """``doca_pe_connect_ctx``: bind an idle ctx to this engine (once, for the ctx's lifetime)."""
        from .ctx import Ctx  # ctx imports pe

        self._check_open()
        if not isinstance(ctx, Ctx):
            raise wrong_type("Pe.connect_ctx", Ctx, ctx=ctx)
        self._h.connect_ctx(ctx._ctx_h)
        self._adopt(ctx)
        ctx._pe = self

    def get_notification_handle(self) -> int:
        """``doca_pe_get_notification_handle``: a file descriptor that becomes readable when an armed engine has
        work."""
        return self._h.get_notification_handle()

    def fileno(self) -> int:
        """``doca_pe_get_notification_handle``: the notification handle, so a Pe can be passed to ``select``."""
        return self._h.get_notification_handle()

    def request_notification(self) -> None:
        """``doca_pe_request_notification``: arm: the next completion makes the handle readable."""
        self._h.request_notification()

    def clear_notification(self, handle: int | None = None) -> None:
        """``doca_pe_clear_notification``: acknowledge a wake-up before re-arming (DOCA on Linux ignores *handle*:
        NVIDIA's pe_event sample passes 0)."""
        self._h.clear_notification(self._h.get_notification_handle() if handle is None else handle)

    @overload
    def wait(self, timeout: float | None = None) -> bool: ...

    @overload
    def wait(self, timeout: float | None = None, *, extra_fds: Sequence[int]) -> list[int]: ...

    def wait(self, timeout: float | None = None, *, extra_fds: Sequence[int] | None = None) -> bool | list[int]:
        """``doca_pe_progress``, sleeping on the notification handle up to *timeout* seconds if idle.

        Returns whether progress was made (as [`progress`][doca_py.pe.Pe.progress]). With *extra_fds* (file
        descriptors such as a worker's wake-up eventfd) the sleep also ends when one of them is readable, and the result is
        the list of those that are (empty when only completions, or nothing, ended it); the
        caller drains them. Either way the completions that ended the sleep have run.
        """
        h = self._h
        if h.progress():
            return True if extra_fds is None else []
        h.request_notification()
        fd = h.get_notification_handle()
        ready, _, _ = select.select([fd] if extra_fds is None else [fd, *extra_fds], [], [], timeout)
        if fd in ready:
            h.clear_notification(fd)
        ran = h.progress()
        if extra_fds is None:
            return ran
        return [f for f in ready if f != fd]

    def get_num_inflight_tasks(self) -> int:
        """``doca_pe_get_num_inflight_tasks``: tasks submitted on the connected contexts and not completed yet."""
        return self._h.get_num_inflight_tasks()

    def set_event_mode(self, mode: PeEventMode) -> None:
        """``doca_pe_set_event_mode``: which completions ``progress()`` reports.

        :param mode: a [`PeEventMode`][doca_py.types.PeEventMode].
        :raises DocaNotSupported: on DOCA 2.6 (``doca_pe_set_event_mode`` exists from 3.0).
        """
        self._h.set_event_mode(int(mode))

    def _close(self) -> None:
        self._h.destroy()
        self.progress = _closed_progress  # type: ignore[method-assign]

    def _repr_facts(self) -> list[str]:
        return [f"ctxs={len(self._children)}", f"inflight={self._h.get_num_inflight_tasks()}"]

    def __enter__(self) -> Pe:
        return self
