"""DOCA 3.x rules of the core objects, one test per rule (doca-c-api §7.2 A–D, §4.4).

The emulator's own strict-mode and knob tests are in ``tests/core/test_emulator_strict.py``.
"""

from __future__ import annotations

import os

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import CtxState as S

from ..core.helpers import HOST_PCI, local_mmap, rig


def _bufs(r, size: int = 64):  # type: ignore[no-untyped-def]
    mm = local_mmap(r.dev, 1 << 16)
    base, _ = mm.get_memrange()
    mm.buffer[:size] = os.urandom(size)
    return mm, r.inv.buf_get_by_data(mm, base, size), r.inv.buf_get_by_addr(mm, base + 4096, 4096)


# -- B. deferred execution ----------------------------------------------------------------------
def test_work_happens_in_progress_not_in_submit(backend: str) -> None:
    with rig() as r:
        mm, src, dst = _bufs(r)
        r.dma.task_memcpy_alloc_init(src, dst).submit()
        assert dst.get_data_len() == 0 and bytes(mm.buffer[4096:4160]) == bytes(64)  # nothing copied yet
        r.drain(1)
        assert bytes(dst.data_view()) == bytes(mm.buffer[:64])


def test_source_rewritten_after_submit_yields_the_new_bytes(backend: str) -> None:
    # Hardware reads the source when it executes the task, not at submit.
    with rig() as r:
        mm, src, dst = _bufs(r, 16)
        r.dma.task_memcpy_alloc_init(src, dst).submit()
        mm.buffer[:16] = b"written-after-ok"
        r.drain(1)
        assert bytes(dst.data_view()) == b"written-after-ok"


# -- A. ctx state machine ------------------------------------------------------------------------
def test_stop_of_an_idle_ctx_succeeds(backend: str) -> None:
    with rig(start=False) as r:
        assert r.dma.stop() == S.IDLE  # the dma_local_copy sample stops twice
        r.dma.start()
        assert r.dma.stop() == S.IDLE
        assert r.dma.stop() == S.IDLE


def test_stopping_becomes_idle_on_the_next_progress_not_inside_free(backend: str) -> None:
    changes: list[tuple[S, S]] = []
    with rig(start=False) as r:
        r.dma.set_state_changed_cb(lambda ud, ctx, prev, nxt: changes.append((prev, nxt)))
        r.dma.start()
        mm, src, dst = _bufs(r)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert r.dma.stop() == S.STOPPING  # an allocated task keeps it stopping
        task.free()
        assert r.dma.get_state() == S.STOPPING  # not inside free()
        while r.dma.get_state() != S.IDLE:
            assert r.pe.progress()
        while r.pe.progress():
            pass  # deliver the state callbacks
        assert changes[-1] == (S.STOPPING, S.IDLE)


# -- C. buffers -----------------------------------------------------------------------------------
def test_get_list_len_needs_the_head(backend: str) -> None:
    with rig() as r:
        mm, a, b = _bufs(r)
        a.chain_list(b)
        assert a.get_list_len() == 2
        with pytest.raises(e.DocaNotPermitted):
            b.get_list_len()
        a.dec_refcount()


@pytest.mark.doca_versions("3.0", "3.2")  # the DOCA functions it uses: see test_doca_versions for older ones
def test_inventory_expand_needs_start(backend: str) -> None:
    inv = d.BufInventory(2, start=False)
    try:
        with pytest.raises(e.DocaBadState):
            inv.expand(2)
        inv.start()
        inv.expand(2)
        assert inv.get_num_elements() == 4
    finally:
        inv.close()


# -- D. reachability ------------------------------------------------------------------------------
def test_dma_cannot_reach_a_map_without_its_device(backend: str) -> None:
    with rig() as r, d.Dev.open_by_pci_addr(HOST_PCI) as other:
        ours = local_mmap(r.dev, 1 << 16)
        theirs = local_mmap(other, 1 << 16)  # registered for another device only
        src = r.inv.buf_get_by_data(theirs, theirs.get_memrange()[0], 64)
        dst = r.inv.buf_get_by_addr(ours, ours.get_memrange()[0], 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        r.drain(1)
        assert r.done[0][0] == "err" and task.get_status() == d.ErrorCode.NOT_PERMITTED
        assert dst.get_data_len() == 0
        assert r.dma.get_state() == S.STOPPING  # a failed task stops its ctx
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        ours.close()
        theirs.close()


# -- pe ------------------------------------------------------------------------------------------
def test_a_second_connect_ctx_is_not_permitted(backend: str) -> None:
    with rig(start=False) as r, d.Pe() as other:
        with pytest.raises(e.DocaNotPermitted):
            r.pe.connect_ctx(r.dma)  # doca_pe.h: already connected -> NOT_PERMITTED
        with pytest.raises(e.DocaNotPermitted):
            other.connect_ctx(r.dma)
        r.dma.start()
        assert r.dma.stop() == S.IDLE
