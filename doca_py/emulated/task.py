"""Emulated ``doca_task``: submission, status, ownership, the work of a task and its offload to an engine
thread. Part of :mod:`.ctx`, which re-exports every name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._backend.protocols.core import Completion, HasUserData
from ..errors import DocaBadState, DocaError
from ..log import logger
from ..types import CtxState
from . import strict, trace
from . import version as emu_version
from .buf import EmuBuf
from .completion import _RUNNING, _STOPPING, _SUCCESS, _UNEXPECTED, _launch_local, complete_task, \
    pin_bufs

if TYPE_CHECKING:
    from .ctx import TaskPool
    from .pe import EmuPe, Lane

__all__ = ["EmuTask", "EmuSrcDstTask", "OFFLOAD_BYTES"]

#: Default size from which a task runs on an engine thread (the kernels release the
#: GIL), so one big task does not stall the other contexts of its Pe. Task types set
#: their own ``offload_bytes``: handing work to a thread costs tens of microseconds,
#: so only work that takes longer than that is worth it.
OFFLOAD_BYTES = 1 << 18


class EmuTask:
    """Base of emulated tasks: submission, status, ownership."""

    __slots__ = ("ctx", "pool", "owner", "status", "inflight", "allocated", "pinned", "reason", "flushed_by",
                 "on_engine", "launch", "done", "lane", "seq", "nth", "on_success", "on_error", "cud", "submitted")
    offload_bytes = OFFLOAD_BYTES
    #: The task kind of fault injection (:data:`strict.KINDS`); empty: the pool's kind.
    kind = ""
    #: Whether DOCA defines what the task does with a buffer released after it was given it (it fails the
    #: task): strict mode then lets it run instead of refusing the submit.
    released_ok = False
    _checks_submit = False
    #: The launcher of a task class whose own (``_launch`` with its ``_begin`` inlined: one frame per task
    #: less); ``None``: the pool picks the generic one.
    launch_fn: Callable[[Any], None] | None = None

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        self.pool = pool
        self.ctx = pool.ctx
        self.owner: Any = None
        self.status = _SUCCESS
        self.inflight = False
        self.allocated = False
        self.pinned = False
        #: Why the task failed, when the backend knows more than the status code.
        self.reason = ""
        #: Why its ctx stopped, when the task failed only because of that (set with its error completion).
        self.flushed_by = ""
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
        # The completions, called straight (no wrapper frame): ``on_success(owner, owner.user_data,
        # cud.user_data)``. The pool's, set by set_conf; ``await task`` routes one run elsewhere.
        self.on_success: Completion = pool.success  # type: ignore[assignment]  # set_conf ran before start
        self.on_error: Completion = pool.error  # type: ignore[assignment]
        self.cud: HasUserData = pool.ctx_owner
        #: Submitted since its allocation (the public layer clears it at allocation): what ``await`` has a result of.
        self.submitted = False

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
        if strict.STRICT:
            pin_bufs(self)  # refuses a freed buffer before anything counts the task as submitted
        pool = self.pool
        self.nth = pool.submitted
        pool.submitted += 1
        lane = self.lane
        if lane is not None:
            self.seq = lane.submitted
            lane.submitted += 1
        self.inflight = self.submitted = True
        ctx.inflight += 1
        if trace.ON: trace.submit(self)  # trace hook: task submit
        if self.reason:
            self.reason = ""
        # EmuPe.post, inlined (one frame less per IO) with the prebuilt item (no tuple per IO), and
        # unlocked: a submit runs on the Pe's own thread, which is not asleep (EmuPe.armed).
        pe: EmuPe = ctx.pe  # type: ignore[assignment]  # running implies connected
        pe.ready.append(self.launch)
        if pe.armed:
            pe.wake()

    def _refuse_submit(self) -> None:
        ctx = self.ctx
        self.submitted = False  # the last submit was refused: no completion to await
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
            self.reason = exc.detail
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
