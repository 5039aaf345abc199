"""``Dma.set_ordered_completions`` (DOCA 3.2): memcpy completions in submission order when asked; in the
emulator's (shuffled) order otherwise; a ctx setting, refused once the ctx is started."""

from __future__ import annotations

import pytest

import doca_py as d
from doca_py.errors import DocaBadState, DocaNotSupported

from .helpers import Rig, local_mmap, rig


def _before_3_2() -> bool:
    """The emulator presents a DOCA older than 3.2 (``--doca-version``): no ordered completions."""
    if d.impl != "emulated":
        return False
    from doca_py.emulated import version

    return not version.at_least(3, 2)


needs_3_2 = pytest.mark.skipif(_before_3_2(), reason="doca_dma_set_ordered_completions exists from DOCA 3.2")

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


@needs_3_2
def test_ordered_completions_arrive_in_submission_order() -> None:
    with rig(num_tasks=N, start=False) as r:
        r.dma.set_ordered_completions(True)
        r.dma.start()
        assert _copy_all(r) == list(range(N))


@needs_3_2
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


@needs_3_2
def test_ordered_completions_are_set_before_start() -> None:
    with rig() as r:
        with pytest.raises(DocaBadState, match="doca_dma_set_ordered_completions"):
            r.dma.set_ordered_completions(True)


@needs_3_2
def test_ordered_completions_take_a_bool() -> None:
    with rig(start=False) as r:
        with pytest.raises(TypeError, match="Dma.set_ordered_completions"):
            r.dma.set_ordered_completions(1)  # type: ignore[arg-type]


@needs_3_2
def test_the_setting_reads_back() -> None:
    with rig(start=False) as r:
        assert r.dma.get_ordered_completions() is False  # DOCA's default: unordered
        r.dma.set_ordered_completions(True)
        assert r.dma.get_ordered_completions() is True
        r.dma.start()
        assert r.dma.get_ordered_completions() is True  # readable while running
        r.dma.stop()
        r.dma.set_ordered_completions(False)
        assert r.dma.get_ordered_completions() is False


@needs_3_2
def test_a_failure_after_successes_is_delivered_outside_strict_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ordered ctx's successes completed inline kept the lane's count behind: the failure after them
    waited for ever (its ctx STOPPING, nothing delivered) when the emulator ran outside strict mode."""
    if d.impl == "emulated":
        from doca_py.emulated import strict

        monkeypatch.setattr(strict, "STRICT", False)
    with rig(start=False) as r:
        r.dma.set_ordered_completions(True)
        r.dma.start()
        mm = local_mmap(r.dev)
        base, _ = mm.get_memrange()
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        small = r.inv.buf_get_by_addr(mm, base + 8192, 16)
        ok = r.dma.task_memcpy_alloc_init(src, dst)
        ok.submit()
        r.drain(1)
        bad = r.dma.task_memcpy_alloc_init(src, small)
        bad.submit()
        while len(r.done) < 2 and r.pe.progress():  # bounded: progress() is False once nothing is left to do
            pass
        assert [k for k, *_ in r.done] == ["ok", "err"] and bad.get_status() == d.ErrorCode.INVALID_VALUE
        for t in (ok, bad):
            t.free()
        for b in (src, dst, small):
            b.dec_refcount()
        mm.stop()


@pytest.mark.skipif(d.impl != "emulated", reason="the emulator's version modes (the native backend's missing "
                                                 "function is tested in tests/native)")
@pytest.mark.parametrize("older", [(2, 6), (3, 0)])
def test_before_3_2_the_emulator_refuses_ordered_completions(older: tuple[int, int],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated import version

    monkeypatch.setattr(version, "VERSION", older)
    with rig(start=False) as r:
        with pytest.raises(DocaNotSupported, match=rf"doca_dma_set_ordered_completions is exported from DOCA 3\.2; "
                                                   rf"the emulator presents DOCA {older[0]}\.{older[1]}"):
            r.dma.set_ordered_completions(True)
        with pytest.raises(DocaNotSupported, match="doca_dma_get_ordered_completions is exported from DOCA 3.2"):
            r.dma.get_ordered_completions()
