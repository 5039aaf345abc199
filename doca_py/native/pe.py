"""Native ``doca_pe``."""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from .._backend.protocols.core import CtxHandle
from ..emulated import trace
from ..errors import DocaUsageError, check
from ._common import lib
from .borrow import Borrowable
from .ctx import NativeCtx

__all__ = ["NativePe", "pe_create"]

_get_ident = threading.get_ident


class NativePe(Borrowable):
    """``doca_pe *``: progress runs C, then the recorded Python completions."""

    def __init__(self, ptr: int | None) -> None:
        self.ptr = ptr
        self.ctxs: list[NativeCtx] = []
        l = lib()
        self._progress = l.doca_pe_progress
        # Looked up once: Pe.wait calls these each time it sleeps.
        self._get_handle = l.doca_pe_get_notification_handle
        self._request = l.doca_pe_request_notification
        self._clear = l.doca_pe_clear_notification
        self._fd = ctypes.c_int()
        self._pfd = ctypes.byref(self._fd)
        self._running = False
        self._owner: int | None = None
        #: Graphs created on this Pe (:mod:`.graph`): their recorded callbacks run after the C progress.
        self.graphs: list[Any] = []
        #: Exceptions of Python code C called back during the C progress (a graph's user node): raised after it.
        self.raised: list[BaseException] = []

    def connect_ctx(self, ctx: CtxHandle) -> None:
        assert isinstance(ctx, NativeCtx)
        check(lib().doca_pe_connect_ctx(self.ptr, ctx.ctx_ptr), "doca_pe_connect_ctx")
        ctx.pe = self
        self.ctxs.append(ctx)

    def progress(self) -> bool:
        if _get_ident() != self._owner:
            self._adopt_thread()
        if self._running:
            raise DocaUsageError("Pe.progress() must not be called from inside a callback")
        did = self._progress(self.ptr) != 0
        for ctx in self.ctxs:
            if ctx.pending:  # the trampolines recorded completions: run their Python side now
                self._running = True
                try:
                    ctx.dispatch()
                except BaseException as exc:
                    if trace.ON: trace.raised(exc)  # trace hook: a callback raised, the exception leaves progress()
                    raise
                finally:
                    self._running = False
                did = True
        if self.graphs:
            did = self._dispatch_graphs() or did
        return did

    def _dispatch_graphs(self) -> bool:
        did = False
        self._running = True
        try:
            for g in self.graphs:
                if g.pending:
                    g.dispatch()
                    did = True
            if self.raised:
                exc = self.raised.pop(0)
                raise exc
        except BaseException as exc:
            if trace.ON: trace.raised(exc)  # trace hook: a callback raised, the exception leaves progress()
            raise
        finally:
            self._running = False
        return did

    def _adopt_thread(self) -> None:
        # DOCA's PE is not thread-safe (conventions: one PE per thread, enforced).
        if self._owner is not None:
            raise DocaUsageError("a Pe is single-threaded: progress it only from the thread that "
                                 "first progressed it")
        self._owner = threading.get_ident()

    def get_notification_handle(self) -> int:
        rc = self._get_handle(self.ptr, self._pfd)
        if rc:
            check(rc, "doca_pe_get_notification_handle")
        return self._fd.value

    def request_notification(self) -> None:
        rc = self._request(self.ptr)
        if rc:
            check(rc, "doca_pe_request_notification")

    def clear_notification(self, handle: int) -> None:
        rc = self._clear(self.ptr, handle)
        if rc:
            check(rc, "doca_pe_clear_notification")

    def get_num_inflight_tasks(self) -> int:
        v = ctypes.c_size_t()
        check(lib().doca_pe_get_num_inflight_tasks(self.ptr, ctypes.byref(v)), "doca_pe_get_num_inflight_tasks")
        return v.value

    def set_event_mode(self, mode: int) -> None:
        check(lib().doca_pe_set_event_mode(self.ptr, mode), "doca_pe_set_event_mode")

    def destroy(self) -> None:
        if not self.borrowed:
            check(lib().doca_pe_destroy(self.ptr), "doca_pe_destroy")


def pe_create() -> NativePe:
    out = ctypes.c_void_p()
    check(lib().doca_pe_create(ctypes.byref(out)), "doca_pe_create")
    return NativePe(out.value)
