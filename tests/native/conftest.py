"""Fixtures for the native-layer tests: fake DOCA libraries compiled at test time.

The fakes (``tests/native/fakelib``) are built by the session fixture ``fakelibs``
(one directory per variant and xdist worker), and the loader cache is reset around
every test so no other test sees a fake DOCA.
"""

from __future__ import annotations

import ctypes.util
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from doca_py.native import capi, loader
from doca_py.native.capi import BoundLib

from .fakelib import FAKE_DECLS
from .fakelib.plugin import FakeLibs

UseLibdir = Callable[[Path], None]


@pytest.fixture
def no_system_doca() -> None:
    """Skip where a system-wide DOCA is installed: the loader would find it."""
    if ctypes.util.find_library("doca_common") or any(
        (d / "libdoca_common.so").exists() for d in loader.search_dirs()[-2:]
    ):
        pytest.skip("a system-wide DOCA is installed; the loader would find it")


@pytest.fixture
def fake30_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 3.0.0058-like libdoca_common (no buf reuse functions)."""
    return fakelibs.dir("common30")


@pytest.fixture
def fake26_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 2.6.0058-like libdoca_common (``double *`` active rate)."""
    return fakelibs.dir("common26")


@pytest.fixture
def fake32_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 3.2-like libdoca_common exporting ``reuse_by_data`` and ``reuse_by_args`` only."""
    return fakelibs.dir("common32")


@pytest.fixture(autouse=True)
def _fresh_loader() -> Iterator[None]:
    loader.reset()
    yield
    loader.reset()


@pytest.fixture
def use_libdir(monkeypatch: pytest.MonkeyPatch) -> UseLibdir:
    """Point ``DOCA_PY_LIBDIR`` at a directory (for this test only) and reset the loader."""

    def use(directory: Path) -> None:
        monkeypatch.setenv(loader.ENV_LIBDIR, str(directory))
        loader.reset()

    return use


@pytest.fixture
def lib30(fake30_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    """The real libdoca_common declarations bound on the 3.0 fake."""
    use_libdir(fake30_dir)
    return capi.load_common()


@pytest.fixture
def fake30(lib30: BoundLib) -> BoundLib:
    """The fake-only helpers (ctx/task creation) of the 3.0 fake."""
    return capi.bind(lib30.cdll, FAKE_DECLS, lib30.version, libname="common")
