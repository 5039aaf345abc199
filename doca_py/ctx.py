"""``doca_ctx`` and ``doca_task``: what every library context and task shares.

State machine: IDLE → (start) → [STARTING →] RUNNING → (stop) → STOPPING → IDLE.
``stop`` with tasks in flight returns STOPPING; they complete through their error
callbacks (flushed), and the ctx becomes IDLE on a later ``Pe.progress()`` once
every task has been freed. Callbacks run inside ``Pe.progress()`` only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ._lifetime import DocaObject
from .abc import CtxHandle, TaskHandle
from .errors import DocaError, DocaTimeout, DocaUsageError, ErrorCode, lookup
from .types import CtxState, TaskSubmitFlag

if TYPE_CHECKING:
    from .pe import Pe

__all__ = ["Ctx", "Task", "StateChangedCallback", "TaskCallback", "completion"]

#: ``cb(ctx_user_data, ctx, prev_state, next_state)``, as ``doca_ctx_state_changed_callback_t``.
StateChangedCallback = Callable[[Any, "Ctx", CtxState, CtxState], None]

TaskT = TypeVar("TaskT", bound="Task")
#: ``cb(task, task_user_data, ctx_user_data)``, as every DOCA task completion callback.
TaskCallback = Callable[[TaskT, Any, Any], None]

_STATES = tuple(CtxState)
#: How long :meth:`Ctx.close` waits for in-flight tasks to be flushed.
CLOSE_TIMEOUT = 10.0


class Ctx(DocaObject):
    """Base of every library context (``Dma``, ``Ec``, ``Rdma`` …)."""

    def __init__(self, handle: CtxHandle, user_data: Any = None) -> None:
        super().__init__()
        self._ctx_h = handle
        self.user_data: Any = user_data
        self._pe: Pe | None = None
        self._tasks: list[Task] = []  # every wrapper ever made; descriptors are pooled
        self._arm_finalizer(handle.destroy)

    def start(self) -> CtxState:
        """Start; returns RUNNING (synchronous libraries) or STARTING."""
        self._check_open()
        return _STATES[self._ctx_h.start()]

    def stop(self) -> CtxState:
        """Begin stopping; returns IDLE, or STOPPING while tasks are flushed."""
        return _STATES[self._ctx_h.stop()]

    def get_state(self) -> CtxState:
        return _STATES[self._ctx_h.get_state()]

    @property
    def state(self) -> CtxState:
        return _STATES[self._ctx_h.get_state()]

    def get_num_inflight_tasks(self) -> int:
        return self._ctx_h.get_num_inflight_tasks()

    def set_state_changed_cb(self, cb: StateChangedCallback) -> None:
        """Call ``cb(user_data, ctx, prev, next)`` on each transition (from ``progress``)."""

        def changed(prev: int, nxt: int) -> None:
            cb(self.user_data, self, _STATES[prev], _STATES[nxt])

        self._ctx_h.set_state_changed_cb(changed)

    def flush_tasks(self) -> None:
        self._ctx_h.flush_tasks()

    def _set_conf(self, pool: Any, success: TaskCallback[Any], error: TaskCallback[Any], num_tasks: int) -> None:
        """Register completion callbacks and the pool size of one task type (idle only)."""
        self._check_open()
        pool.set_conf(completion(self, success), completion(self, error), num_tasks)

    def _wrap_task(self, h: TaskHandle, factory: Callable[[TaskHandle, Ctx], TaskT], user_data: Any) -> TaskT:
        task = h.owner
        if task is None:
            task = factory(h, self)
            h.owner = task
            self._tasks.append(task)
        t: TaskT = task  # type: ignore[assignment]
        t.user_data = user_data
        t._allocated = True
        return t

    def _close(self) -> None:
        h = self._ctx_h
        if h.get_state() != CtxState.IDLE:
            self._drain()
        h.destroy()

    def _drain(self) -> None:
        """Stop, free every task and progress until IDLE (bounded)."""
        h = self._ctx_h
        pe = self._pe
        if h.get_state() in (CtxState.RUNNING, CtxState.STARTING):
            h.stop()
        deadline = time.monotonic() + CLOSE_TIMEOUT
        while h.get_state() != CtxState.IDLE:
            for t in self._tasks:
                if t._allocated and not t._h.inflight:
                    t.free()
            if pe is None or pe.closed:
                raise DocaUsageError("cannot stop a ctx whose Pe is closed")
            if not pe._h.progress():
                if time.monotonic() > deadline:
                    raise DocaTimeout(f"ctx did not reach IDLE within {CLOSE_TIMEOUT} s while closing")
                pe.wait(0.05)  # completions may come from I/O threads: sleep, don't spin

    def __enter__(self) -> Ctx:
        return self


class Task:
    """Base of every task. Tasks come from a ctx pool (``*_alloc_init``) and go back
    with :meth:`free`; the Python objects are recycled with the descriptors."""

    __slots__ = ("_h", "_ctx", "user_data", "_allocated", "__weakref__")

    def __init__(self, handle: TaskHandle, ctx: Ctx) -> None:
        self._h = handle
        self._ctx = ctx
        self.user_data: Any = None
        self._allocated = True

    def submit(self) -> None:
        """Hand the task to its ctx; on success DOCA owns it until its callback runs."""
        self._h.submit()

    def try_submit(self) -> None:
        """Validate, then submit (``DocaInvalidValue`` for a malformed task)."""
        self._h.try_submit()

    def submit_ex(self, flags: TaskSubmitFlag = TaskSubmitFlag.FLUSH) -> None:
        self._h.submit_ex(int(flags))

    def free(self) -> None:
        """Return the task to its ctx pool (not while in flight)."""
        self._h.free()
        self._allocated = False

    def get_status(self) -> ErrorCode:
        """``SUCCESS`` or why the task failed (``IO_FAILED`` when flushed by stop)."""
        return ErrorCode(self._h.get_status())

    @property
    def status(self) -> ErrorCode:
        return ErrorCode(self._h.get_status())

    @property
    def reason(self) -> str:
        """Why the task failed, when the backend knows more than its status (else ``""``)."""
        return self._h.reason

    def exception(self) -> DocaError | None:
        """The status as an exception instance (with :attr:`reason`), ``None`` on success."""
        code = self._h.get_status()
        if code == 0:
            return None
        why = self._h.reason
        return lookup(code)(f"{type(self).__name__} failed: {why}" if why else f"{type(self).__name__} failed")

    def get_ctx(self) -> Ctx:
        return self._ctx


def completion(ctx: Ctx, cb: Callable[[Any, Any, Any], None]) -> Callable[[object], None]:
    """The function a backend calls for a completed task: ``cb(task, task.user_data, ctx.user_data)``."""

    def done(task: Any) -> None:
        cb(task, task.user_data, ctx.user_data)

    return done
