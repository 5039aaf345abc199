"""Native ``doca_ctx`` and ``doca_task`` plumbing shared by every library context.

Completion callbacks are module-level ``CFUNCTYPE`` trampolines, alive for the
process. ``union doca_data`` carries an integer key into a registry, never a Python
pointer. A trampoline only records the completion on its ``Pe``; the Python
callbacks run after ``doca_pe_progress`` returns, so no Python exception ever
crosses C frames and no user code re-enters DOCA from inside a C callback.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from typing import Any

from .._backend.protocols.core import Completion, HasUserData
from ..errors import DocaBadState, DocaNoMemory, ErrorCode, check
from ..types import CtxState
from .capi import CtxStateChangedCb, TaskCompletionCb
from ._common import lib
from .borrow import Borrowable

__all__ = ["NativeCtx", "NativeTask", "NativeTaskPool", "TASK_SUCCESS_CB", "TASK_ERROR_CB", "rest_after"]

_keys = itertools.count(1)
_RUNNING = int(CtxState.RUNNING)
_tasks: dict[int, NativeTask] = {}
_ctxs: dict[int, NativeCtx] = {}


# The trampolines append the task's prebuilt ``(task, ok)`` item: no allocation per completion.
# A subscript, not ``dict.get`` (an unknown key is a task of another binding), and the ctx's bound append
# kept on the task: one call per completion, the append.
def _task_ok(task_ptr: int | None, task_ud: int, ctx_ud: int) -> None:
    try:
        t = _tasks[task_ud]
    except KeyError:
        return
    t.record(t.ok_item)


def _task_err(task_ptr: int | None, task_ud: int, ctx_ud: int) -> None:
    try:
        t = _tasks[task_ud]
    except KeyError:
        return
    t.record(t.err_item)


#: Registered with every ``*_set_conf``; kept alive for the process.
TASK_SUCCESS_CB = TaskCompletionCb(_task_ok)
TASK_ERROR_CB = TaskCompletionCb(_task_err)


def _state_changed(ctx_ud: int, ctx_ptr: int | None, prev: int, nxt: int) -> None:
    c = _ctxs.get(ctx_ud)
    if c is not None:
        c.pending.append((c, (prev, nxt)))


STATE_CHANGED_CB = CtxStateChangedCb(_state_changed)


def rest_after(items: list[tuple[Any, Any]], item: tuple[Any, Any]) -> list[tuple[Any, Any]]:
    """The items of a dispatch after *item*, whose callback raised. Found by identity: every record is its own
    tuple in a batch (a task completes once per submission; events are recorded as new tuples)."""
    for i, x in enumerate(items):
        if x is item:
            return items[i + 1:]
    return []


def _wrapped(ctx_ptr: int | None) -> bool:
    """Whether a live wrapper owns *ctx_ptr*'s user data (then a borrowed view leaves it:
    the owner's trampolines keep finding the owner)."""
    ud = ctypes.c_uint64()
    if lib().doca_ctx_get_user_data(ctx_ptr, ctypes.byref(ud)) != 0:
        return False
    owner = _ctxs.get(ud.value)
    return owner is not None and owner.ctx_ptr == ctx_ptr


