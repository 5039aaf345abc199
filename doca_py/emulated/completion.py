"""Emulated task completions and launches: how a submitted task starts inside ``progress()`` and how
its completion is delivered.

A task's completion runs its pool's callback; tasks of one :class:`~.pe.Lane` (a queue pair, a channel)
complete in the order they were submitted. ``progress()`` applies DOCA's stop rules here: a task that is
launched or completes while its ctx is stopping is flushed, and a failed task moves a running ctx to
STOPPING. Strict mode pins a task's buffers while it is in flight (:func:`pin_bufs`). Part of
:mod:`.ctx`, which re-exports every name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..errors import DocaError, ErrorCode
from ..log import logger
from . import strict, trace
from .pe import QUIET, SHUFFLED, Lane

if TYPE_CHECKING:
    from .buf import EmuBuf
    from .task import EmuTask

__all__ = ["FLUSHED", "OFFLOAD", "complete_task", "complete_batch", "post_batch", "complete_in_order", "deliver_completion", "pin_bufs", "unpin_bufs",
           "unreachable_ok"]

_IDLE, _STARTING, _RUNNING, _STOPPING = 0, 1, 2, 3
#: Status of a task flushed by ``stop`` (hardware leaves the code unspecified).
FLUSHED = int(ErrorCode.IO_FAILED)
_SUCCESS = 0
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
        o = task.owner
        if lane is None:
            task.on_success(o, o.user_data, task.cud.user_data)
            return
        lane.delivered += 1
        try:
            task.on_success(o, o.user_data, task.cud.user_data)
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


def complete_batch(tasks: Sequence[EmuTask]) -> None:
    """Deliver the completions an I/O batch found, in one Pe item (one post per batch, not per task): each
    as :func:`complete_task` would, its success path inlined. Should a callback raise, the rest of the
    batch is delivered by the next ``progress()``, first."""
    i = 0
    t: EmuTask | None = None
    inline = False
    try:
        for t in tasks:
            i += 1
            ctx = t.ctx
            lane = t.lane
            inline = ctx.state == _RUNNING and t.status == _SUCCESS and (
                lane is None or (t.seq == lane.delivered and not lane.parked))
            if inline:
                if trace.ON: trace.complete(t)  # trace hook: completion (inlined success path)
                t.inflight = False
                ctx.inflight -= 1
                if t.pinned:
                    unpin_bufs(t)
                o = t.owner
                if lane is None:
                    t.on_success(o, o.user_data, t.cud.user_data)
                    continue
                lane.delivered += 1
                t.on_success(o, o.user_data, t.cud.user_data)
                if lane.parked:  # the callback completed later tasks of the lane (a stop's flush)
                    _release(lane)
            else:
                complete_task(t)
    except BaseException:
        if inline and t is not None and t.lane is not None:
            _release_later(t, t.lane)
        if i < len(tasks):
            pe = tasks[0].ctx.pe
            if pe is not None:
                pe.ready.appendleft((complete_batch, tasks[i:]))  # the Pe's own thread: runs next, first
        raise


def post_batch(tasks: list[EmuTask]) -> None:
    """(I/O thread) Post the completions of *tasks* (one batch, one ctx's Pe) as one Pe item."""
    pe = tasks[0].ctx.pe
    if pe is not None:
        pe.post(complete_batch, tasks)


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
        o = task.owner
        task.on_success(o, o.user_data, task.cud.user_data)
        return
    flushed = ctx.state == _STOPPING
    if flushed:
        task.status = ctx.flush_status
        task.flushed_by = ctx.stop_cause or "its ctx stopped while it was in flight"
    else:
        task.flushed_by = ""
        if task.status != _SUCCESS and ctx.state == _RUNNING:
            ctx.stopped_by(f"the ctx stopped after {type(task.owner).__name__} failed with "
                           f"{ErrorCode(task.status).name}")
            ctx._set_state(_STOPPING)  # a failed task stops its ctx, as on hardware
            ctx._on_stop()
    if task.reason and not flushed and task.status != FLUSHED:
        logger.warning("%r failed with %s: %s", task, ErrorCode(task.status).name, task.reason)
    cb = task.on_success if task.status == _SUCCESS else task.on_error
    try:
        o = task.owner
        cb(o, o.user_data, task.cud.user_data)
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
        task.reason = exc.detail  # the status carries the code: no second "DOCA_ERROR_X: " prefix
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
    if task.pinned or task.lane is not None:  # strict mode, or a lane's order (an ordered DMA ctx) to keep
        complete_task(task)
        return
    # complete_task's success path, inlined: the one completion every engine task takes.
    if trace.ON: trace.complete(task)  # trace hook: completion (inlined success path)
    task.inflight = False
    ctx.inflight -= 1
    o = task.owner
    task.on_success(o, o.user_data, task.cud.user_data)


# Engine work and completions may be reordered freely; transport launches (_launch: rdma, comch) only
# across queues: a queue pair or channel starts its work requests in the order they were posted.
SHUFFLED.update({complete_task: True, complete_batch: True, _launch_local: True, _launch: False})
# A launch is progress only when it completed its task at once (engine work done inline, a task failed).
QUIET.update({_launch_local: True, _launch: True})


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
    """Strict mode: mark the task's buffers (and their maps and inventories) busy. All or none: a retired
    wrapper's descriptor (it raises ``DocaBadState`` when read) fails the chain's walk, and a descriptor
    returned to its inventory the check below, before any pin."""
    chain = _buf_chain(task._bufs())
    for b in chain:
        if b.mmap is None and not task.released_ok:  # returned to its inventory since the task was given it
            raise strict.violation(task, "a task was submitted with a buffer that was freed (its reference count "
                                         "reached 0) after the task was given it; DOCA would read or write "
                                         "whichever holder has the descriptor now")
    for b in chain:
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
