"""Helpers shared by comch connections, tasks and contexts: posting to a Pe, completions, device views."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...errors import (
    DocaInvalidValue,
    DocaNotPermitted,
    ErrorCode,
)
from ...types import AccessFlag
from .. import trace
from ..completion import complete_batch
from ..ctx import EmuTask, complete_in_order, deliver_completion, unpin_bufs
from ..mmap import EmuMmap
from ..pe import EmuPe
from .config import MAX_NAME_LEN, PCI_READ, PCI_WRITE, RUNNING

def connection_lost(status: int) -> str:
    """Why a ctx whose connection was lost stops, as its flushed tasks report it (``Task.flushed_by``)."""
    return f"the ctx stopped when its connection was lost ({ErrorCode(status).name})"


def post_complete(t: EmuTask) -> None:
    """Post a task's completion (its prebuilt ``done`` item) from the I/O thread, as :func:`post`."""
    pe = t.ctx.pe
    if pe is None or pe.efd < 0:
        return
    try:
        pe.post_item(t.done)
    except OSError:
        pass


def post(pe: EmuPe | None, fn: Callable[[Any], object], arg: Any) -> None:
    """``pe.post`` from the I/O thread, tolerating an engine destroyed meanwhile."""
    if pe is None or pe.efd < 0:
        return
    try:
        pe.post_item((fn, arg))  # pe.post's frame skipped: a batch of messages or completions posts here
    except OSError:
        pass


def complete_soft(task: EmuTask) -> None:
    """Deliver a task error that does not stop its ctx (the lost connection of a
    multi-client server): the error callback runs and the ctx stays RUNNING."""
    complete_in_order(task, _deliver_soft)


def _deliver_soft(task: EmuTask) -> None:
    ctx = task.ctx
    if ctx.state == RUNNING and task.status:
        if trace.ON: trace.complete(task)  # trace hook: completion (an error that keeps the ctx running)
        task.inflight = False
        ctx.inflight -= 1
        if task.pinned:
            unpin_bufs(task)
        task.flushed_by = ""
        o = task.owner
        task.on_error(o, o.user_data, task.cud.user_data)
        return
    deliver_completion(task)


def device_view(mm: EmuMmap, addr: int, n: int, write: bool) -> memoryview:
    """``[addr, addr+n)`` of a producer or consumer buffer, as the comch device reaches it: over
    PCIe, so the map needs ``PCI_READ_WRITE`` (a consumer's) or a ``PCI_*`` flag (a producer's),
    which is how DOCA's comch samples register these maps; local access rights are irrelevant."""
    mv = mm.mv
    if mm.fast and mv is not None and mm.addr <= addr and addr + n <= mm.hi and n >= 0:
        if not mm.perms & (PCI_WRITE if write else PCI_READ):
            raise DocaNotPermitted(f"mmap permissions {AccessFlag(mm.perms)!r} do not let the comch device "
                                   f"{'write' if write else 'read'} it (it needs "
                                   f"{'PCI_READ_WRITE' if write else 'PCI_READ_ONLY or PCI_READ_WRITE'})")
        off = addr - mm.addr
        return mv[off:off + n]
    return mm.view(addr, n, write)  # not a started local map: the map's own checks


def check_name(name: str) -> bytes:
    raw = name.encode()
    if not raw or len(raw) >= MAX_NAME_LEN or b"\0" in raw:
        raise DocaInvalidValue(f"comch server name must be 1..{MAX_NAME_LEN - 1} bytes without NUL, got {name!r}")
    return raw


def post_done(done: Sequence[EmuTask]) -> None:
    """Post the completions of message tasks whose bytes were written (one ctx, one post)."""
    post(done[0].ctx.pe, complete_batch, done)