class NativeCtx(Borrowable):
    """A ``doca_ctx *`` (from ``doca_<lib>_as_ctx``) and the owning library object."""

    def __init__(self, ctx_ptr: int | None, destroy: Callable[[], int]) -> None:
        self.ctx_ptr = ctx_ptr
        self._destroy = destroy
        self.key = next(_keys)
        _ctxs[self.key] = self
        #: Completions recorded by trampolines, dispatched by NativePe.progress.
        self.pending: list[tuple[Any, Any]] = []
        self.state_cb: Callable[[int, int], None] | None = None
        self.pe: Any = None
        #: Why the ctx stopped, as the tasks its stop flushes report it ("" while it runs). DOCA reports only
        #: statuses: the first failure delivered while the ctx is not running is taken as the cause.
        self.stop_cause = ""
        if not (self.borrowed and _wrapped(ctx_ptr)):
            check(lib().doca_ctx_set_user_data(ctx_ptr, self.key), "doca_ctx_set_user_data")

    def start(self) -> int:
        rc = lib().doca_ctx_start(self.ctx_ptr)
        if rc not in (0, ErrorCode.IN_PROGRESS):
            check(rc, "doca_ctx_start")
        self.stop_cause = ""
        return self.get_state()

    def stop(self) -> int:
        if not self.stop_cause and self.get_state() == _RUNNING and self.get_num_inflight_tasks():
            self.stop_cause = "its ctx was stopped (stop()) while it was in flight"
        rc = lib().doca_ctx_stop(self.ctx_ptr)
        if rc not in (0, ErrorCode.IN_PROGRESS):
            check(rc, "doca_ctx_stop")
        return self.get_state()

    def get_state(self) -> int:
        v = ctypes.c_int()
        check(lib().doca_ctx_get_state(self.ctx_ptr, ctypes.byref(v)), "doca_ctx_get_state")
        return v.value

    def get_num_inflight_tasks(self) -> int:
        v = ctypes.c_size_t()
        check(lib().doca_ctx_get_num_inflight_tasks(self.ctx_ptr, ctypes.byref(v)), "doca_ctx_get_num_inflight_tasks")
        return v.value

    def set_state_changed_cb(self, cb: Callable[[int, int], None]) -> None:
        check(lib().doca_ctx_set_state_changed_cb(self.ctx_ptr, STATE_CHANGED_CB), "doca_ctx_set_state_changed_cb")
        self.state_cb = cb

    def flush_tasks(self) -> None:
        l = lib()
        if l.has("doca_ctx_flush_tasks"):
            l.doca_ctx_flush_tasks(self.ctx_ptr)

    def dispatch(self) -> bool:
        """Run the Python side of recorded completions; called by the Pe."""
        pending = self.pending
        if not pending:
            return False
        # The items recorded before this dispatch run now; what a callback's DOCA call records meanwhile waits
        # for the next progress. The list stays (the tasks keep its bound append): its items move to a copy,
        # so the loop keeps no count; a callback that raises leaves the rest first in line.
        items = pending[:]
        del pending[:]
        try:
            for item in items:
                obj, what = item
                if obj is self:
                    if self.state_cb is not None:
                        self.state_cb(*what)
                else:
                    obj.inflight = False
                    o = obj.owner
                    if what:
                        obj.on_success(o, o.user_data, obj.cud.user_data)
                    else:
                        self.task_failed(obj)
                        obj.on_error(o, o.user_data, obj.cud.user_data)
        except BaseException:
            pending[:0] = rest_after(items, item)  # the rest: on the next progress, before the newer records
            raise
        return True

    def task_failed(self, task: NativeTask) -> None:
        """Before a task's error callback: whether it was flushed, and why (``flushed_by``). A failure while
        the ctx still runs stops nothing (a lost connection of a multi-client server); the first one
        after which the ctx is not running is taken as what stopped it, the later ones as flushed."""
        if self.stop_cause:
            task.flushed_by = self.stop_cause
            return
        task.flushed_by = ""
        if self.get_state() != _RUNNING:
            self.stop_cause = (f"the ctx stopped after {type(task.owner).__name__} failed with "
                               f"{ErrorCode(task.get_status()).name}")

    def destroy(self) -> None:
        check(self._destroy(), "destroy ctx")
        _ctxs.pop(self.key, None)


def _unconfigured(task: object, task_ud: object, ctx_ud: object) -> None:
    raise DocaBadState("a task completed before its type was configured (set_conf)")


class _NoOwner:
    user_data = None


_NO_OWNER = _NoOwner()


