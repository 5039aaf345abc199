"""The machinery of this suite: each run really goes through the backend it names."""

from __future__ import annotations

import pytest

import doca_py as d
from doca_py import _backend

from . import backends
from ..native.fakelib.plugin import FakeLibs
from .backends import Backend


def test_the_public_layer_runs_on_the_backend_under_test(backend: Backend) -> None:
    assert d.impl == backend and _backend.backend.name == backend
    with d.Pe() as pe:
        assert type(pe._h).__module__ == f"doca_py.{backend}.pe"


def test_bound_restores_the_selected_backend() -> None:
    before = (d.impl, _backend.impl, _backend.backend.name)
    other = "native" if d.impl == "emulated" else "emulated"
    with backends.bound(other):
        assert (d.impl, _backend.impl, _backend.backend.name) == (other, other, other)
        assert type(_backend.backend.pe).__name__ == "module" and _backend.backend.pe.__name__ == f"doca_py.{other}.pe"
    assert (d.impl, _backend.impl, _backend.backend.name) == before
    assert _backend.backend.pe.__name__ == f"doca_py.{before[0]}.pe"


def test_a_function_the_fakes_lack_skips_the_test_naming_it(fakelibs: FakeLibs, monkeypatch: pytest.MonkeyPatch) -> None:
    if d.impl == "native" or FakeLibs.compiler() is None:
        pytest.skip("about the native backend over the fakes (no real DOCA, a C compiler)")
    from doca_py.native._common import lib

    with backends.over_fakes(fakelibs, monkeypatch):
        # Skipped is a BaseException: pytest.raises(DocaNotSupported) or `except Exception` cannot swallow it.
        with pytest.raises(pytest.skip.Exception, match="do not export doca_mmap_set_dmabuf_memrange"):
            lib().doca_mmap_set_dmabuf_memrange(None, 0, None, 0, 0)


_SELECTED = d.impl  # the process's own backend (``bound`` changes ``doca_py.impl`` per test)


def test_the_native_half_runs_over_libdoca_without_doca(backend: Backend) -> None:
    if backend != "native":
        pytest.skip("about the native half")
    if _SELECTED == "native" and backends.libdoca_in_use() is None:
        pytest.skip("the native half runs on a real DOCA here")
    from doca_py.native import loader

    assert backend.over_libdoca and backend.libdoca is not None
    loader.load("common")
    assert str(backend.libdoca) in str(loader.loaded_path("common"))
