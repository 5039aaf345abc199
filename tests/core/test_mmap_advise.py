"""The emulated ``doca_mmap_advise``: what only the emulator decides (its devices' capability, the DOCA
version it presents) and the buffer checks the conformance tests cannot make on the fakes. The rest of
its behaviour is in ``tests/conformance/test_mmap_advise.py`` (both backends)."""

from __future__ import annotations

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import CtxState as S

from .helpers import DPU_PCI, HOST_PCI, local_mmap

pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="the emulated backend's devices and versions")


def _noop(*args: object) -> None:
    pass


def test_a_device_without_the_capability_cannot_start_the_task() -> None:
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev, d.Pe() as pe:
        assert not d.MmapAdvise.cap_task_cache_invalidate_is_supported(dev.as_devinfo())
        adv = d.MmapAdvise(dev)
        pe.connect_ctx(adv)
        adv.task_invalidate_cache_set_conf(_noop, _noop, 1)
        with pytest.raises(e.DocaNotSupported, match="cache invalidate"):
            adv.start()
        assert adv.get_state() == S.IDLE
        adv.close()


def test_doca_2_6_has_no_mmap_advise(monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated import version as emu_version

    monkeypatch.setattr(emu_version, "VERSION", (2, 6))
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        assert not d.MmapAdvise.cap_task_cache_invalidate_is_supported(dev.as_devinfo())
        with pytest.raises(e.DocaNotSupported, match=r"DOCA 2\.6 .* from DOCA 2\.8"):
            d.MmapAdvise(dev)


def _started(dev: d.Dev, pe: d.Pe, done: list[str]) -> d.MmapAdvise:
    """A running MmapAdvise on *dev* whose completions append "ok" or "err" to *done*."""
    adv = d.MmapAdvise(dev)
    pe.connect_ctx(adv)
    adv.task_invalidate_cache_set_conf(lambda *a: done.append("ok"), lambda *a: done.append("err"), 1)
    adv.start()
    return adv


def test_a_released_buffer_is_refused() -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(4) as inv, \
            local_mmap(dev, 4096) as mm:
        done: list[str] = []
        adv = _started(dev, pe, done)
        buf = inv.buf_get_by_data(mm, mm.get_memrange()[0], 64)
        task = adv.task_invalidate_cache_alloc_init(buf)
        buf.dec_refcount()
        with pytest.raises(e.DocaInvalidValue, match="not released"):
            task.try_submit()  # validated first: the caller keeps the task
        task.submit()
        while not done:
            pe.progress()
        assert done == ["err"] and task.get_status() == d.ErrorCode.INVALID_VALUE
        task.free()
        while adv.get_state() != S.IDLE:
            pe.progress()
        adv.close()


def test_an_imported_map_is_advised_until_its_exporter_revokes_it() -> None:
    """A buffer of a map imported with ``create_from_export`` (the host's memory on the DPU) completes while
    the export is live; once the exporter stops its map the access check fails: NOT_PERMITTED."""
    with d.Dev.open_by_pci_addr(HOST_PCI) as host, d.Dev.open_by_pci_addr(DPU_PCI) as dpu, d.Pe() as pe, \
            d.BufInventory(4) as inv:
        exported = local_mmap(host, 4096, perms=d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
        imported = d.Mmap.create_from_export(exported.export_pci(host), dpu)
        done: list[str] = []
        adv = _started(dpu, pe, done)
        buf = inv.buf_get_by_data(imported, imported.get_memrange()[0], 64)
        task = adv.task_invalidate_cache_alloc_init(buf)
        task.submit()
        while not done:
            pe.progress()
        assert done == ["ok"]
        exported.stop()  # revokes the import
        task.submit()
        while len(done) < 2:
            pe.progress()
        assert done[1] == "err" and task.get_status() == d.ErrorCode.NOT_PERMITTED
        task.free()
        while adv.get_state() != S.IDLE:
            pe.progress()
        buf.dec_refcount()
        adv.close()
        imported.close()
        exported.close()
