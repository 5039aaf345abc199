"""``python -m doca_py``: devices, representors and capabilities; the ``probe`` subcommand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doca_py.compress import CompressTaskType
from doca_py.emulated.dev import DEFAULT_DEVICES
from doca_py.tool import LIBRARIES

ROOT = Path(__file__).resolve().parents[2]
HOST, DPU = "0000:3b:00.0", "0000:03:00.0"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_EMU_DEVICES")}
    environ.update({"DOCA_PY_IMPL": "emulated", "COLUMNS": "100"}, **env)
    return subprocess.run([sys.executable, "-m", "doca_py", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=120)


def _json(*args: str, **env: str) -> dict[str, Any]:
    res = _run(*args, "--json", **env)
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_json_lists_the_emulated_registry_with_every_capability() -> None:
    doc = _json(DOCA_PY_EMU_VERSION="3.0")
    assert doc["backend"] == "emulated"
    assert doc["doca_version"].startswith("3.0")
    devices = {d["pci_addr"]: d for d in doc["devices"]}
    assert list(devices) == [spec.pci_addr for spec in DEFAULT_DEVICES] == [HOST, DPU]
    for spec in DEFAULT_DEVICES:
        dev = devices[spec.pci_addr]
        assert (dev["ibdev_name"], dev["iface_name"], dev["vhca_id"]) == (spec.ibdev_name, spec.iface_name,
                                                                          spec.vhca_id)
        assert dev["mac_addr"] == ":".join(f"{b:02x}" for b in spec.mac_addr)
        assert [r["pci_addr"] for r in dev["representors"]] == [r.pci_addr for r in spec.reps]
        assert dev["errors"] == {}
        assert list(dev["caps"]) == list(LIBRARIES)
        caps = dev["caps"]
        assert caps["dma"]["task_memcpy_is_supported"] is True
        assert caps["dma"]["task_memcpy_get_max_buf_size"] > 0
        assert caps["dma"]["task_memcpy_get_max_buf_list_len"] >= 1
        for name in ("create", "recover", "update", "galois_mul"):
            assert caps["ec"][f"task_{name}_is_supported"] is True
        assert caps["ec"]["get_max_block_size"] > 0 and caps["ec"]["get_max_buf_list_len"] >= 1
        for task in CompressTaskType:
            assert caps["compress"][f"task_{task.value}_is_supported"] is True
            assert caps["compress"][f"task_{task.value}_get_max_buf_size"] > 0
        rdma = caps["rdma"]
        assert (rdma["transport_rc_is_supported"], rdma["transport_dc_is_supported"]) == (True, False)
        assert rdma["get_max_message_size"] > 0 and rdma["get_max_send_queue_size"] > 0
        assert rdma["get_max_recv_queue_size"] > 0
        assert caps["mmap"] == {"is_export_pci_supported": True, "is_create_from_export_pci_supported": True}
        assert rdma["task_remote_net_sync_event_notify_set_is_supported"] is True
        se = caps["sync_event"]
        assert se["is_export_to_remote_net_supported"] is True and se["task_wait_eq_is_supported"] is True
        assert se["is_export_to_remote_pci_supported"] is True  # rides on the device's mmap PCI export
        assert caps["comch"]["get_max_msg_size"] > 0 and caps["comch"]["consumer_is_supported"] is True
    # The DPU lists the host PF's representor; comch servers live on the DPU, clients on the host.
    (rep,) = devices[DPU]["representors"]
    assert rep == {"pci_addr": HOST, "iface_name": "pf0hpf", "vuid": "MT0000000000pf0", "pci_func_type": "PF",
                   "is_hotplug": False, "vhca_id": 2}
    assert devices[HOST]["caps"]["comch"]["server_is_supported"] is False
    assert devices[HOST]["caps"]["comch"]["client_is_supported"] is True
    assert devices[DPU]["caps"]["comch"]["server_is_supported"] is True
    assert devices[DPU]["caps"]["comch"]["client_is_supported"] is False
    # DOCA Mmap Advise runs on the BlueField's Arm side only.
    assert devices[DPU]["caps"]["mmap_advise"]["task_cache_invalidate_is_supported"] is True
    assert devices[HOST]["caps"]["mmap_advise"]["task_cache_invalidate_is_supported"] is False


def test_text_output_has_the_header_the_device_table_and_the_caps() -> None:
    res = _run()  # no command: devices
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "backend: emulated"
    assert lines[1].startswith("DOCA version: 3.")
    table = "\n".join(lines[:10])
    assert "PCI address" in table and "ibdev" in table and "interface" in table
    assert any(line.split()[:3] == [HOST, "mlx5_0", "ens1f0np0"] for line in lines)
    assert any(line.split()[:3] == [DPU, "mlx5_2", "p0"] for line in lines)
    assert any(line.split()[:4] == ["rep", HOST, "PF", "pf0hpf"] for line in lines)
    assert f"{DPU} (mlx5_2, p0)" in res.stdout
    for lib in LIBRARIES:
        assert f"\n  {lib}\n" in res.stdout
    assert "task_memcpy_get_max_buf_size" in res.stdout and "(2 GiB)" in res.stdout


def test_list_and_device_filter() -> None:
    doc = _json("devices", "--list", "-d", "mlx5_2")
    (dev,) = doc["devices"]
    assert dev["pci_addr"] == DPU and "caps" not in dev
    assert [d["pci_addr"] for d in _json("-d", "3b:00.0", "--list")["devices"]] == [HOST]
    assert [d["pci_addr"] for d in _json("-d", "ens1f0np0", "--list")["devices"]] == [HOST]
    res = _run("-d", "mlx5_999")
    assert res.returncode == 1 and "no device 'mlx5_999'" in res.stderr


def test_a_failing_capability_is_reported_not_fatal() -> None:
    # A device without the mmap export capabilities and a representor filter the emulator refuses.
    devices = json.dumps([{"pci_addr": "0000:81:00.0", "ibdev_name": "mlx5_7", "iface_name": "eth7",
                           "caps": []}])
    doc = _json(DOCA_PY_EMU_DEVICES=devices)
    (dev,) = doc["devices"]
    assert dev["caps"]["mmap"] == {"is_export_pci_supported": False, "is_create_from_export_pci_supported": False}
    assert dev["caps"]["dev"]["rep_is_filter_all_supported"] is False
    assert "DOCA_ERROR_NOT_SUPPORTED" in dev["errors"]["representors"]
    assert dev["representors"] == []
    text = _run(DOCA_PY_EMU_DEVICES=devices)
    assert text.returncode == 0 and "representors: DOCA_ERROR_NOT_SUPPORTED" in text.stdout


def test_probe_on_an_empty_directory(tmp_path: Path) -> None:
    res = _run("probe", "--json", str(tmp_path))
    assert res.returncode == 1
    assert json.loads(res.stdout) == {"libraries": [], "notes": []}
    assert f"no DOCA library (libdoca_*.so*) found in: {tmp_path}" in res.stderr
    # The same as the probe's own module, which keeps working.
    env = dict(os.environ, DOCA_PY_IMPL="emulated")
    own = subprocess.run([sys.executable, "-m", "doca_py.native.probe", "--json", str(tmp_path)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert (own.returncode, own.stdout, own.stderr) == (res.returncode, res.stdout, res.stderr)


def test_help_names_the_program_and_the_commands() -> None:
    res = _run("--help")
    assert res.returncode == 0
    assert res.stdout.startswith("usage: python -m doca_py ")
    assert "devices" in res.stdout and "probe" in res.stdout
    res = _run("probe", "-h")
    assert res.returncode == 0 and res.stdout.startswith("usage: python -m doca_py probe ")
    res = _run("--version")
    assert res.returncode == 0 and res.stdout.startswith("doca_py ")
    res = _run("devices", "--bogus")
    assert res.returncode == 2 and "unrecognized arguments: --bogus" in res.stderr


def test_in_process_main_and_report(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import doca_py
    from doca_py import tool

    assert tool.main(["--list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == doca_py.impl and doc["doca_version"] == doca_py.version_runtime()
    assert tool.format_text(tool.report(caps=False)).startswith(f"backend: {doca_py.impl}\n")

    def broken() -> list[object]:
        raise doca_py.errors.DocaDriver("no driver")

    monkeypatch.setattr(tool, "devinfo_create_list", broken)
    assert tool.main([]) == 1
    assert "cannot list the devices: DOCA_ERROR_DRIVER: no driver" in capsys.readouterr().err
