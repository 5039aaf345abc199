"""``doca_sync_event_as_ctx``: the emulated sync event's ctx and its tasks (get, notify set and add, wait
eq and neq). Part of :mod:`.sync_event`, which re-exports every name."""

from __future__ import annotations

from collections.abc import Callable

from typing import TYPE_CHECKING, Any, cast

from ..errors import DocaBadState, DocaError, DocaNotPermitted, DocaNotSupported
from . import version as emu_version
from .ctx import FLUSHED, EmuCtx, EmuTask, TaskPool, complete_task
from .sync_event_value import _MASK, holds

if TYPE_CHECKING:
    from .sync_event import EmuSyncEvent

__all__ = ["EmuSyncEventCtx", "EmuSyncEventTaskGet", "EmuSyncEventTaskNotifySet", "EmuSyncEventTaskNotifyAdd",
           "EmuSyncEventTaskWait", "EmuSyncEventTaskWaitNeq", "EmuSyncEventTaskWaitGt"]

_RUNNING = 2


def _needs_26(fn: str) -> None:
    """DOCA 3.0 dropped *fn* (2.6's wait-greater-than task): refused unless the emulator presents 2.6."""
    if emu_version.VERSION >= (3, 0):
        raise DocaNotSupported(f"{fn} is exported up to DOCA 2.6 (3.0 replaced the wait_gt task with wait_eq and "
                               f"wait_neq); the emulator "
                               f"presents DOCA {emu_version.VERSION[0]}.{emu_version.VERSION[1]} (DOCA_PY_EMU_VERSION)")


def _needs_30(fn: str) -> None:
    """DOCA 2.6 has no *fn* (its header waits only for greater-than): refused in the emulator's 2.6 mode as
    the native backend refuses it on a 2.6 runtime."""
    if emu_version.VERSION < (3, 0):
        raise DocaNotSupported(f"{fn} is exported from DOCA 3.0; the emulator presents DOCA "
                               f"{emu_version.VERSION[0]}.{emu_version.VERSION[1]} (DOCA_PY_EMU_VERSION)")


class _Pool26:
    """A task type the presented DOCA lacks (2.6: the eq/neq waits; 3.x: 2.6's wait_gt): configuring it is
    refused by *check*, as the native backend refuses the function that version does not export."""

    def __init__(self, fn: str, check: Callable[[str], None] | None = None) -> None:
        self.fn = fn
        self.check = check or _needs_30

    def set_conf(self, *args: object) -> None:
        self.check(self.fn)


class _SeTask(EmuTask):
    """A task on the ctx's own event."""

    __slots__ = ("value", "mask", "result")
    kind = "sync_event"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.value = 0
        self.mask = _MASK
        self.result = 0

    @property
    def event(self) -> EmuSyncEvent:
        ctx = self.ctx
        assert isinstance(ctx, EmuSyncEventCtx)
        return ctx.event

    def _settable_value(self, what: str, value: int) -> None:
        self._settable(what)
        self.value = value & _MASK

    # The getters and setters of every task type, over value/mask/result.
    def get_ret_val(self) -> int:
        return self.result

    def get_fetched_val(self) -> int:
        return self.result

    def set_set_val(self, value: int) -> None:
        self._settable_value("set_set_val", value)

    def get_set_val(self) -> int:
        return self.value

    def set_inc_val(self, value: int) -> None:
        self._settable_value("set_inc_val", value)

    def get_inc_val(self) -> int:
        return self.value

    def set_wait_val(self, value: int) -> None:
        self._settable_value("set_wait_val", value)

    def get_wait_val(self) -> int:
        return self.value

    def set_mask(self, mask: int) -> None:
        self._settable("set_mask")
        self.mask = mask & _MASK

    def get_mask(self) -> int:
        return self.mask


class EmuSyncEventTaskGet(_SeTask):
    """``doca_sync_event_task_get``."""

    __slots__ = ()

    def _execute(self) -> int:
        self.result = self.event.cell.read()
        return 0


class EmuSyncEventTaskNotifySet(_SeTask):
    """``doca_sync_event_task_notify_set``."""

    __slots__ = ()

    def _execute(self) -> int:
        self.event.cell.write(self.value)
        return 0


class EmuSyncEventTaskNotifyAdd(_SeTask):
    """``doca_sync_event_task_notify_add``."""

    __slots__ = ()

    def _execute(self) -> int:
        self.result = self.event.cell.add(self.value)
        return 0


class EmuSyncEventTaskWait(_SeTask):
    """``doca_sync_event_task_wait_eq`` / ``_wait_neq``: in flight until the masked value matches; the Pe
    polls it, as DOCA's wait tasks are polled."""

    __slots__ = ()
    op = "eq"

    def _execute(self) -> int:  # never: _begin polls
        raise AssertionError("wait tasks are polled")

    def _begin(self) -> None:
        ctx = self.ctx
        assert isinstance(ctx, EmuSyncEventCtx)
        if not self.poll_once():
            ctx.waiting.add(self)

    def poll_once(self) -> bool:
        """Complete the task if its condition holds (or it fails); whether it completed."""
        try:
            if self.ctx.state != _RUNNING:
                self.status = FLUSHED
            elif holds(self.op, self.event.cell.read(), self.value, self.mask):
                self.status = 0
            else:
                return False
        except DocaError as exc:
            self.status, self.reason = exc.code, exc.detail
        complete_task(self)
        return True


