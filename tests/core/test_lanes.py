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
