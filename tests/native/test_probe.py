"""``python -m doca_py.native.probe``: ELF symbol tables against the declaration tables."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from ctypes import c_int
from pathlib import Path
from typing import Any

import pytest

from doca_py.native import probe
from doca_py.native.capi import COMMON, Decl, _decl


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc = probe.main(["--json", *args])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return rc, doc


def test_fake_library_report(fake30_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _run_json(capsys, str(fake30_dir))
    assert rc == 0
    libs = doc["libraries"]
    assert len(libs) == 1  # symlinks folded into the real file
    r = libs[0]
    assert r["lib"] == "common"
    assert r["path"].endswith("libdoca_common.so.3.0.0058")
    assert sorted(r["aliases"]) == ["libdoca_common.so", "libdoca_common.so.3"]
    assert (r["version"], r["soname"]) == ("3.0.0058", "libdoca_common.so.3")
    assert r["declared"] == len(COMMON)
    assert r["present"] + len(r["missing"]) == len(COMMON)
    assert "doca_mmap_set_dmabuf_memrange" in r["missing"]
    assert "doca_pe_create" not in r["missing"] and "doca_task_get_user_data" not in r["missing"]
    assert r["undeclared"] == []  # the fake's own helpers are not doca_*


def test_text_report(fake30_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main([str(fake30_dir)]) == 0
    out = capsys.readouterr().out
    assert "libdoca_common: " in out and "version 3.0.0058, SONAME libdoca_common.so.3" in out
    assert f"declared {len(COMMON)}: " in out
    assert "- doca_devinfo_get_pci_func_type (expected: from 3.1)" in out
    assert "- doca_pe_set_notification_handle (expected: it exists only on Windows" in out


def test_a_2_6_library_lacks_mmap_advise_from_2_8(fake26_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """doca_mmap_advise.h appeared after 2.6: the probe marks its functions absent with the version that has
    them; doca_rdma_bridge.h's PD calls are in 2.6."""
    assert probe.main([str(fake26_dir)]) == 0
    out = capsys.readouterr().out
    assert "- doca_mmap_advise_create (expected: from 2.8)" in out
    assert "- doca_mmap_advise_task_invalidate_cache_alloc_init (expected: from 2.8)" in out
    assert "doca_rdma_bridge_get_dev_pd" not in out and "doca_rdma_bridge_open_dev_from_pd" not in out


def test_library_without_table_and_registered_table(
    fake30_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(fake30_dir / "libdoca_common.so.3.0.0058", tmp_path / "libdoca_notable.so.3.0.0058")
    rc, doc = _run_json(capsys, str(tmp_path))
    assert rc == 0
    (r,) = doc["libraries"]
    assert r["lib"] == "notable" and r["declared"] is None and r["exported"] > 0
    # Dropping in a table for a library is enough for the probe to compare against it.
    table = (Decl("doca_pe_create", c_int, ()), Decl("doca_notable_create", c_int, ()))
    monkeypatch.setitem(_decl._TABLES, "notable", table)
    rc, doc = _run_json(capsys, str(tmp_path))
    (r,) = doc["libraries"]
    assert (r["declared"], r["present"], r["missing"]) == (2, 1, ["doca_notable_create"])


def test_empty_dir_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"no DOCA library (libdoca_*.so*) found in: {tmp_path}" in err


@pytest.mark.parametrize("content", [b"garbage, not ELF", b"\x7fELF\x02\x01\x01" + b"\0" * 40])
def test_corrupt_file_is_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes) -> None:
    (tmp_path / "libdoca_common.so.3").write_bytes(content)
    assert probe.main([str(tmp_path)]) == 1
    cap = capsys.readouterr()
    assert "not a readable ELF shared object" in cap.out
    assert "could not be read" in cap.err
    assert "Traceback" not in cap.out + cap.err


def test_truncated_real_library(fake30_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = (fake30_dir / "libdoca_common.so.3.0.0058").read_bytes()
    (tmp_path / "libdoca_common.so.3.0.0058").write_bytes(data[:200])
    assert probe.main([str(tmp_path)]) == 1
    assert "ERROR: not a readable ELF shared object" in capsys.readouterr().out


def test_dangling_symlink_and_missing_dir(fake30_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "libdoca_rdma.so").symlink_to(tmp_path / "nowhere")
    assert probe.main([str(tmp_path), str(tmp_path / "absent"), str(fake30_dir)]) == 0
    err = capsys.readouterr().err
    assert "dangling symlink" in err and "no such file or directory" in err


def test_module_entry_point(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "doca_py.native.probe", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert "no DOCA library" in proc.stderr and "Traceback" not in proc.stderr
