"""``Dma.set_ordered_completions`` (DOCA 3.2): memcpy completions in submission order when asked; in the
emulator's (shuffled) order otherwise; a ctx setting, refused once the ctx is started."""

from __future__ import annotations

import pytest

import doca_py as d
from doca_py.errors import DocaBadState

from .helpers import Rig, local_mmap, rig

N = 16  # two bufs a task: the rig's inventory holds 32


def _copy_all(r: Rig) -> list[int]:
    """Submit N one-byte copies (user data = their index), wait for all; the indices in completion order."""
    mm = local_mmap(r.dev)
    base, _ = mm.get_memrange()
    tasks = [r.dma.task_memcpy_alloc_init(r.inv.buf_get_by_data(mm, base + i, 1),
                                          r.inv.buf_get_by_addr(mm, base + 4096 + i, 1), user_data=i)
             for i in range(N)]
    for t in tasks:
        t.submit()
    r.drain(N)
    assert all(kind == "ok" for kind, *_ in r.done)
    order = [u for _k, _t, u, _c in r.done]
    for t in tasks:
        t.get_src().dec_refcount()
        t.get_dst().dec_refcount()
        t.free()
    mm.stop()
    return order


def test_ordered_completions_arrive_in_submission_order() -> None:
    with rig(num_tasks=N, start=False) as r:
        r.dma.set_ordered_completions(True)
        r.dma.start()
        assert _copy_all(r) == list(range(N))


@pytest.mark.skipif(d.impl != "emulated", reason="the emulator's shuffled completion order")
def test_unordered_completions_may_arrive_in_any_order() -> None:
    from doca_py.emulated import strict

    if not strict.SHUFFLE:
        pytest.skip("DOCA_PY_EMU_SHUFFLE=0: the emulator keeps submission order")
    with rig(num_tasks=N, start=False) as r:
        r.dma.set_ordered_completions(False)  # DOCA's default, said explicitly
        r.dma.start()
        order = _copy_all(r)
    assert sorted(order) == list(range(N))
    assert order != list(range(N))  # 16 shuffled completions in submission order: odds of 1 in 16!


def test_ordered_completions_are_set_before_start() -> None:
    with rig() as r:
        with pytest.raises(DocaBadState, match="doca_dma_set_ordered_completions"):
            r.dma.set_ordered_completions(True)


def test_ordered_completions_take_a_bool() -> None:
    with rig(start=False) as r:
        with pytest.raises(TypeError, match="Dma.set_ordered_completions"):
            r.dma.set_ordered_completions(1)  # type: ignore[arg-type]
