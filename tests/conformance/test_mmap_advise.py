"""Conformance: doca_mmap_advise and its cache invalidate task (``doca_mmap_advise.h``, DOCA 2.8+)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import CtxState as S

from ..core.helpers import DPU_PCI, HOST_PCI, local_mmap


@dataclass
class Advise:
    dev: d.Dev
    pe: d.Pe
    inv: d.BufInventory
    mm: d.Mmap
    adv: d.MmapAdvise
    done: list[tuple[str, d.MmapAdviseTaskInvalidateCache, Any, Any]] = field(default_factory=list)

    def drain(self, n: int) -> None:
        while len(self.done) < n:
            if not self.pe.progress():
                self.pe.wait(5.0)


@contextmanager
def advise(num_tasks: int = 2, start: bool = True) -> Iterator[Advise]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(8) as inv, \
            local_mmap(dev, 1 << 14) as mm:
        adv = d.MmapAdvise(dev, user_data="ctx")
        pe.connect_ctx(adv)
        a = Advise(dev, pe, inv, mm, adv)
        adv.task_invalidate_cache_set_conf(lambda t, u, c: a.done.append(("ok", t, u, c)),
                                           lambda t, u, c: a.done.append(("err", t, u, c)), num_tasks)
        if start:
            adv.start()
        yield a


@pytest.fixture(autouse=True)
def _from_doca_28(request: pytest.FixtureRequest) -> None:
    """The header exists from DOCA 2.8: a session presenting 2.6 runs only the test of its absence."""
    from doca_py.emulated import version

    if version.VERSION < (2, 8) and getattr(request.node, "originalname", "") != "test_doca_26_has_no_mmap_advise":
        pytest.skip("doca_mmap_advise.h exists from DOCA 2.8 (the session presents 2.6)")


def test_doca_26_has_no_mmap_advise(backend: str) -> None:
    from doca_py.emulated import version

    if version.VERSION >= (2, 8):
        pytest.skip("the session presents DOCA 2.8 or later (run with --doca-version 2.6)")
    infos = {i.get_pci_addr_str(): i for i in d.devinfo_create_list()}
    assert not d.MmapAdvise.cap_task_cache_invalidate_is_supported(infos["0000:" + DPU_PCI])
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, pytest.raises(e.DocaNotSupported):
        d.MmapAdvise(dev)


def test_capability_is_the_bluefield_side_s(backend: str) -> None:
    infos = {i.get_pci_addr_str(): i for i in d.devinfo_create_list()}
    assert d.MmapAdvise.cap_task_cache_invalidate_is_supported(infos["0000:" + DPU_PCI])
    assert not d.MmapAdvise.cap_task_cache_invalidate_is_supported(infos["0000:" + HOST_PCI])
    size = d.MmapAdvise.task_cache_invalidate_get_max_buf_size(infos["0000:" + DPU_PCI])
    assert isinstance(size, int) and size >= 1 << 20
    with pytest.raises(e.DocaTypeError, match="devinfo"):
        d.MmapAdvise.cap_task_cache_invalidate_is_supported("03:00.0")  # type: ignore[arg-type]


def test_invalidate_completes_and_leaves_the_bytes(backend: str) -> None:
    with advise(start=False) as a:
        assert a.adv.get_state() == S.IDLE
        base, _ = a.mm.get_memrange()
        a.mm.buffer[:256] = bytes(range(256))
        buf = a.inv.buf_get_by_data(a.mm, base, 256)
        with pytest.raises(e.DocaBadState):
            a.adv.task_invalidate_cache_alloc_init(buf)  # tasks only from a running ctx
        assert a.adv.start() == S.RUNNING
        with pytest.raises(e.DocaNotPermitted):  # doca_mmap_advise.h: set_conf of a ctx not idle
            a.adv.task_invalidate_cache_set_conf(lambda *x: None, lambda *x: None, 1)
        task = a.adv.task_invalidate_cache_alloc_init(buf, user_data=("u", 1))
        assert task.get_buf() is buf
        task.submit()
        a.drain(1)
        assert a.done[0] == ("ok", task, ("u", 1), "ctx")
        assert task.get_status() == d.ErrorCode.SUCCESS
        assert bytes(a.mm.buffer[:256]) == bytes(range(256))  # advice, not a write
        # Re-aimed between runs, at an empty destination-style buffer.
        other = a.inv.buf_get_by_addr(a.mm, base + 4096, 4096)
        task.set_buf(other)
        assert task.get_buf() is other
        task.submit()
        a.drain(2)
        assert a.done[1][0] == "ok"
        second = a.adv.task_invalidate_cache_alloc_init(buf)
        with pytest.raises(e.DocaNoMemory):
            a.adv.task_invalidate_cache_alloc_init(buf)
        for t in (task, second):
            t.free()
        assert a.adv.stop() == S.IDLE
        for b in (buf, other):
            b.dec_refcount()


def test_a_map_without_the_ctx_device_is_not_permitted(backend: str) -> None:
    with advise() as a, d.Dev.open_by_pci_addr(HOST_PCI) as host, local_mmap(host, 4096) as foreign:
        buf = a.inv.buf_get_by_data(foreign, foreign.get_memrange()[0], 64)
        task = a.adv.task_invalidate_cache_alloc_init(buf)
        task.submit()
        a.drain(1)
        assert a.done[0][0] == "err" and task.get_status() == d.ErrorCode.NOT_PERMITTED
        assert a.adv.get_state() == S.STOPPING  # a failed task stops its ctx
        task.free()
        while a.adv.get_state() != S.IDLE:
            a.pe.progress()
        buf.dec_refcount()


def test_a_buffer_list_is_invalid(backend: str) -> None:
    with advise() as a:
        base, _ = a.mm.get_memrange()
        head, tail = a.inv.buf_get_by_data(a.mm, base, 64), a.inv.buf_get_by_data(a.mm, base + 64, 64)
        head.chain_list(tail)
        task = a.adv.task_invalidate_cache_alloc_init(head)
        task.submit()
        a.drain(1)
        assert a.done[0][0] == "err" and task.get_status() == d.ErrorCode.INVALID_VALUE
        task.free()
        while a.adv.get_state() != S.IDLE:
            a.pe.progress()
        head.dec_refcount()


def test_alloc_init_takes_a_buf(backend: str) -> None:
    with advise() as a:
        with pytest.raises(e.DocaTypeError, match="MmapAdvise.task_invalidate_cache_alloc_init"):
            a.adv.task_invalidate_cache_alloc_init(b"bytes")  # type: ignore[arg-type]


def test_from_handle_is_a_borrowed_view(backend: str) -> None:
    with advise(start=False) as a:
        h = a.adv.handle
        assert (isinstance(h, int) and h != 0) if backend == "native" else h is a.adv._h
        view = d.MmapAdvise.from_handle(a.dev, h, user_data="view")
        assert view.borrowed and view.user_data == "view"
        a.adv.start()
        assert view.get_state() == S.RUNNING  # one DOCA ctx, two wrappers
        view.close()
        assert a.adv.get_state() == S.RUNNING  # closing the view neither stopped nor destroyed it
