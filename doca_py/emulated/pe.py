"""Emulated ``doca_pe``: the one place work and user callbacks run.

``submit`` queues a task here; engines and transport threads post ``(function,
argument)`` pairs to the same ready queue. :meth:`EmuPe.progress` runs the pairs
present when it was called, on the caller's thread: a submitted task's work is done
and its completion delivered only then, as on hardware. With
``DOCA_PY_EMU_SHUFFLE=1`` the task items of one batch (engine launches and completions,
marked by :data:`SHUFFLED`) run in a seeded random order; events and transport launches
(a queue pair executes in order) keep theirs. The
notification handle is an ``eventfd`` written when a post lands on an armed PE, so
callers can sleep in ``select``/``epoll``/asyncio.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from itertools import repeat as _repeat
from typing import Any

from .._backend.protocols.core import CtxHandle
from ..errors import DocaBadState, DocaInUse, DocaInvalidValue, DocaNotPermitted, DocaUsageError
from ..types import PeEventMode
from . import strict

__all__ = ["EmuPe", "pe_create", "SHUFFLED"]

#: Functions whose queue items may be reordered by completion-order shuffling.
SHUFFLED: set[Callable[[Any], object]] = set()
_get_ident = threading.get_ident


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
        #: Same-host transport rings polled by every progress (objects with ``poll() -> bool`` and
        #: ``arm() -> bool``); replaced, never mutated, so a progress may iterate it meanwhile.
        self.pollers: list[Any] = []

    def post(self, fn: Callable[[Any], object], arg: Any) -> None:
        """Queue ``fn(arg)`` for the next progress; safe from any thread."""
        self.ready.append((fn, arg))
        if self.armed:
            self.wake()

    def post_item(self, item: tuple[Callable[[Any], object], Any]) -> None:
        """:meth:`post` with a prebuilt ``(fn, arg)`` item (a task's ``done``): nothing allocated."""
        self.ready.append(item)
        if self.armed:
            self.wake()

    def wake(self) -> None:
        """Make the notification handle readable (the Pe was armed and work just landed)."""
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
        if _get_ident() != self.owner:
            self._adopt_thread()
        if self.running:
            raise DocaUsageError("Pe.progress() must not be called from inside a callback")
        polled = self._poll() if self.pollers else False
        q = self.ready
        n = len(q)
        if not n:
            return polled
        self.running = True
        try:
            if n > 1 and strict.SHUFFLE:
                self._run_shuffled(n)
            else:
                # Only the items present now: callbacks that resubmit wait for the next progress.
                pop = q.popleft
                for _ in _repeat(None, n):
                    fn, arg = pop()
                    fn(arg)
        finally:
            self.running = False
        return True

    def _poll(self) -> bool:
        """Let the transports' rings deliver what their peers published (callbacks may run)."""
        self.running = True
        try:
            return any([p.poll() for p in self.pollers])
        finally:
            self.running = False

    def _adopt_thread(self) -> None:
        if self.owner is not None:
            raise DocaUsageError("a Pe is single-threaded: progress it only from the thread that "
                                 "first progressed it")
        self.owner = threading.get_ident()

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
        # Rings ask their peers for a doorbell before the Pe sleeps (any([...]): every one is armed).
        if self.ready or (self.pollers and any([p.arm() for p in self.pollers])):
            self.armed = False
            os.eventfd_write(self.efd, 1)

    def clear_notification(self, handle: int) -> None:
        if handle != self.efd:
            raise DocaInvalidValue("not this progress engine's notification handle")
        self.armed = False  # woken: the next sleep arms again (request_notification)
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
