"""Emulated ``doca_ctx`` and ``doca_task``: the state machine and task pools.

Library contexts (``EmuDma`` …) subclass :class:`EmuCtx` and their tasks subclass
:class:`EmuTask`, implementing :meth:`EmuTask._execute` (or :meth:`EmuTask._begin`
for work that completes later, like a transfer). ``submit`` only checks the state
and queues the task on the Pe; the work runs in ``progress()`` (or on an engine
thread for large work) and becomes visible with its completion, as on hardware.
``progress()`` also applies DOCA's stop rules: a task that is launched or completes
while the ctx is stopping is flushed (error callback, status
``DOCA_ERROR_IO_FAILED``, or why the ctx stopped when its library knows: :attr:`EmuCtx.flush_status`),
a failed task moves a running ctx to STOPPING, and the ctx
goes IDLE on a later progress once nothing is in flight and every task has been
freed. Strict mode (:mod:`.strict`) pins a task's buffers while it is in flight.

The task (:mod:`.task`) and the completions and launches (:mod:`.completion`) have their own
modules; every name is importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from .._backend.protocols.core import Completion, HasUserData
from ..errors import DocaBadState, DocaInvalidValue, DocaNoMemory, DocaNotConnected
from ..types import CtxState
from . import strict, trace
from .completion import (  # noqa: F401 - re-exported: their home was this module
    _IDLE as _IDLE,
    _RUNNING as _RUNNING,
    _STARTING as _STARTING,
    _STOPPING as _STOPPING,
    _SUCCESS as _SUCCESS,
    _UNEXPECTED as _UNEXPECTED,
    FLUSHED as FLUSHED,
    OFFLOAD as OFFLOAD,
    _buf_chain as _buf_chain,
    _engine_pool as _engine_pool,
    _flush_or_fault as _flush_or_fault,
    _in_order as _in_order,
    _launch as _launch,
    _launch_local as _launch_local,
    _release as _release,
    _release_later as _release_later,
    complete_in_order as complete_in_order,
    complete_task as complete_task,
    deliver_completion as deliver_completion,
    pin_bufs as pin_bufs,
    unpin_bufs as unpin_bufs,
    unreachable_ok as unreachable_ok,
)
from .pe import EmuPe
from .task import OFFLOAD_BYTES as OFFLOAD_BYTES  # noqa: F401 - re-exported
from .task import EmuSrcDstTask, EmuTask

__all__ = ["EmuCtx", "EmuTask", "EmuSrcDstTask", "TaskPool", "FLUSHED", "OFFLOAD", "complete_task",
           "complete_in_order", "deliver_completion", "pin_bufs", "unpin_bufs", "unreachable_ok"]


class EmuCtx:
    """State machine shared by every emulated library context."""

    def __init__(self) -> None:
        self.state = _IDLE
        self.pe: EmuPe | None = None
        self.inflight = 0
        self.allocated = 0
        self.state_cb: Callable[[int, int], None] | None = None
        self.pools: list[TaskPool[EmuTask]] = []
        self.destroyed = False
        self._idle_posted = False
        self.dev_key = ""  # PCI address of the ctx's device: which maps it can reach
        #: Its identity in fault injection and shuffling: type and creation number (:func:`.strict.ctx_id`).
        self.uid = strict.ctx_id(type(self).__name__)
        #: The status of the tasks its stop flushes: :data:`FLUSHED`, unless a library knows why the ctx
        #: stopped (a comch producer or consumer whose peer closed the connection: ``CONNECTION_RESET``,
        #: not the ``IO_FAILED`` of a retry window). Back to :data:`FLUSHED` when the ctx is IDLE.
        self.flush_status = FLUSHED
        #: Why the ctx is stopping, as its flushed tasks report it (``Task.flushed_by``); "" when it runs.
        self.stop_cause = ""

    def _configurable(self, what: str) -> None:
        """Refuse configuring (*what*: the call, "" when the public layer names it) unless idle."""
        if self.state != _IDLE:
            raise DocaBadState(f"{what}: " * bool(what) +
                               f"configure the ctx while it is idle (state {CtxState(self.state).name})")

    # -- state machine -------------------------------------------------------------------------
    def _set_state(self, new: int, *, now: bool = False) -> None:
        """The one path of every state change (the trace records them all): the state callback runs
        on a later ``progress()``, or at once with *now* (a change made inside ``progress()``)."""
        prev, self.state = self.state, new
        if new == _IDLE:
            self.flush_status = FLUSHED
            self.stop_cause = ""
        if trace.ON: trace.state(self, prev, new)  # trace hook: ctx state change
        if now:
            self._deliver_state((prev, new))
        elif self.state_cb is not None and self.pe is not None:
            self.pe.post(self._deliver_state, (prev, new))

    def _deliver_state(self, change: tuple[int, int]) -> None:
        if self.state_cb is not None and not self.destroyed:
            self.state_cb(*change)

    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != _IDLE:
            raise DocaBadState(f"ctx is {CtxState(self.state).name}, not IDLE")
        self._on_start()
        for pool in self.pools:
            pool.build()
        self._set_state(_RUNNING)
        return self.state

    def _on_start(self) -> None:
        """Library hook: validate configuration before the pools are built."""

    def stop(self) -> int:
        if self.state == _IDLE:
            return _IDLE  # DOCA: stopping an idle ctx succeeds and does nothing
        if self.pe is None:
            raise DocaNotConnected("ctx is not connected to a Pe")
        if self.state not in (_RUNNING, _STARTING):
            raise DocaBadState(f"ctx is {CtxState(self.state).name}; only a started ctx can stop")
        if not self.inflight and not self.allocated:
            self._on_stop()
            self._set_state(_IDLE)
        else:
            self.stopped_by("its ctx was stopped (stop()) while it was in flight")
            self._set_state(_STOPPING)
            self._on_stop()
        return self.state

    def _on_stop(self) -> None:
        """Library hook: drop connections, stop worker threads."""

    def stopped_by(self, cause: str) -> None:
        """Record why the ctx stops (the first cause wins), for the tasks its stop flushes."""
        if not self.stop_cause:
            self.stop_cause = cause

    def _maybe_idle(self) -> None:
        # Never inside free() or a callback: DOCA moves STOPPING -> IDLE on a later progress.
        if self.state == _STOPPING and not self.inflight and not self.allocated and not self._idle_posted:
            assert self.pe is not None
            self._idle_posted = True
            self.pe.post(self._to_idle, None)

    def _to_idle(self, _: object) -> None:
        self._idle_posted = False
        if self.state == _STOPPING and not self.inflight and not self.allocated:
            self._set_state(_IDLE)

    def get_state(self) -> int:
        return self.state

    def get_num_inflight_tasks(self) -> int:
        return self.inflight

    def set_state_changed_cb(self, cb: Callable[[int, int], None]) -> None:
        self._configurable("set_state_changed_cb")
        self.state_cb = cb

    def flush_tasks(self) -> None:
        """Submissions are queued on the Pe at once here, so there is nothing batched to push."""

    def destroy(self) -> None:
        if self.state != _IDLE:
            raise DocaBadState(f"destroy needs an idle ctx (state {CtxState(self.state).name})")
        if self.pe is not None:
            self.pe.ctxs.remove(self)
        self.destroyed = True


T = TypeVar("T", bound="EmuTask")


class _NoOwner:
    """A pool's ``ctx_owner`` before ``set_conf`` (its tasks cannot complete: they cannot be allocated)."""

    user_data = None


