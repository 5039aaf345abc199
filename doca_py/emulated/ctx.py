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
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from .._backend.protocols.core import Completion
from ..errors import DocaBadState, DocaError, DocaInvalidValue, DocaNoMemory, DocaNotConnected, ErrorCode
from ..log import logger
from ..types import CtxState
from . import strict, trace
from . import version as emu_version
from .pe import SHUFFLED, EmuPe, Lane

from .buf import EmuBuf

__all__ = ["EmuCtx", "EmuTask", "EmuSrcDstTask", "TaskPool", "FLUSHED", "OFFLOAD", "complete_task",
           "complete_in_order", "deliver_completion", "pin_bufs", "unpin_bufs", "unreachable_ok"]

_IDLE, _STARTING, _RUNNING, _STOPPING = 0, 1, 2, 3
#: Status of a task flushed by ``stop`` (hardware leaves the code unspecified).
FLUSHED = int(ErrorCode.IO_FAILED)
_SUCCESS = 0
#: Default size from which a task runs on an engine thread (the kernels release the
#: GIL), so one big task does not stall the other contexts of its Pe. Task types set
#: their own ``offload_bytes``: handing work to a thread costs tens of microseconds,
#: so only work that takes longer than that is worth it.
OFFLOAD_BYTES = 1 << 18
_UNEXPECTED = int(ErrorCode.UNEXPECTED)
#: What ``_execute`` returns for work too large for the caller's thread: run it on an engine thread.
OFFLOAD = -1
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _engine_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="doca_py-engine")
        return _pool


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

    def _configurable(self, what: str) -> None:
        if self.state != _IDLE:
            raise DocaBadState(f"{what}: configure the ctx while it is idle (state {CtxState(self.state).name})")

    # -- state machine -------------------------------------------------------------------------
    def _set_state(self, new: int, *, now: bool = False) -> None:
        """The one path of every state change (the trace records them all): the state callback runs
        on a later ``progress()``, or at once with *now* (a change made inside ``progress()``)."""
        prev, self.state = self.state, new
        if new == _IDLE:
            self.flush_status = FLUSHED
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
            self._set_state(_STOPPING)
            self._on_stop()
        return self.state

    def _on_stop(self) -> None:
        """Library hook: drop connections, stop worker threads."""

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
        self.launcher: Callable[[T], None] = _launch_local if inline else _launch
        self.success: Completion | None = None
        self.error: Completion | None = None
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

    def set_conf(self, success: Completion, error: Completion, num_tasks: int) -> None:
        self.ctx._configurable("set_conf")
        if num_tasks <= 0:
            raise DocaInvalidValue("num_tasks must be positive")
        self.success, self.error, self.size = success, error, num_tasks

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


def complete_task(task: EmuTask) -> None:
    """Deliver one completion (runs inside ``progress()``); a task of a :class:`Lane` waits for
    the completions of the tasks submitted before it on that queue."""
    lane = task.lane
    ctx = task.ctx
    # Fast path, inlined (no _in_order, no deliver_completion call): a success of a running ctx that is
    # its lane's next completion, with nothing parked behind it — every transport completion in order.
    if ctx.state == _RUNNING and task.status == _SUCCESS and (
            lane is None or (task.seq == lane.delivered and not lane.parked)):
        if trace.ON: trace.complete(task)  # trace hook: completion (inlined success path)
        task.inflight = False
        ctx.inflight -= 1
        if task.pinned:
            unpin_bufs(task)
        if lane is None:
            task.pool.success(task.owner)  # type: ignore[misc]  # set_conf ran before start
            return
        lane.delivered += 1
        try:
            task.pool.success(task.owner)  # type: ignore[misc]
        except BaseException:
            _release_later(task, lane)
            raise
        if lane.parked:  # the callback completed later tasks of the lane (a stop's flush)
            _release(lane)
        return
    if lane is None:
        deliver_completion(task)
    else:
        _in_order(task, lane, deliver_completion)


