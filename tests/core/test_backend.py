"""doca_py._backend: backend selection, the typed binding, and the contract kept out of the public API."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import sysconfig

import pytest

import doca_py
from doca_py import _backend

PUBLIC_MODULES = ["doca_py", "doca_py.dev", "doca_py.mmap", "doca_py.buf", "doca_py.pe", "doca_py.ctx", "doca_py.dma",
                  "doca_py.ec", "doca_py.compress", "doca_py.comch", "doca_py.rdma", "doca_py.version"]


def test_select_resolves_and_refuses() -> None:
    assert _backend.select("emulated") == "emulated"
    assert _backend.select(" Emulated ") == "emulated"
    with pytest.raises(ImportError, match="is not one of"):
        _backend.select("cuda")
    with pytest.raises(ValueError):
        _backend.Backend("cuda")


def test_backend_attributes_are_the_selected_library_modules() -> None:
    b = _backend.backend
    assert b.name == _backend.impl == doca_py.impl
    for lib in ("dev", "mmap", "buf", "pe", "version", "dma", "ec", "compress", "rdma", "comch"):
        mod = getattr(b, lib)
        assert mod is importlib.import_module(f"doca_py.{doca_py.impl}.{lib}")
        assert getattr(b, lib) is mod  # bound once


_FT313 = bool(sysconfig.get_config_var("Py_GIL_DISABLED")) and sys.version_info[:2] == (3, 13)


def test_library_modules_are_imported_on_first_use() -> None:
    """Except on free-threaded 3.13, where ``import doca_py`` imports them all (next test)."""
    code = ("import sys, doca_py\n"
            "from doca_py import _backend\n"
            f"assert ('doca_py.emulated.comch' in sys.modules) is {_FT313}\n"
            "_backend.backend.comch.cap_get_max_msg_size\n"
            "assert 'doca_py.emulated.comch' in sys.modules\n")
    env = {**os.environ, "DOCA_PY_IMPL": "emulated"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(not _FT313, reason="free-threaded CPython 3.13 only")
def test_free_threaded_313_library_code_is_immortal_once_a_thread_started() -> None:
    """3.13t makes the code objects that exist when the first thread starts immortal, not those of modules
    imported later: workers running those write one reference count on every call. ``import doca_py``
    imports every library module, so a thread started after it runs immortal code."""
    code = ("import sys, threading, doca_py\n"
            "threading.Thread(target=lambda: None).start()\n"
            "from doca_py.emulated import ctx, dma, rdma, comch\n"
            "from doca_py.emulated.rdma import tasks\n"
            "for f in (ctx.EmuTask.submit, ctx._launch_local, dma.EmuDmaTaskMemcpy._execute,\n"
            "          tasks.EmuRdmaTaskSend._start):\n"
            "    assert sys.getrefcount(f.__code__) > 1 << 30, f\n")
    env = {**os.environ, "DOCA_PY_IMPL": "emulated", "PYTHON_GIL": "0"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_no_backend_protocol_in_a_public_all(name: str) -> None:
    mod = importlib.import_module(name)
    leaked = [n for n in mod.__all__ if n.endswith(("Handle", "Backend"))]
    assert leaked == []


def test_int_handles_need_the_native_backend() -> None:
    b = _backend.Backend("emulated")
    with pytest.raises(doca_py.DocaUsageError, match="native"):
        b.borrow_mmap(0x1000)
