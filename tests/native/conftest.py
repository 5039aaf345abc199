"""Fixtures for the native-layer tests: fake DOCA libraries compiled with gcc at test time.

Each fake lives in its own ``tmp_path_factory`` directory (one per xdist worker), and
the loader cache is reset around every test so no other test sees a fake DOCA.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from doca_py.native import capi, loader
from doca_py.native._testlib import FAKE_DECLS, build_fake_common, find_compiler
from doca_py.native.capi import BoundLib

UseLibdir = Callable[[Path], None]


def _build(factory: pytest.TempPathFactory, name: str, version: str, **kw: bool) -> Path:
    if find_compiler() is None:
        pytest.skip("no C compiler (gcc/cc/$CC) to build the fake libdoca_common")
    d = factory.mktemp(name)
    build_fake_common(d, version, **kw)  # a compile error fails the test: the fake is ours
    return d


@pytest.fixture(scope="session")
def fake30_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DOCA 3.0.0058-like libdoca_common (no buf reuse functions)."""
    return _build(tmp_path_factory, "fake30", "3.0.0058")


@pytest.fixture(scope="session")
def fake26_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DOCA 2.6.0058-like libdoca_common (``double *`` active rate)."""
    return _build(tmp_path_factory, "fake26", "2.6.0058")


@pytest.fixture(scope="session")
def fake32_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DOCA 3.2-like libdoca_common exporting ``reuse_by_data`` and ``reuse_by_args`` only."""
    return _build(tmp_path_factory, "fake32", "3.2.1025", reuse_args=True, reuse_data=True)


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
