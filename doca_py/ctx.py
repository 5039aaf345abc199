"""``doca_ctx`` and ``doca_task``: what every library context and task shares.

State machine: IDLE → (start) → [STARTING →] RUNNING → (stop) → STOPPING → IDLE.
``stop`` with tasks in flight returns STOPPING; they complete through their error
callbacks (flushed), and the ctx becomes IDLE on a later ``Pe.progress()`` once
every task has been freed. Callbacks run inside ``Pe.progress()`` only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

from ._args import caller, wrong_type
from ._lifetime import DocaObject, raw_handle
from ._backend.protocols.core import CtxHandle, TaskHandle, TaskPoolHandle
from .errors import DocaBadState, DocaError, DocaTimeout, DocaUsageError, ErrorCode, lookup
from .types import CtxState, TaskSubmitFlag

if TYPE_CHECKING:
    from .pe import Pe

__all__ = ["Ctx", "Task", "StateChangedCallback", "TaskCallback", "completion"]

#: ``cb(ctx_user_data, ctx, prev_state, next_state)``, as ``doca_ctx_state_changed_callback_t``.
StateChangedCallback = Callable[[Any, "Ctx", CtxState, CtxState], None]
"""``cb(ctx_user_data, ctx, prev_state, next_state)``, as ``doca_ctx_state_changed_callback_t``."""

TaskT = TypeVar("TaskT", bound="Task")
#: ``cb(task, task_user_data, ctx_user_data)``, as every DOCA task completion callback.
TaskCallback = Callable[[TaskT, Any, Any], None]
"""``cb(task, task_user_data, ctx_user_data)``, as every DOCA task completion callback."""

_STATES = tuple(CtxState)
#: How long [`Ctx.close`][doca_py.ctx.Ctx.close] waits for in-flight tasks to be flushed.
CLOSE_TIMEOUT = 10.0


class Ctx(DocaObject):
    """Base of every library context (``Dma``, ``Ec``, ``Rdma`` …)."""

    def __init__(self, handle: CtxHandle, user_data: Any = None) -> None:
        super().__init__()
        self._ctx_h = handle
        self.user_data: Any = user_data
        """Any object, passed to the state-changed callback as ``ctx_user_data`` (``doca_ctx_set_user_data``)."""
        self._pe: Pe | None = None
        self._tasks: list[Task] = []  # every wrapper ever made; descriptors are pooled
        self._arm_finalizer(handle.destroy)

    def start(self, *, wait: float | None = None) -> CtxState:
        """``doca_ctx_start``: start; returns RUNNING (synchronous libraries) or STARTING.

        With *wait* (seconds), progress the ctx's Pe until it is RUNNING instead of
        returning STARTING: [`DocaTimeout`][doca_py.errors.DocaTimeout] when it does not get
        there in time, [`DocaBadState`][doca_py.errors.DocaBadState] if it stops instead.
        In asyncio code, ``await ctx.started()`` instead."""
        self._check_open()
        state = _STATES[self._ctx_h.start()]
        if wait is not None and state is not CtxState.RUNNING:
            state = self._progress_until(CtxState.RUNNING, wait)
        return state

    def stop(self, *, wait: float | None = None) -> CtxState:
        """``doca_ctx_stop``: begin stopping; returns IDLE, or STOPPING while tasks are flushed.

        With *wait* (seconds), progress the Pe until IDLE (flushed tasks still need
        freeing, in their callbacks: an allocated task keeps the ctx STOPPING)."""
        state = _STATES[self._ctx_h.stop()]
        if wait is not None and state is not CtxState.IDLE:
            state = self._progress_until(CtxState.IDLE, wait)
        return state

    def _progress_until(self, target: CtxState, timeout: float) -> CtxState:
        pe = self._pe
        if pe is None:
            raise DocaUsageError("connect the ctx to a Pe before waiting for a state")
        deadline = time.monotonic() + timeout
        while True:
            state = self.get_state()
            if state is target:
                return state
            if target is CtxState.RUNNING and state in (CtxState.IDLE, CtxState.STOPPING):
                raise DocaBadState(f"{type(self).__name__} did not reach RUNNING (it is {state.name})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._not_reached(target, timeout)
            pe.wait(min(left, 0.1))

    def _not_reached(self, target: CtxState, timeout: float | None) -> DocaTimeout:
        """The error of a wait for *target* that timed out: the ctx, its state and the DOCA rule at play."""
        state = self.get_state()
        hint = self._wait_hint(target, state)
        return DocaTimeout(f"{type(self).__name__} did not reach {target.name} within {timeout} s: it is "
                           f"{state.name}" + (f"; {hint}" if hint else ""))

    def _wait_hint(self, target: CtxState, state: CtxState) -> str:
        """What DOCA needs for a ctx in *state* to reach *target* (libraries add their own rules)."""
        if target is CtxState.IDLE and state is CtxState.STOPPING:
            n = self._ctx_h.get_num_inflight_tasks()
            allocated = sum(1 for t in self._tasks if t._allocated)
            return (f"a stopping ctx goes IDLE once every task has completed and been freed ({n} in flight, "
                    f"{allocated} allocated: free the flushed tasks in their error callbacks)")
        if target is CtxState.RUNNING and state is CtxState.STARTING:
            return "a starting ctx goes RUNNING from Pe.progress() once its library is ready"
        if state is CtxState.IDLE and target is not CtxState.IDLE:
            return "start() it first"
        return ""

    async def started(self, timeout: float | None = None) -> None:
        """Python-only (asyncio): return once RUNNING (the Pe must be attached with [`doca_py.aio.attach`][doca_py.aio.attach]).

        :raises DocaBadState: when the ctx stopped instead (a start that failed).
        :raises DocaTimeout: after *timeout* seconds, naming the ctx, its state and what DOCA needs for it to go
            RUNNING (on DOCA 2.6 an Rdma ctx goes RUNNING only once ``connect`` was called).
        """
        from .aio import wait_state

        await wait_state(self, CtxState.RUNNING, timeout)

    async def stopped(self, timeout: float | None = None) -> None:
        """Python-only (asyncio): return once IDLE again (after [`stop`][doca_py.ctx.Ctx.stop]).

        :raises DocaTimeout: after *timeout* seconds, naming the ctx and its state (a stopping ctx stays
            STOPPING while a flushed task is still allocated: free it in its error callback).
        """
        from .aio import wait_state

        await wait_state(self, CtxState.IDLE, timeout)

    def get_state(self) -> CtxState:
        """``doca_ctx_get_state``: the [`CtxState`][doca_py.types.CtxState]."""
        return _STATES[self._ctx_h.get_state()]

    def get_num_inflight_tasks(self) -> int:
        """``doca_ctx_get_num_inflight_tasks``: tasks submitted and not completed yet."""
        return self._ctx_h.get_num_inflight_tasks()

    def set_state_changed_cb(self, cb: StateChangedCallback) -> None:
        """``doca_ctx_set_state_changed_cb``: call ``cb(user_data, ctx, prev, next)`` on each transition (from
        ``progress``)."""

        def changed(prev: int, nxt: int) -> None:
            cb(self.user_data, self, _STATES[prev], _STATES[nxt])

        self._ctx_h.set_state_changed_cb(changed)

    def flush_tasks(self) -> None:
        """``doca_ctx_flush_tasks``: hand tasks submitted with ``TaskSubmitFlag.NONE`` to the hardware."""
        self._ctx_h.flush_tasks()

    def _set_conf(self, pool: TaskPoolHandle, success: TaskCallback[Any], error: TaskCallback[Any], num_tasks: int) -> None:
        """Register completion callbacks and the pool size of one task type (idle only); errors name the public
        ``*_set_conf`` that was called."""
        self._check_open()
        if not (callable(success) and callable(error)):
            raise wrong_type(caller(), Callable, success=success, error=error)
        try:
            # The fast lane: the backend calls the user's functions straight, ``cb(task, task.user_data,
            # self.user_data)`` (no wrapper frame); ``await task`` routes its own run (_await_route).
            pool.set_conf(success, error, num_tasks, self)
        except DocaError as exc:
            raise lookup(exc.code)(f"{caller()}: {exc.detail}" if exc.detail else caller(), code=exc.code) from None

    def _wrap_task(self, h: TaskHandle, factory: Callable[[TaskHandle, Ctx], TaskT], user_data: Any) -> TaskT:
        task = h.owner
        if task is None:
            task = factory(h, self)
            h.owner = task
            self._tasks.append(task)
        t: TaskT = task
        t.user_data = user_data
        t._allocated = True
        h.submitted = False
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

    def _repr_facts(self) -> list[str]:
        facts = [f"state={self.get_state().name}", f"inflight={self._ctx_h.get_num_inflight_tasks()}"]
        if self._pe is None:
            facts.append("no pe")
        return facts + super()._repr_facts()

    def __enter__(self) -> Ctx:
        return self


class Task:
    """Base of every task. Tasks come from a ctx pool (``*_alloc_init``) and go back
    with [`free`][doca_py.ctx.Task.free]; the Python objects are recycled with the descriptors.

    A task has [`handle`][doca_py.ctx.Task.handle] but no ``from_handle``: its wrapper is the one its ctx made
    at ``*_alloc_init`` and the completion callback receives, one per descriptor."""

    __slots__ = ("_h", "_ctx", "user_data", "_allocated", "_future", "__weakref__")

    @property
    def handle(self) -> object:
        """Python-only: the backend handle (the C address as an ``int`` on the native backend, the backend object on the
        emulated one); see ``DocaObject.handle``."""
        return raw_handle(self._h)

    def __init__(self, handle: TaskHandle, ctx: Ctx) -> None:
        self._h = handle
        self._ctx = ctx
        self.user_data: Any = None
        """Any object, passed to the completion callback as ``task_user_data`` (``doca_task_set_user_data``)."""
        self._allocated = True
        self._future: Any = None  # an asyncio future of ``await task``, resolved after the callback

    def __await__(self: TaskT) -> Generator[Any, None, TaskT]:
        """asyncio: ``await task`` after [`submit`][doca_py.ctx.Task.submit] gives the task once its completion
        callback ran, or raises its [`DocaError`][doca_py.errors.DocaError].

        :raises DocaBadState: when the task was not submitted since its allocation (or its last submit was
            refused): it has no completion to wait for.
        """
        from .aio import wait_task

        return (yield from wait_task(self))

    def submitter(self) -> Callable[[], None]:
        """Python-only, the fast lane: a function that submits this task, ``doca_task_submit`` in one call.

        It is the backend's own submit, bound to this task's descriptor: keep it with the task (a task is
        built once and re-submitted from its completion callback) and call it instead of
        [`submit`][doca_py.ctx.Task.submit], which adds a frame. It raises what ``submit`` raises
        ([`DocaBadState`][doca_py.errors.DocaBadState] for a task in flight or a ctx not running, and the
        library's own refusals) and is valid until the task is freed: after
        [`free`][doca_py.ctx.Task.free] call it no more (the descriptor may be another task's then, as in C).

        ``await task`` works on a task submitted this way as on one submitted with ``submit()``.

        ```python
        submit = task.submitter()
        submit()                      # one call per IO from now on, from the completion callback too
        ```
        """
        return self._h.submit

    def submit(self) -> None:
        """``doca_task_submit``: hand the task to its ctx; on success DOCA owns it until its callback runs."""
        try:
            self._h.submit()
        except BaseException:
            self._h.submitted = False  # the last submit was refused: no completion to await
            raise

    def try_submit(self) -> None:
        """``doca_task_try_submit``: validate, then submit (``DocaInvalidValue`` for a malformed task)."""
        try:
            self._h.try_submit()
        except BaseException:
            self._h.submitted = False
            raise

    def submit_ex(self, flags: TaskSubmitFlag = TaskSubmitFlag.FLUSH) -> None:
        """``doca_task_submit_ex``: submit with [`TaskSubmitFlag`][doca_py.types.TaskSubmitFlag] values (``NONE``
        defers the doorbell to ``flush_tasks``).

        :param flags: the submit flags.
        :raises DocaNotSupported: on DOCA 2.6 (``doca_task_submit_ex`` exists from 3.0).
        :raises DocaBadState: when the ctx is not RUNNING.
        :raises DocaInvalidValue: when the task's buffers are invalid for it.
        """
        try:
            self._h.submit_ex(int(flags))
        except BaseException:
            self._h.submitted = False
            raise

    def free(self) -> None:
        """``doca_task_free``: return the task to its ctx pool (not while in flight)."""
        self._h.free()
        self._allocated = False

    def get_status(self) -> ErrorCode:
        """``doca_task_get_status``: the [`ErrorCode`][doca_py.errors.ErrorCode] the task completed with
        (``SUCCESS``, or why it failed: ``IO_FAILED`` when flushed by stop). Never raises: a code the
        table lacks (a newer DOCA's) is an ``ErrorCode`` named by its number.
        """
        return ErrorCode(self._h.get_status())

    @property
    def reason(self) -> str:
        """Python-only: why the task failed, when the backend knows more than its status (else ``""``)."""
        return self._h.reason

    @property
    def flushed_by(self) -> str:
        """Python-only: why the task was flushed, if it failed only because its ctx stopped while it was in flight
        ("the ctx stopped after EcTaskCreate failed with IO_FAILED"); ``""`` for a task that failed on its
        own, or succeeded. The native backend infers it (DOCA reports only the status): a failure delivered
        after the one that stopped the ctx, or after ``stop()``, reads as flushed."""
        return self._h.flushed_by

    def exception(self) -> DocaError | None:
        """Python-only: the status as an exception instance (with [`reason`][doca_py.ctx.Task.reason], or why the task was
        [flushed][doca_py.ctx.Task.flushed_by]), ``None`` on success."""
        code = self._h.get_status()
        if code == 0:
            return None
        name = type(self).__name__
        cause = self._h.flushed_by
        if cause:
            return lookup(code)(f"{name} flushed: {cause}", code=code)
        why = self._h.reason
        return lookup(code)(f"{name} failed: {why}" if why else f"{name} failed", code=code)

    def get_ctx(self) -> Ctx:
        """``doca_task_get_ctx``: the [`Ctx`][doca_py.ctx.Ctx] the task belongs to."""
        return self._ctx

    def __repr__(self) -> str:
        name = type(self).__name__
        if not self._allocated:
            return f"<{name} freed>"
        if self._ctx.closed:
            return f"<{name} of a closed {type(self._ctx).__name__}>"
        try:
            if self._h.inflight:
                return f"<{name} in flight user_data={self.user_data!r:.40}>"
            return f"<{name} status={ErrorCode(self._h.get_status()).name} user_data={self.user_data!r:.40}>"
        except Exception as exc:  # noqa: BLE001 - repr() must not raise
            return f"<{name} ({type(exc).__name__} while describing)>"


def _await_route(task: Task) -> None:
    """``await task`` of a task in flight: its next completion runs the user's callback, then wakes the awaiting
    coroutine. Only that run pays the extra frame; the route puts the pool's callbacks back itself."""
    h = task._h
    h.on_success, h.on_error = _awaited_success, _awaited_error


def _awaited_success(task: Task, task_ud: Any, ctx_ud: Any) -> None:
    h = task._h
    pool = h.pool
    h.on_success, h.on_error = pool.success, pool.error
    try:
        pool.success(task, task_ud, ctx_ud)
    finally:
        _wake(task)


def _awaited_error(task: Task, task_ud: Any, ctx_ud: Any) -> None:
    h = task._h
    pool = h.pool
    h.on_success, h.on_error = pool.success, pool.error
    try:
        pool.error(task, task_ud, ctx_ud)
    finally:
        _wake(task)


def _wake(task: Task) -> None:
    fut = task._future
    if fut is not None:  # ``await task``: wake the awaiting coroutine after the callback
        task._future = None
        if not fut.done():
            fut.set_result(None)


def completion(ctx: Ctx, cb: Callable[[Any, Any, Any], None]) -> Callable[[object], None]:
    """Python-only: a one-argument function that runs ``cb(task, task.user_data, ctx.user_data)`` for a completed task
    (what backends called before the fast lane; the backends now call ``cb`` itself)."""

    def done(task: Any) -> None:
        try:
            cb(task, task.user_data, ctx.user_data)
        finally:
            fut = task._future
            if fut is not None:  # ``await task``: wake the awaiting coroutine after the callback
                task._future = None
                if not fut.done():
                    fut.set_result(None)

    return done