class EmuSyncEventTaskWaitNeq(EmuSyncEventTaskWait):
    """``doca_sync_event_task_wait_neq``."""

    __slots__ = ()
    op = "neq"


class EmuSyncEventTaskWaitGt(EmuSyncEventTaskWait):
    """DOCA 2.6's ``doca_sync_event_task_wait_gt`` (3.0 replaced it with the eq/neq waits)."""

    __slots__ = ()
    op = "gt"


class _Waiters:
    """The ctx's wait tasks in flight, polled by every progress of its Pe (a Pe poller)."""

    def __init__(self, ctx: EmuSyncEventCtx) -> None:
        self.ctx = ctx
        self.tasks: list[EmuSyncEventTaskWait] = []

    def add(self, task: EmuSyncEventTaskWait) -> None:
        self.tasks.append(task)
        pe = self.ctx.pe
        if pe is not None and self not in pe.pollers:
            pe.pollers = [*pe.pollers, self]  # replaced, never mutated (a progress may be iterating it)

    def poll(self) -> bool:
        tasks, self.tasks = self.tasks, []
        done = False
        for t in tasks:
            if t.poll_once():
                done = True
            else:
                self.tasks.append(t)
        pe = self.ctx.pe
        if not self.tasks and pe is not None and self in pe.pollers:
            pe.pollers = [p for p in pe.pollers if p is not self]
        return done

    def arm(self) -> bool:
        # The value may change in another process, which rings no doorbell here: a Pe with wait tasks in
        # flight does not sleep (it polls, as the hardware does).
        return bool(self.tasks)


class EmuSyncEventCtx(EmuCtx):
    """``doca_sync_event_as_ctx``: the event's ctx (it does not own the event)."""

    def __init__(self, event: EmuSyncEvent) -> None:
        super().__init__()
        self.event = event
        self.get = TaskPool(self, EmuSyncEventTaskGet, "sync_event")
        self.notify_set = TaskPool(self, EmuSyncEventTaskNotifySet, "sync_event")
        self.notify_add = TaskPool(self, EmuSyncEventTaskNotifyAdd, "sync_event")
        self.wait_eq = TaskPool(self, EmuSyncEventTaskWait, "sync_event")
        self.wait_neq = TaskPool(self, EmuSyncEventTaskWaitNeq, "sync_event")
        #: DOCA 2.6's wait-greater-than task type (``SyncEventCtx.task_wait_gt_*``; refused on 3.x).
        self.wait_gt: TaskPool[EmuTask] = cast(Any, _Pool26("doca_sync_event_task_wait_gt_set_conf", _needs_26))
        if emu_version.VERSION < (3, 0):  # 2.6 has wait_gt tasks instead
            self.wait_eq = cast(Any, _Pool26("doca_sync_event_task_wait_eq_set_conf"))
            self.wait_neq = cast(Any, _Pool26("doca_sync_event_task_wait_neq_set_conf"))
            self.wait_gt = TaskPool(self, EmuSyncEventTaskWaitGt, "sync_event")
        self.waiting = _Waiters(self)

    def destroy(self) -> None:
        if not self.destroyed:  # the event's destroy detaches its ctx too
            super().destroy()

    def _configurable(self, what: str) -> None:
        if self.state != 0:  # doca_sync_event.h: the task set_conf of a ctx not idle is NOT_PERMITTED
            raise DocaNotPermitted(f"{what}: " * bool(what) + "configure the sync event's ctx while it is idle")

    def _on_start(self) -> None:
        if self.event.destroyed:
            raise DocaBadState("the sync event was destroyed")

    def _alloc(self, pool: TaskPool[EmuTask], value: int = 0, mask: int = _MASK) -> _SeTask:
        t = pool.alloc()
        assert isinstance(t, _SeTask)
        t.value, t.mask, t.result = value & _MASK, mask & _MASK, 0
        return t

    def task_get_alloc_init(self) -> _SeTask:
        return self._alloc(self.get)

    def task_notify_set_alloc_init(self, value: int) -> _SeTask:
        return self._alloc(self.notify_set, value)

    def task_notify_add_alloc_init(self, value: int) -> _SeTask:
        return self._alloc(self.notify_add, value)

    def task_wait_eq_alloc_init(self, value: int, mask: int) -> _SeTask:
        _needs_30("doca_sync_event_task_wait_eq_alloc_init")
        return self._alloc(self.wait_eq, value, mask)

    def task_wait_neq_alloc_init(self, value: int, mask: int) -> _SeTask:
        _needs_30("doca_sync_event_task_wait_neq_alloc_init")
        return self._alloc(self.wait_neq, value, mask)

    def task_wait_gt_alloc_init(self, value: int, mask: int) -> _SeTask:
        """DOCA 2.6's ``doca_sync_event_task_wait_gt_alloc_init`` (refused when presenting 3.0 or later)."""
        _needs_26("doca_sync_event_task_wait_gt_alloc_init")
        return self._alloc(self.wait_gt, value, mask)