def _in_order(task: EmuTask, lane: Lane, deliver: Callable[[EmuTask], None]) -> None:
    if task.seq != lane.delivered:
        lane.parked[task.seq] = (task, deliver)  # an earlier task of its queue is still in flight
        return
    lane.delivered += 1
    try:
        deliver(task)
    except BaseException:
        _release_later(task, lane)
        raise
    if lane.parked:
        _release(lane)


def _release_later(task: EmuTask, lane: Lane) -> None:
    """A callback raised: the parked completions after it are delivered by a later ``progress()``."""
    if lane.parked and task.ctx.pe is not None:
        task.ctx.pe.post(_release, lane)


def _release(lane: Lane) -> None:
    """Deliver the parked completions that are next in *lane*'s order; should a callback raise, the
    rest is delivered by a later ``progress()``."""
    parked = lane.parked
    while True:
        nxt = parked.pop(lane.delivered, None)
        if nxt is None:
            return
        task, deliver = nxt
        lane.delivered += 1
        try:
            deliver(task)
        except BaseException:
            _release_later(task, lane)
            raise


def deliver_completion(task: EmuTask) -> None:
    """Run a task's completion now, whatever its lane (the lane's order is :func:`complete_task`'s job)."""
    if trace.ON: trace.complete(task)  # trace hook: completion (success or error)
    ctx = task.ctx
    task.inflight = False
    ctx.inflight -= 1
    if task.pinned:
        unpin_bufs(task)
    if ctx.state == _RUNNING and task.status == _SUCCESS:
        task.pool.success(task.owner)  # type: ignore[misc]  # set_conf ran before start
        return
    flushed = ctx.state == _STOPPING
    if flushed:
        task.status = ctx.flush_status
    elif task.status != _SUCCESS and ctx.state == _RUNNING:
        ctx._set_state(_STOPPING)  # a failed task stops its ctx, as on hardware
        ctx._on_stop()
    if task.reason and not flushed and task.status != FLUSHED:
        logger.warning("%r failed with %s: %s", task, ErrorCode(task.status).name, task.reason)
    cb = task.pool.success if task.status == _SUCCESS else task.pool.error
    assert cb is not None
    try:
        cb(task.owner)
    finally:
        if ctx.state == _STOPPING:
            ctx._maybe_idle()


def complete_in_order(task: EmuTask, deliver: Callable[[EmuTask], None]) -> None:
    """Deliver *task*'s completion with *deliver* (a library's own delivery), in its lane's order."""
    lane = task.lane
    if lane is None:
        deliver(task)
    else:
        _in_order(task, lane, deliver)


_complete = complete_task


def _flush_or_fault(task: EmuTask) -> bool:
    """Complete a launched task that must not run: its ctx stopped, or a fault is injected."""
    if task.ctx.state != _RUNNING:
        task.status = task.ctx.flush_status  # stopped before the engine took it
        task._unqueue()
        complete_task(task)
        return True
    if strict.FAULTS_ON:
        ident = strict.task_id(task.pool.uid, task.nth)
        code = strict.fault(task.kind or task.pool.kind, ident)
        if code:
            task.status = code
            task.reason = f"fault injected by DOCA_PY_EMU_FAULTS into task {ident} (seed {strict.SEED})"
            task._unqueue()
            complete_task(task)
            return True
    return False


def _launch(task: EmuTask) -> None:
    """Start a submitted task's work inside ``progress()`` (tasks with their own ``_begin``)."""
    if task.ctx.state != _RUNNING or strict.FAULTS_ON:
        if _flush_or_fault(task):
            return
    task.status = _SUCCESS  # a transfer reports only failures
    task._begin()


def _launch_local(task: EmuTask) -> None:
    """:func:`_launch` for engine tasks, with the default ``_begin`` inlined (the hot path)."""
    ctx = task.ctx
    if ctx.state != _RUNNING or strict.FAULTS_ON:
        if _flush_or_fault(task):
            return
    try:
        status = task._execute()
    except DocaError as exc:
        status = exc.code
        task.reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - an engine bug fails its task; it must not strand it in flight
        logger.exception("emulated engine failed")
        status = _UNEXPECTED
        task.reason = f"emulated engine failed: {exc!r}"
    if status:
        if status == OFFLOAD:  # decided by _execute, which knows the size: no extra call per task
            _engine_pool().submit(task._run_offloaded)
            return
        task.status = status
        complete_task(task)
        return
    task.status = 0
    if task.pinned:  # strict mode; the ctx is still RUNNING: engine work runs no user code
        complete_task(task)
        return
    # complete_task's success path, inlined: the one completion every engine task takes.
    if trace.ON: trace.complete(task)  # trace hook: completion (inlined success path)
    task.inflight = False
    ctx.inflight -= 1
    task.pool.success(task.owner)  # type: ignore[misc]  # set_conf ran before start


