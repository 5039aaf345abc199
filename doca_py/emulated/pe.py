"""Emulated ``doca_pe``: the one place work and user callbacks run.

``submit`` queues a task here; engines and transport threads post ``(function,
argument)`` pairs to the same ready queue. :meth:`EmuPe.progress` runs the pairs
present when it was called, on the caller's thread: a submitted task's work is done
and its completion delivered only then, as on hardware. With
``DOCA_PY_EMU_SHUFFLE=1`` the task items of one batch (launches and completions, marked
by :data:`SHUFFLED`) run in a seeded random order *across* DOCA work queues and never within
one: items of tasks on one :class:`Lane` (an RDMA send or receive queue, a comch connection,
producer or consumer) keep their relative order, and events keep their places. The order is
keyed, not drawn: each item's key is a hash of the seed and the item's identity (its task's
:func:`.strict.task_id` and whether it launches or completes it), so the same items in a batch
always run in the same order, whatever batches came before. Which items one ``progress()``
finds together (the content of a batch) still depends on timing: a completion posted by a
transport or engine thread, or by the peer process, lands in whichever batch is next. A lane also
delivers its completions in submission order whichever thread or path finished the work
first (:func:`..ctx.complete_task`), as a queue pair's completion queue does. The
notification handle is an ``eventfd`` written when a post lands on an armed PE, so
callers can sleep in ``select``/``epoll``/asyncio.

``progress()`` returns what ``doca_pe_progress`` does: whether progress was made — a completion, an
event, a state change (:data:`QUIET` names the items that are not: a task's launch unless it completed
the task at once, a transport's flush). The flushes a batch's launches need (:meth:`EmuPe.defer`) run at
the end of that batch, so a loop that progresses until nothing happens has pushed out what it submitted.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from itertools import repeat as _repeat
from typing import Any

from .._backend.protocols.core import CtxHandle
from ..errors import DocaBadState, DocaInUse, DocaNotPermitted, DocaUsageError
from ..types import PeEventMode
from . import strict, trace
from . import version as emu_version

__all__ = ["EmuPe", "Lane", "pe_create", "SHUFFLED", "QUIET"]

#: Functions whose queue items may be reordered by shuffling, each with whether an item whose task has
#: no lane may move (engine work: yes; a transport launch without a queue: no, it keeps its place).
SHUFFLED: dict[Callable[[Any], object], bool] = {}

#: Work items that are no progress in DOCA's sense by themselves: ``doca_pe_progress`` returns 1 for a
#: task completion, an event or a ctx state transition, not for work a task started. ``True``: a task's
#: launch (the item's argument), progress only when it completed the task at once; ``False``: internal
#: work that never is (a transport's flush, a poll nudge).
QUIET: dict[Callable[[Any], object], bool] = {}


class Lane:
    """One DOCA work queue: its tasks start and complete in submission order.

    ``submit`` numbers a task in its lane; completions that arrive early (another path or thread
    finished a later task first) wait in :attr:`parked` until their predecessors are delivered.
    Only the Pe's thread touches a lane (submit and ``progress()``).
    """

    __slots__ = ("submitted", "delivered", "parked")

    def __init__(self) -> None:
        self.submitted = 0
        self.delivered = 0
        self.parked: dict[int, Any] = {}


_get_ident = threading.get_ident
_Item = tuple[Callable[[Any], object], Any]


class EmuPe:
    """Emulated ``doca_pe``."""

    def __init__(self) -> None:
        self.ready: deque[tuple[Callable[[Any], object], Any]] = deque()
        self.ctxs: list[Any] = []
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        #: The Pe may sleep: a post must write :attr:`efd`. Set and cleared under :attr:`lock`, and a
        #: post from another thread appends and looks at it under the same lock, so that "arm, then
        #: look at the queue" and "queue, then look at the flag" cannot both miss (no wake-up lost
        #: without the GIL either). The Pe's own thread (submit, the pollers) may read it unlocked.
        self.armed = False
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.running = False
        self.event_mode = PeEventMode.PROGRESS_ALL
        #: Same-host transport rings polled by every progress (objects with ``poll() -> bool`` and
        #: ``arm() -> bool``); replaced, never mutated, so a progress may iterate it meanwhile.
        self.pollers: list[Any] = []
        #: Internal work for the end of the running batch (:meth:`defer`); only the Pe's thread touches it.
        self.deferred: deque[_Item] = deque()

    def post(self, fn: Callable[[Any], object], arg: Any) -> None:
        """Queue ``fn(arg)`` for the next progress; safe from any thread."""
        self.post_item((fn, arg))

    def post_item(self, item: tuple[Callable[[Any], object], Any]) -> None:
        """:meth:`post` with a prebuilt ``(fn, arg)`` item (a task's ``done``): nothing allocated."""
        with self.lock:
            self.ready.append(item)
            armed = self.armed
            self.armed = False
        if armed:
            os.eventfd_write(self.efd, 1)

    def post_items(self, items: list[tuple[Callable[[Any], object], Any]]) -> None:
        """:meth:`post_item` for several, in order (an I/O thread's batch)."""
        with self.lock:
            self.ready.extend(items)
            armed = self.armed
            self.armed = False
        if armed:
            os.eventfd_write(self.efd, 1)

    def wake(self) -> None:
        """Make the notification handle readable (the Pe was armed and work just landed)."""
        with self.lock:
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
        polled = False
        if self.pollers:  # _poll, inlined: one frame per progress less
            self.running = True
            try:
                for p in self.pollers:
                    if p.poll():
                        polled = True
            except BaseException as exc:
                if trace.ON: trace.raised(exc)  # trace hook: a callback raised, the exception leaves progress()
                raise
            finally:
                self.running = False
        q = self.ready
        if not q:
            return polled
        n = len(q)
        self.running = True
        made = polled
        try:
            if n > 1 and strict.SHUFFLE:
                made = self._run_shuffled(n) or made
            else:
                # Only the items present now: callbacks that resubmit wait for the next progress.
                pop = q.popleft
                for _ in _repeat(None, n):
                    fn, arg = pop()
                    fn(arg)
                    if not made:  # _made_progress inlined: no call per item
                        made = (QUIET[fn] and not arg.inflight) if fn in QUIET else True
            if self.deferred:
                self._run_deferred()
        except BaseException as exc:
            if trace.ON: trace.raised(exc)  # trace hook: a callback raised, the exception leaves progress()
            if self.deferred:  # the next progress() runs them
                self.post_items(list(self.deferred))
                self.deferred.clear()
            raise
        finally:
            self.running = False
        return made

    def defer(self, fn: Callable[[Any], object], arg: Any) -> None:
        """Queue internal work (a connection's flush) for the end of the running ``progress()`` batch — on
        the Pe's thread inside ``progress()`` — or else for the next ``progress()``. Deferred work runs no
        user code; a loop that progresses until ``progress()`` returns False has then pushed out what its
        tasks queued."""
        if self.running and _get_ident() == self.owner:
            self.deferred.append((fn, arg))
        else:
            self.post(fn, arg)

    def _run_deferred(self) -> None:
        deferred = self.deferred
        while deferred:
            fn, arg = deferred.popleft()
            fn(arg)

    def _adopt_thread(self) -> None:
        if self.owner is not None:
            raise DocaUsageError("a Pe is single-threaded: progress it only from the thread that "
                                 "first progressed it")
        self.owner = threading.get_ident()

    def _run_shuffled(self, n: int) -> bool:
        pop = self.ready.popleft
        batch = [pop() for _ in range(n)]
        items = _interleave(batch)
        made = False
        for k, (fn, arg) in enumerate(items):
            try:
                fn(arg)
            except BaseException:
                self.ready.extendleft(reversed(items[k + 1:]))  # the rest runs on the next progress
                raise
            if not made:
                made = _made_progress(fn, arg)
        return made

    def get_notification_handle(self) -> int:
        return self.efd

    def request_notification(self) -> None:
        with self.lock:
            self.armed = True
            pending = bool(self.ready)
        # Rings ask their peers for a doorbell before the Pe sleeps (any([...]): every one is armed).
        if pending or (self.pollers and any([p.arm() for p in self.pollers])):
            self.wake()

    def clear_notification(self, handle: int) -> None:
        # DOCA on Linux ignores *handle* (NVIDIA's pe_event sample passes 0): the Pe clears its own.
        with self.lock:
            self.armed = False  # woken: the next sleep arms again (request_notification)
        try:
            os.eventfd_read(self.efd)
        except BlockingIOError:
            pass

    def get_num_inflight_tasks(self) -> int:
        return sum(c.inflight for c in self.ctxs)

    def set_event_mode(self, mode: int) -> None:
        emu_version.require("doca_pe_set_event_mode", (3, 0), "added after 2.6")
        self.event_mode = PeEventMode(mode)

    def destroy(self) -> None:
        if self.ctxs:
            raise DocaInUse(f"{len(self.ctxs)} ctx(s) are still connected to this progress engine")
        os.close(self.efd)
        self.efd = -1


def _made_progress(fn: Callable[[Any], object], arg: Any) -> bool:
    """Whether running the item ``fn(arg)`` was progress as ``doca_pe_progress`` counts it (:data:`QUIET`)."""
    launch = QUIET.get(fn)
    if launch is None:
        return True
    return launch and not arg.inflight


def _item_key(fn: Callable[[Any], object], arg: Any, i: int) -> tuple[int, int]:
    """The shuffle key of a batch's *i*-th item: a hash of the seed and the item's identity (a task's
    pool, submission number and step), its place in the batch only for an item that has none."""
    pool = getattr(arg, "pool", None)
    uid = getattr(pool, "uid", None)
    if uid is None:
        return strict.order_key(f"?{i}"), i
    return strict.order_key(f"{uid}#{arg.nth}/{fn.__name__}"), i


def _interleave(batch: list[_Item]) -> list[_Item]:
    """A seeded order of *batch*, keyed on its items' identities: shuffled items change places, a
    lane's items keep their order, events keep their places."""
    slots: list[int] = []
    keys: list[tuple[tuple[int, int], object]] = []
    queues: dict[object, deque[int]] = {}
    for i, (fn, arg) in enumerate(batch):
        free = SHUFFLED.get(fn)
        if free is None:
            continue  # an event: stays where it is
        lane = getattr(arg, "lane", None)
        if lane is None:
            if not free:
                continue
            lane = i  # a queue of its own
        slots.append(i)
        keys.append((_item_key(fn, arg, i), lane))
        q = queues.get(lane)
        if q is None:
            queues[lane] = q = deque()
        q.append(i)
    if len(slots) < 2:
        return batch
    # The queues interleaved in the order of their items' keys, each consumed front first.
    keys.sort(key=_first)
    items = list(batch)
    for i, (_, lane) in zip(slots, keys):
        items[i] = batch[queues[lane].popleft()]
    return items


def _first(pair: tuple[tuple[int, int], object]) -> tuple[int, int]:
    return pair[0]


def pe_create() -> EmuPe:
    """``doca_pe_create``."""
    return EmuPe()
