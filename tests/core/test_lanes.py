"""The emulator's work queues (doca_py.emulated.pe.Lane): completions in submission order, whatever order
they arrive in, and a raising callback neither loses nor reorders the ones parked behind it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import doca_py as d

pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="the emulator's queues")


def _tasks(n: int) -> tuple[Any, list[Any]]:
    from doca_py.emulated.pe import EmuPe, Lane

    pe, lane = EmuPe(), Lane()
    tasks = []
    for _ in range(n):
        tasks.append(SimpleNamespace(lane=lane, seq=lane.submitted, ctx=SimpleNamespace(pe=pe)))
        lane.submitted += 1
    return pe, tasks


def test_completions_arriving_out_of_order_are_delivered_in_submission_order() -> None:
    from doca_py.emulated.ctx import complete_in_order

    pe, tasks = _tasks(5)
    got: list[int] = []
    for i in (3, 1, 4, 0, 2):
        complete_in_order(tasks[i], lambda t: got.append(tasks.index(t)))
    assert got == [0, 1, 2, 3, 4]
    pe.destroy()


def test_a_raising_callback_leaves_the_rest_to_the_next_progress_in_order() -> None:
    from doca_py.emulated.ctx import complete_in_order

    pe, tasks = _tasks(4)
    got: list[int] = []

    def deliver(t: Any) -> None:
        got.append(tasks.index(t))
        if t is tasks[0]:
            raise RuntimeError("the application's callback failed")

    for i in (2, 1, 3):
        complete_in_order(tasks[i], deliver)
    with pytest.raises(RuntimeError, match="callback failed"):
        complete_in_order(tasks[0], deliver)
    assert got == [0]
    assert pe.progress()
    assert got == [0, 1, 2, 3]
    pe.destroy()


def _engine_tasks(n: int, got: list[int]) -> tuple[Any, list[Any]]:
    """Tasks shaped like EmuTask for complete_task: a running ctx, a success status, the completion
    callbacks the backend calls straight (``cb(owner, owner.user_data, cud.user_data)``)."""
    from doca_py.types import CtxState

    pe, tasks = _tasks(n)
    ctx = SimpleNamespace(pe=pe, state=int(CtxState.RUNNING), inflight=n)
    cud = SimpleNamespace(user_data=None)
    for i, t in enumerate(tasks):
        t.ctx, t.status, t.inflight, t.pinned, t.owner = ctx, 0, True, False, SimpleNamespace(user_data=i)
        t.on_success, t.on_error, t.cud = lambda owner, ud, cud: got.append(ud), None, cud
    return pe, tasks


def test_complete_task_delivers_an_in_order_completion_inline_and_parks_the_early_ones() -> None:
    import sys

    from doca_py.emulated import ctx as emu_ctx

    got: list[int] = []
    pe, tasks = _engine_tasks(4, got)
    called: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in (emu_ctx._in_order.__code__, emu_ctx.deliver_completion.__code__):
            called.append(frame.f_code.co_name)

    sys.setprofile(tracer)
    try:
        emu_ctx.complete_task(tasks[0])  # the lane's next one: delivered without the lane's helpers
    finally:
        sys.setprofile(None)
    assert got == [0] and called == []
    for i in (3, 1, 2):  # 3 waits for 2, then 1 and 2 release it
        emu_ctx.complete_task(tasks[i])
    assert got == [0, 1, 2, 3]
    assert tasks[0].ctx.inflight == 0 and not any(t.inflight for t in tasks)
    pe.destroy()