# Engine work and completions may be reordered freely; transport launches (_launch: rdma, comch) only
# across queues: a queue pair or channel starts its work requests in the order they were posted.
SHUFFLED.update({complete_task: True, _launch_local: True, _launch: False})


def unreachable_ok(task: EmuTask, *bufs: EmuBuf) -> bool:
    """Whether the ctx's device can reach every buffer's map; else records why on the task."""
    key = task.ctx.dev_key
    if not key:
        return True
    for b in bufs:
        m = b.mmap
        if m is not None and key not in m.reach:
            task.reason = (f"{m!r} has no device {key} added (Mmap.add_dev): the hardware of this ctx "
                           f"cannot reach it")
            return False
    return True


def _buf_chain(bufs: tuple[EmuBuf | None, ...]) -> list[EmuBuf]:
    out = []
    for b in bufs:
        while b is not None:
            out.append(b)
            b = b.next
    return out


def pin_bufs(task: EmuTask) -> None:
    """Strict mode: mark the task's buffers (and their maps and inventories) busy."""
    for b in _buf_chain(task._bufs()):
        b.pins += 1
        b.inv.pins += 1
        if b.mmap is not None:
            b.mmap.pins += 1
    task.pinned = True


def unpin_bufs(task: EmuTask) -> None:
    for b in _buf_chain(task._bufs()):
        b.pins -= 1
        b.inv.pins -= 1
        if b.mmap is not None:
            b.mmap.pins -= 1
    task.pinned = False


