"""asyncio for doca_py: a [`Pe`][doca_py.pe.Pe] driven by an event loop.

[`attach`][doca_py.aio.attach] registers the engine's notification handle with the running loop;
from then on the loop calls ``progress()`` whenever the engine has work, so task
callbacks and state changes run on the loop's thread without a polling loop. On top
of that:

```python
import doca_py as d
from doca_py import aio

async def copy(pe: d.Pe, dma: d.Dma, src: d.Buf, dst: d.Buf) -> None:
    async with aio.attach(pe):
        dma.start()
        await dma.started()                 # RUNNING (or DocaBadState if it stopped)
        task = dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        await task                          # the task, or its DocaError
        task.free()
```

``await task`` resolves when the task's completion callback has run (the callbacks
registered with ``*_set_conf`` still run first); a failed task raises the
[`DocaError`][doca_py.errors.DocaError] of its status, with its reason. ``await
ctx.started()`` / ``await ctx.stopped()`` wait for a state, and [`AttachedPe.until`][doca_py.aio.AttachedPe.until]
waits for any condition (a connection established, a message counted) re-checked
after every ``progress()``. Works on both backends: the emulated engine's handle is an
``eventfd``, the native one DOCA's own.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._args import expect
from .errors import DocaBadState, DocaTimeout, DocaUsageError
from .types import CtxState

if TYPE_CHECKING:
    from .ctx import Ctx, TaskT
    from .pe import Pe

__all__ = ["AttachedPe", "attach", "attached", "wait_task", "wait_state"]

_attached: weakref.WeakKeyDictionary[Pe, AttachedPe] = weakref.WeakKeyDictionary()


class AttachedPe:
    """A [`Pe`][doca_py.pe.Pe] whose notification handle an event loop watches.

    Make one with [`attach`][doca_py.aio.attach]; [`detach`][doca_py.aio.AttachedPe.detach] (or leaving ``async with``) gives the
    engine back to the caller. At most one loop drives a Pe at a time."""

    def __init__(self, pe: Pe, loop: asyncio.AbstractEventLoop) -> None:
        self.pe = pe
        """The attached [`Pe`][doca_py.pe.Pe]."""
        self.loop = loop
        """The event loop watching the Pe's notification handle."""
        self._fd = pe.get_notification_handle()
        self._conditions: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._scheduled = False
        loop.add_reader(self._fd, self._readable)
        self.kick()

    # -- driving the engine -------------------------------------------------------------------
    def _readable(self) -> None:
        if not self.pe.closed:
            self.pe.clear_notification()
        self._drain()

    def kick(self) -> None:
        """Progress soon (after a submit made outside a callback, for instance)."""
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        pe = self.pe
        if pe.closed:
            self.detach()
            return
        budget = 1024  # let other coroutines run between bursts
        while pe.progress() and budget:
            budget -= 1
        self._check_conditions()
        if not budget:
            self.kick()
            return
        # Arm, then look once more: work that landed in between would not wake us.
        pe.request_notification()
        if pe.progress():
            self._check_conditions()
            self.kick()

    def _check_conditions(self) -> None:
        if not self._conditions:
            return
        keep = []
        for pred, fut in self._conditions:
            if fut.done():
                continue
            try:
                if pred():
                    fut.set_result(None)
                    continue
            except Exception as exc:  # noqa: BLE001 - the waiter gets the predicate's failure
                fut.set_exception(exc)
                continue
            keep.append((pred, fut))
        self._conditions = keep

    # -- waiting -----------------------------------------------------------------------------
    async def until(self, predicate: Callable[[], bool], timeout: float | None = None, *,
                    what: str | None = None) -> None:
        """Return once ``predicate()`` is true, re-checked after every progress.

        Raises [`DocaTimeout`][doca_py.errors.DocaTimeout] (a ``TimeoutError``) after *timeout* seconds, naming
        *what* was awaited (default: the predicate's name); an exception of the predicate is raised here."""
        if predicate():
            return
        fut: asyncio.Future[None] = self.loop.create_future()
        self._conditions.append((predicate, fut))
        self.kick()
        try:
            await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError as exc:  # 3.10: asyncio's own class; 3.11+: the builtin
            name = what or getattr(predicate, "__qualname__", None) or repr(predicate)
            raise DocaTimeout(f"aio.until: {name} was not true within {timeout} s") from exc

    def detach(self) -> None:
        """Stop watching the engine (idempotent)."""
        if _attached.get(self.pe) is self:
            del _attached[self.pe]
            self.loop.remove_reader(self._fd)  # also after the Pe closed: the selector forgets the fd
        for _, fut in self._conditions:
            if not fut.done():
                fut.cancel()
        self._conditions.clear()

    async def __aenter__(self) -> AttachedPe:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.detach()


def attach(pe: Pe, loop: asyncio.AbstractEventLoop | None = None) -> AttachedPe:
    """Drive *pe* from *loop* (default: the running loop); also ``async with attach(pe):``."""
    from .pe import Pe  # pe is not imported by this module at load time

    expect("aio.attach", Pe, pe=pe)
    loop = loop or asyncio.get_running_loop()
    current = _attached.get(pe)
    if current is not None:
        if current.loop is loop:
            return current
        raise DocaUsageError("this Pe is already attached to another event loop")
    pe._check_open()
    runner = _attached[pe] = AttachedPe(pe, loop)
    return runner


def attached(pe: Pe | None) -> AttachedPe:
    """The [`AttachedPe`][doca_py.aio.AttachedPe] driving *pe*; ``DocaUsageError`` if none."""
    runner = _attached.get(pe) if pe is not None else None
    if runner is None:
        raise DocaUsageError("the ctx's Pe is not driven by an event loop: call doca_py.aio.attach(pe) first")
    return runner


def wait_task(task: TaskT) -> Generator[Any, None, TaskT]:
    """What ``await task`` runs: the task once its completion was delivered, or its error; ``DocaBadState``
    for a task that was not submitted since its allocation (it has no completion to report)."""
    if task._h.inflight:
        runner = attached(task._ctx._pe)
        fut: asyncio.Future[None] = runner.loop.create_future()
        task._future = fut
        from .ctx import _await_route

        _await_route(task)
        runner.kick()
        yield from fut
    elif not task._h.submitted:
        raise DocaBadState(f"await {type(task).__name__}: the task was not submitted since its allocation (or "
                           f"its last submit was refused), so it has no completion to wait for: submit() it first")
    exc = task.exception()
    if exc is not None:
        raise exc
    return task


async def wait_state(ctx: Ctx, state: CtxState, timeout: float | None = None) -> None:
    """Return once *ctx* is in *state*. Reaching IDLE while waiting for RUNNING (a start
    that failed) raises [`DocaBadState`][doca_py.errors.DocaBadState]; no *state* within *timeout* seconds
    [`DocaTimeout`][doca_py.errors.DocaTimeout] naming the ctx, its state and what DOCA needs to get it there
    (DOCA 2.6's Rdma, for one, is RUNNING only after ``connect``)."""
    runner = attached(ctx._pe)
    failed = False

    def reached() -> bool:
        nonlocal failed
        now = ctx.get_state()
        failed = state is CtxState.RUNNING and now in (CtxState.IDLE, CtxState.STOPPING)
        return now is state or failed

    try:
        await runner.until(reached, timeout)
    except DocaTimeout:
        raise ctx._not_reached(state, timeout) from None
    if failed:
        raise DocaBadState(f"{type(ctx).__name__} did not reach RUNNING (it is {ctx.get_state().name})")
