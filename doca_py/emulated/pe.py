"""Emulated ``doca_pe``: the one place work and user callbacks run.

``submit`` queues a task here; engines and transport threads post ``(function,
argument)`` pairs to the same ready queue. :meth:`EmuPe.progress` runs the pairs
present when it was called, on the caller's thread: a submitted task's work is done
and its completion delivered only then, as on hardware. With
``DOCA_PY_EMU_SHUFFLE=1`` the task items of one batch (launches and completions,
marked by :data:`SHUFFLED`) run in a seeded random order; events keep theirs. The
notification handle is an ``eventfd`` written when a post lands on an armed PE, so
callers can sleep in ``select``/``epoll``/asyncio.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ..abc import CtxHandle
from ..errors import DocaBadState, DocaInUse, DocaInvalidValue, DocaNotPermitted, DocaUsageError
from ..types import PeEventMode
from . import strict

__all__ = ["EmuPe", "pe_create", "SHUFFLED"]

#: Functions whose queue items may be reordered by completion-order shuffling.
SHUFFLED: set[Callable[[Any], object]] = set()


class EmuPe:
    """Emulated ``doca_pe``."""

    def __init__(self) -> None:
        self.ready: deque[tuple[Callable[[Any], object], Any]] = deque()
        self.ctxs: list[Any] = []
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self.armed = False
        self.owner: int | None = None
        self.running = False
        self.event_mode = PeEventMode.PROGRESS_ALL

    def post(self, fn: Callable[[Any], object], arg: Any) -> None:
        """Queue ``fn(arg)`` for the next progress; safe from any thread."""
        self.ready.append((fn, arg))
        if self.armed:
            self.armed = False
            os.eventfd_write(self.efd, 1)

    def connect_ctx(self, ctx: CtxHandle) -> None:
        from .ctx import EmuCtx

        assert isinstance(ctx, EmuCtx)
        if ctx.pe is not None:
            raise DocaNotPermitted("ctx is already connected to a progress engine (only destroy unbinds it)")
        if ctx.state:
            raise DocaBadState("connect_ctx needs an idle ctx")
        ctx.pe = self
        self.ctxs.append(ctx)

    def progress(self) -> bool:
        tid = threading.get_ident()
        if tid != self.owner:
            if self.owner is not None:
                raise DocaUsageError("a Pe is single-threaded: progress it only from the thread that "
                                     "first progressed it")
            self.owner = tid
        if self.running:
            raise DocaUsageError("Pe.progress() must not be called from inside a callback")
        q = self.ready
        n = len(q)
        if not n:
            return False
        self.running = True
        try:
            if strict.SHUFFLE and n > 1:
                self._run_shuffled(n)
            else:
                pop = q.popleft
                for _ in range(n):
                    fn, arg = pop()
                    fn(arg)
        finally:
            self.running = False
        return True

    def _run_shuffled(self, n: int) -> None:
        pop = self.ready.popleft
        batch = [pop() for _ in range(n)]
        slots = [i for i, (fn, _) in enumerate(batch) if fn in SHUFFLED]
        order = slots[:]
        strict.shuffler().shuffle(order)
        items = list(batch)
        for i, j in zip(slots, order):
            items[i] = batch[j]
        for k, (fn, arg) in enumerate(items):
            try:
                fn(arg)
            except BaseException:
                self.ready.extendleft(reversed(items[k + 1:]))  # the rest runs on the next progress
                raise

    def get_notification_handle(self) -> int:
        return self.efd

    def request_notification(self) -> None:
        self.armed = True
        if self.ready:
            self.armed = False
            os.eventfd_write(self.efd, 1)

    def clear_notification(self, handle: int) -> None:
        if handle != self.efd:
            raise DocaInvalidValue("not this progress engine's notification handle")
        try:
            os.eventfd_read(self.efd)
        except BlockingIOError:
            pass

    def get_num_inflight_tasks(self) -> int:
        return sum(c.inflight for c in self.ctxs)

    def set_event_mode(self, mode: int) -> None:
        self.event_mode = PeEventMode(mode)

    def destroy(self) -> None:
        if self.ctxs:
            raise DocaInUse(f"{len(self.ctxs)} ctx(s) are still connected to this progress engine")
        os.close(self.efd)
        self.efd = -1


def pe_create() -> EmuPe:
    """``doca_pe_create``."""
    return EmuPe()