class EmuTask:
    """Base of emulated tasks: submission, status, ownership."""

    __slots__ = ("ctx", "pool", "owner", "status", "inflight", "allocated", "pinned", "reason", "on_engine",
                 "launch", "done", "lane", "seq", "nth")
    offload_bytes = OFFLOAD_BYTES
    #: The task kind of fault injection (:data:`strict.KINDS`); empty: the pool's kind.
    kind = ""
    _checks_submit = False

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        self.pool = pool
        self.ctx = pool.ctx
        self.owner: object = None
        self.status = _SUCCESS
        self.inflight = False
        self.allocated = False
        self.pinned = False
        #: Why the task failed, when the backend knows more than the status code.
        self.reason = ""
        self.on_engine = False  # running on an engine thread (its _execute must not offload again)
        #: The Pe queue item that starts this task, built once: submit appends it without allocating.
        self.launch: tuple[Callable[[Any], object], EmuTask] = (pool.launcher, self)
        #: The Pe queue item that completes it (transport threads post it: no tuple per IO).
        self.done: tuple[Callable[[Any], object], EmuTask] = (complete_task, self)
        #: The work queue the task runs on (set by its library before ``submit`` numbers it), or ``None``:
        #: engine tasks, whose completions DOCA does not order.
        self.lane: Lane | None = None
        self.seq = 0
        #: Its submission number in its pool (the last submit): its identity with the pool's.
        self.nth = 0

    def _execute(self) -> int:
        """Do the work; return the completion status (a ``doca_error_t``)."""
        raise NotImplementedError

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        """The buffers the task reads or writes (pinned in strict mode while in flight)."""
        return ()

    def _settable(self, what: str) -> None:
        """Task setters: only while the task is not in flight (DOCA §7.2 B.13)."""
        if self.inflight:
            if strict.STRICT:
                raise strict.violation(self, f"{what} while the task is in flight; change a task between runs")
            raise DocaBadState(f"{what}: the task is in flight")

    def _check_submit(self) -> None:
        """Library hook: refuse a submission the way ``doca_task_submit`` does (the caller keeps the task)."""

    def _unqueue(self) -> None:
        """Library hook: the launched task completes without starting (flushed, fault injected); leave
        any queue it waits in."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._checks_submit = cls._check_submit is not EmuTask._check_submit

    def submit(self) -> None:
        ctx = self.ctx
        if ctx.state != _RUNNING or self.inflight or not self.allocated:
            self._refuse_submit()
        if self._checks_submit:
            self._check_submit()
        pool = self.pool
        self.nth = pool.submitted
        pool.submitted += 1
        lane = self.lane
        if lane is not None:
            self.seq = lane.submitted
            lane.submitted += 1
        self.inflight = True
        ctx.inflight += 1
        if trace.ON: trace.submit(self)  # trace hook: task submit
        if self.reason:
            self.reason = ""
        if strict.STRICT:
            pin_bufs(self)
        # EmuPe.post, inlined (one frame less per IO) with the prebuilt item (no tuple per IO), and
        # unlocked: a submit runs on the Pe's own thread, which is not asleep (EmuPe.armed).
        pe: EmuPe = ctx.pe  # type: ignore[assignment]  # running implies connected
        pe.ready.append(self.launch)
        if pe.armed:
            pe.wake()

    def _refuse_submit(self) -> None:
        ctx = self.ctx
        if self.inflight and strict.STRICT and ctx.state == _RUNNING:
            raise strict.violation(self, "a task was resubmitted while in flight; DOCA owns it until its "
                                         "completion callback starts")
        raise DocaBadState(f"submit needs an allocated task that is not in flight, on a running ctx "
                           f"(ctx state {CtxState(ctx.state).name})")

    def _begin(self) -> None:
        """Run the work now (inside ``progress()``) or hand it to an engine thread, then complete.

        Transfers override this to start work that completes later, from another thread. (Engine
        tasks never get here: their launcher runs this inline.)"""
        _launch_local(self)

    def _run_offloaded(self) -> None:
        self.on_engine = True
        try:
            self.status = self._execute()
        except DocaError as exc:
            self.status = exc.code
            self.reason = str(exc)
        except Exception:  # noqa: BLE001 - a bug must fail the task, not kill the thread silently
            logger.exception("emulated engine failed")
            self.status = _UNEXPECTED
        finally:
            self.on_engine = False
        self.ctx.pe.post(complete_task, self)  # type: ignore[union-attr]

    def _offload(self, nbytes: int) -> bool:
        """For ``_execute``: whether *nbytes* of work should leave the Pe's thread (return :data:`OFFLOAD`)."""
        return nbytes >= self.offload_bytes and not self.on_engine

    def try_submit(self) -> None:
        self._validate()
        self.submit()

    def _validate(self) -> None:
        """``doca_task_try_submit`` checks; raise ``DocaInvalidValue`` on a malformed task."""

    def submit_ex(self, flags: int) -> None:
        emu_version.require("doca_task_submit_ex", (3, 0), "added after 2.6")
        self.submit()

    def free(self) -> None:
        if self.inflight:
            if strict.STRICT:
                raise strict.violation(self, "a task was freed while in flight; free it in or after its "
                                             "completion callback")
            raise DocaBadState("a task in flight cannot be freed")
        if not self.allocated:
            raise DocaBadState("task was already freed")
        self.allocated = False
        ctx = self.ctx
        ctx.allocated -= 1
        self.pool.out -= 1
        self.pool.free.append(self)
        if ctx.state == _STOPPING:
            ctx._maybe_idle()

    def get_status(self) -> int:
        return self.status

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {type(self.ctx).__name__} inflight={self.inflight}>"



class EmuSrcDstTask(EmuTask):
    """An engine task with one source and one destination buffer (list), re-aimable between runs."""

    __slots__ = ("src", "dst")

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.dst: EmuBuf | None = None

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.src, self.dst

    def set_src(self, buf: object) -> None:
        self._settable("set_src")
        assert isinstance(buf, EmuBuf)
        self.src = buf

    def set_dst(self, buf: object) -> None:
        self._settable("set_dst")
        assert isinstance(buf, EmuBuf)
        self.dst = buf