_NO_OWNER = _NoOwner()


class TaskPool(Generic[T]):
    """A per-task-type pool sized by ``*_set_conf(num_tasks)``, built at start."""

    def __init__(self, ctx: EmuCtx, factory: Callable[[TaskPool[T]], T], kind: str = "") -> None:
        self.ctx = ctx
        self.factory = factory
        self.kind = kind  # fault injection's task kind, for task classes shared by several pools
        # How the Pe starts a submitted task, chosen once (a plain attribute: the hot path reads it per
        # submit): engine task classes run inline; transfers with their own _begin, and factories that
        # are not a class, go through the generic _launch.
        inline = isinstance(factory, type) and issubclass(factory, EmuTask) and factory._begin is EmuTask._begin
        # A task class may bring its own launcher (EmuTask.launch_fn: its _begin with the launch's checks inlined).
        own = factory.launch_fn if isinstance(factory, type) and issubclass(factory, EmuTask) else None
        self.launcher: Callable[[T], None] = own or (_launch_local if inline else _launch)
        self.success: Completion | None = None
        self.error: Completion | None = None
        #: Whose ``user_data`` the completions get as ``ctx_user_data`` (the public ctx).
        self.ctx_owner: HasUserData = _NO_OWNER
        self.size = 0
        self.created = 0
        self.out = 0
        self.free: list[T] = []
        #: Its identity: the ctx's and its place among the ctx's pools; tasks submitted to it are counted
        #: (the number is the task's identity in fault injection and shuffling, :func:`.strict.task_id`).
        self.uid = f"{ctx.uid}/{len(ctx.pools)}"
        self.submitted = 0
        #: Submit-time faults (comch producer sends): ``(submission number, faults injected into it)``.
        self.refused = (0, 0)
        ctx.pools.append(self)  # type: ignore[arg-type]

    def set_conf(self, success: Completion, error: Completion, num_tasks: int, ctx_owner: HasUserData) -> None:
        self.ctx._configurable("")  # Ctx._set_conf names the public *_set_conf
        if num_tasks <= 0:
            raise DocaInvalidValue("num_tasks must be positive")
        self.success, self.error, self.size, self.ctx_owner = success, error, num_tasks, ctx_owner
        for t in self.free:  # descriptors of an earlier start (idle: every one is free)
            t.on_success, t.on_error, t.cud = success, error, ctx_owner

    def build(self) -> None:
        # Descriptors outlive stop/start, as their public wrappers are reused with them.
        while self.created < self.size:
            self.free.append(self.factory(self))
            self.created += 1

    def alloc(self) -> T:
        ctx = self.ctx
        if ctx.state != _RUNNING:
            raise DocaBadState(f"tasks are allocated only while the ctx runs (state {CtxState(ctx.state).name})")
        if self.success is None:
            raise DocaBadState("task type is not configured: call its set_conf before start")
        if not self.free or self.out >= self.size:
            raise DocaNoMemory(f"all {self.size} tasks of this type are allocated")
        t = self.free.pop()
        t.allocated = True
        t.status = _SUCCESS
        self.out += 1
        ctx.allocated += 1
        return t


_complete = complete_task