class NativeTaskPool:
    """One task type's pool: ``set_conf`` registers the trampolines.

    *name* is the C name of the ``*_set_conf`` function (the label of its errors).
    """

    def __init__(self, ctx: NativeCtx, set_conf: Callable[[Any, Any, int], int], name: str) -> None:
        self.ctx = ctx
        self._set_conf = set_conf
        self.name = name
        self.success: Completion = _unconfigured
        self.error: Completion = _unconfigured
        #: Whose ``user_data`` the completions get as ``ctx_user_data`` (the public ctx).
        self.ctx_owner: HasUserData = _NO_OWNER
        self._by_ptr: dict[int, NativeTask] = {}

    def set_conf(self, success: Completion, error: Completion, num_tasks: int, ctx_owner: HasUserData) -> None:
        check(self._set_conf(TASK_SUCCESS_CB, TASK_ERROR_CB, num_tasks), self.name)
        self.success, self.error, self.ctx_owner = success, error, ctx_owner
        for t in self._by_ptr.values():  # descriptors of an earlier start
            t.on_success, t.on_error, t.cud = success, error, ctx_owner

    def adopt(self, rc: int, ptr: int | None, what: str) -> NativeTask:
        """Wrap a freshly allocated task pointer (cached per pointer)."""
        if rc == ErrorCode.NO_MEMORY:
            raise DocaNoMemory(f"{what}: the task pool is exhausted")
        check(rc, what)
        assert ptr
        t = self._by_ptr.get(ptr)
        if t is None:
            t = self._by_ptr[ptr] = NativeTask(ptr, self)
        return t

    def new_key(self) -> int:
        return next(_keys)


class NativeTask:
    """A ``doca_task *`` of some library task type."""

    __slots__ = ("ptr", "task_ptr", "pool", "ctx", "owner", "inflight", "flushed_by", "key", "ok_item", "err_item",
                 "_submit", "on_success", "on_error", "cud", "submitted", "record")
    #: DOCA reports only the status; the emulated backend also says why.
    reason = ""

    def __init__(self, ptr: int, pool: NativeTaskPool) -> None:
        self.ptr = ptr
        self.task_ptr = ptr  # library modules pass the doca_task * (from *_as_task)
        self.pool = pool
        self.ctx = pool.ctx  # the trampolines' shortcut to ctx.pending
        self.owner: Any = None
        self.inflight = False
        self.flushed_by = ""  # set by NativeCtx.task_failed before each error callback
        self.key = next(_keys)
        # What the completion trampolines record, built once per descriptor.
        self.ok_item = (self, True)
        self.err_item = (self, False)
        self.record = pool.ctx.pending.append  # what the trampolines call (the ctx's list never changes)
        # The completions, called straight by the dispatch (no wrapper frame); ``await task`` routes one run.
        self.on_success: Completion = pool.success
        self.on_error: Completion = pool.error
        self.cud: HasUserData = pool.ctx_owner
        #: Submitted since its allocation (the public layer clears it at allocation): what ``await`` has a result of.
        self.submitted = False
        l = lib()
        self._submit = l.doca_task_submit  # looked up once, not per submit
        _tasks[self.key] = self
        l.doca_task_set_user_data(ptr, self.key)

    def submit(self) -> None:
        if self.inflight:
            raise DocaBadState("task is already in flight")  # the run in flight can still be awaited
        rc = self._submit(self.task_ptr)
        if rc:
            self.submitted = False
            check(rc, "doca_task_submit")
        self.inflight = self.submitted = True

    def try_submit(self) -> None:
        self.submitted = False
        check(lib().doca_task_try_submit(self.task_ptr), "doca_task_try_submit")
        self.inflight = self.submitted = True

    def submit_ex(self, flags: int) -> None:
        self.submitted = False
        check(lib().doca_task_submit_ex(self.task_ptr, flags), "doca_task_submit_ex")
        self.inflight = self.submitted = True

    def free(self) -> None:
        if self.inflight:
            raise DocaBadState("a task in flight cannot be freed")
        lib().doca_task_free(self.task_ptr)

    def get_status(self) -> int:
        return int(lib().doca_task_get_status(self.task_ptr))


