"""Conformance: doca_dev on every available backend."""

from __future__ import annotations

import ipaddress

import pytest

import doca_py as d
from doca_py import errors as e


def test_enumeration_reports_pci_ibdev_iface(backend: str) -> None:
    infos = d.devinfo_create_list()
    assert infos
    for info in infos:
        pci = info.get_pci_addr_str()
        assert len(pci) == 12 and pci[4] == ":" and pci[10] == "."
        assert info.is_equal_pci_addr(pci)
        assert info.is_equal_pci_addr(pci[5:])  # the short BDF form
        assert info.get_ibdev_name()
        assert isinstance(info.get_ipv4_addr(), ipaddress.IPv4Address)
        assert len(info.get_mac_addr()) == 6


def test_open_by_each_name_finds_the_same_device(backend: str) -> None:
    info = d.devinfo_create_list()[0]
    for dev in (d.Dev.open_by_pci_addr(info.get_pci_addr_str()),
                d.Dev.open_by_ibdev_name(info.get_ibdev_name()),
                d.Dev.open_by_iface_name(info.get_iface_name())):
        with dev:
            assert dev.as_devinfo().get_pci_addr_str() == info.get_pci_addr_str()


def test_unknown_device_is_not_found_with_the_list(backend: str) -> None:
    with pytest.raises(e.DocaNotFound, match="devices:"):
        d.Dev.open_by_ibdev_name("mlx5_999")
    with pytest.raises(e.DocaInvalidValue):
        d.devinfo_create_list()[0].is_equal_pci_addr("not-a-bdf")


def test_dpu_lists_host_pf_representor_with_net_filter(backend: str) -> None:
    dpus = [i for i in d.devinfo_create_list() if i.rep_cap_is_filter_net_supported()]
    if not dpus:
        pytest.skip("no device here can list representors")
    devs = [i.open() for i in dpus]
    try:
        dev = next(dv for dv in devs if dv.rep_create_list(d.DevinfoRepFilter.NET))
    except StopIteration:
        pytest.skip("no device here has representors")
    finally:
        for other in devs:
            if other is not locals().get("dev"):
                other.close()
    with dev:
        reps = dev.rep_create_list(d.DevinfoRepFilter.NET)
        rep = dev.open_rep_by_pci_addr(reps[0].get_pci_addr_str())
        assert rep.get_pci_addr_str() == reps[0].get_pci_addr_str()
        assert reps[0].get_pci_func_type() in tuple(d.PciFuncType)
        with pytest.raises(e.DocaNotFound):
            dev.open_rep_by_pci_addr("ff:1f.7")
    assert rep.closed  # closing the device closed its representor


def test_closed_device_refuses_use(backend: str) -> None:
    dev = d.devinfo_create_list()[0].open()
    dev.close()
    dev.close()  # idempotent
    with pytest.raises(d.DocaUsageError):
        dev.rep_create_list()


def test_emulated_registry_is_configurable(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    over_libdoca = bool(getattr(backend, "over_libdoca", False))  # libdoca's devices are the emulator's too
    if backend != "emulated" and not over_libdoca:
        pytest.skip("the device registry is an emulated-backend feature (a real DOCA lists its own devices)")
    from doca_py.emulated import dev as emu

    monkeypatch.setenv("DOCA_PY_EMU_DEVICES",
                       '[{"pci_addr": "0000:af:00.1", "ibdev_name": "mlx5_9", "iface_name": "eth9"}]')
    emu.configure(None)
    try:
        assert [i.get_ibdev_name() for i in d.devinfo_create_list()] == ["mlx5_9"]
        monkeypatch.setenv("DOCA_PY_EMU_DEVICES", '{"not": "a list"}')
        emu.configure(None)
        with pytest.raises(e.DocaInvalidValue, match="doca_devinfo_create_list" if over_libdoca else "JSON list"):
            d.devinfo_create_list()
    finally:
        monkeypatch.delenv("DOCA_PY_EMU_DEVICES")
        emu.configure(None)
