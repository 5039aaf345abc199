"""Conformance: the device half of ``doca_rdma_bridge.h`` (DOCA 2.6 and 3.x): a device's ibverbs
protection domain and a device opened on one. The emulated backend has no ibverbs devices: both calls
are ``DOCA_ERROR_NOT_SUPPORTED`` there, saying so."""

from __future__ import annotations

import ctypes

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.native import loader

from ..core.helpers import DPU_PCI
from ..native.fakelib.plugin import FakeLibs
from .backends import Backend, over_fakes


def _over_libdoca(backend: Backend) -> bool:
    """Native over libdoca: the conformance pass's second backend, or the backend of a native pass whose
    DOCA_PY_LIBDIR is libdoca (the emulator serves this process's DOCA calls)."""
    from doca_py.libdoca import serve

    return backend.over_libdoca or (backend == "native" and serve.attached())


def test_a_device_s_pd(backend: Backend) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        if backend == "emulated":
            with pytest.raises(e.DocaNotSupported, match="doca_rdma_bridge_get_dev_pd.*no ibverbs protection domain"):
                dev.get_pd()
            return
        if _over_libdoca(backend):  # the emulator behind DOCA's C API: the same refusal, as a code
            with pytest.raises(e.DocaNotSupported, match="doca_rdma_bridge_get_dev_pd"):
                dev.get_pd()
            return
        pd = dev.get_pd()
        assert isinstance(pd, int) and pd > 0
        assert dev.get_pd() == pd  # the device's one PD
        # DOCA refuses to open a device on a PD it handed out itself (doca_rdma_bridge.h).
        with pytest.raises(e.DocaInvalidValue, match="doca_rdma_bridge_open_dev_from_pd"):
            d.Dev.open_from_pd(pd)


def test_open_from_an_application_pd(backend: Backend) -> None:
    if backend == "emulated":
        with pytest.raises(e.DocaNotSupported, match="doca_rdma_bridge_open_dev_from_pd.*no ibverbs"):
            d.Dev.open_from_pd(0x1000)
        return
    if not _over_libdoca(backend):
        pytest.skip("a real ibv_pd needs libibverbs (test_open_from_an_application_pd_over_the_fakes has one)")
    with pytest.raises(e.DocaNotSupported, match="doca_rdma_bridge_open_dev_from_pd"):
        d.Dev.open_from_pd(0x1000)


def test_open_from_an_application_pd_over_the_fakes(fakelibs: FakeLibs, monkeypatch: pytest.MonkeyPatch) -> None:
    if d.impl == "native" or FakeLibs.compiler() is None:
        pytest.skip("the fakes allocate an ibv_pd (no real DOCA, a C compiler)")
    with over_fakes(fakelibs, monkeypatch):
        _open_from_a_fake_pd()


def _open_from_a_fake_pd() -> None:
    common = loader.load("common")
    alloc, dealloc = common["fake_ibv_alloc_pd"], common["fake_ibv_dealloc_pd"]
    alloc.restype, alloc.argtypes = ctypes.c_void_p, []
    dealloc.restype, dealloc.argtypes = None, [ctypes.c_void_p]
    pd = alloc()
    try:
        dev = d.Dev.open_from_pd(pd)
        assert dev.get_pd() == pd  # the device shares the application's PD
        assert repr(dev) == f"<Dev open pd={pd:#x}>"
        with pytest.raises(e.DocaNotSupported, match="Dev.as_devinfo: a device opened on an ibverbs PD"):
            dev.as_devinfo()
        with pytest.raises(e.DocaNotSupported, match="Dev.rep_create_list"):
            dev.rep_create_list()
        dev.close()
    finally:
        dealloc(pd)


@pytest.mark.parametrize("pd", [0, -1, 1 << 64])
def test_pd_must_be_an_address(backend: Backend, pd: int) -> None:
    with pytest.raises(e.DocaInvalidValue, match="Dev.open_from_pd: pd must be the non-zero address"):
        d.Dev.open_from_pd(pd)


@pytest.mark.parametrize("pd", [True, 1.0, "0x1000", None])
def test_pd_must_be_an_int(backend: Backend, pd: object) -> None:
    with pytest.raises(e.DocaTypeError, match="Dev.open_from_pd: pd must be int"):
        d.Dev.open_from_pd(pd)  # type: ignore[arg-type]
