"""Run a test on a given backend: the ``backend`` fixture's machinery (``tests/conftest.py``).

The public object layer (``doca_py.Mmap``, ``doca_py.Dma`` …) reaches its backend through
one object, ``doca_py._backend.backend``, whose per-library modules are imported on first
use. :func:`bound` points that object (and ``doca_py.impl``) at another backend for one
test and restores it afterwards, so one process runs the same test on the emulated
backend and on the native one.

Without real DOCA libraries the native backend runs over ``libdoca`` (:mod:`doca_py.libdoca`): DOCA's
C libraries generated from the declaration tables and served by the emulator in this process, built for
the DOCA version the test's emulator presents, so the whole native path (declarations, trampolines,
object layer) runs against DOCA's semantics. :func:`over_fakes` (the per-call fakes of
``tests/native/fakelib``, which model only part of DOCA: a missing function skips the test naming it,
``@pytest.mark.fakes_cannot("why")`` skips a rule they do not enforce) remains for tests that want them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

import doca_py
from doca_py import _backend, libdoca
from doca_py.libdoca.build import is_build as is_libdoca_build
from doca_py.native import capi, loader
from doca_py.native.capi._decl import MissingFunction

from ..native.fakelib import comch as fake_comch
from ..native.fakelib import engines as fake_engines
from ..native.fakelib import rdma as fake_rdma
from ..native.fakelib.plugin import FakeLibs

__all__ = ["Backend", "bound", "over_fakes", "over_libdoca", "select", "MARK_CONFORMANCE", "MARK_FAKES_CANNOT"]

#: Marks a test that runs on every backend (given to everything under tests/conformance).
MARK_CONFORMANCE = "conformance"
#: ``@pytest.mark.fakes_cannot("reason")``: the fake libraries cannot honour this test.
MARK_FAKES_CANNOT = "fakes_cannot"


class Backend(str):
    """The backend a test runs on: ``"emulated"`` or ``"native"`` (it compares as that string),
    with :attr:`fakes`, the fake library directory when native means the fakes, and :attr:`libdoca`,
    the libdoca directory when native means libdoca over the emulator."""

    fakes: Path | None = None
    libdoca: Path | None = None

    def __new__(cls, name: str, fakes: Path | None = None, libdoca: Path | None = None) -> Backend:
        self = super().__new__(cls, name)
        self.fakes = fakes
        self.libdoca = libdoca
        return self

    @property
    def over_libdoca(self) -> bool:
        """Whether this is the native backend over libdoca (the emulator behind DOCA's C API)."""
        return self.libdoca is not None

    @property
    def over_fakes(self) -> bool:
        """Whether this is the native backend over the fake libraries."""
        return self.fakes is not None


@contextmanager
def bound(name: str) -> Iterator[None]:
    """Point the public object layer at backend *name* for the duration."""
    with _backend.use(name):
        yield


def _skip_missing(self: MissingFunction, *args: object) -> NoReturn:
    # BaseException (pytest's Skipped), so neither pytest.raises(DocaNotSupported) nor an
    # ``except Exception`` in the code under test turns a fake's gap into a pass.
    pytest.skip(f"native over the fakes: the fake DOCA libraries do not export {self.__name__}")


@contextmanager
def over_fakes(fakelibs: FakeLibs, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """The native backend over the fake libraries (built on first use) for the duration."""
    d = fakelibs.dir("all32")
    monkeypatch.setenv(loader.ENV_LIBDIR, str(d))
    monkeypatch.setattr(MissingFunction, "__call__", _skip_missing)
    loader.reset()
    try:
        common = capi.load_common().cdll
        # The other fakes create their ctxs and tasks through this common (see fakelib).
        fake_comch.attach(loader.load("comch"), common)
        fake_rdma.attach(loader.load("rdma"), common)
        for engine in fake_engines.ENGINES:
            fake_engines.attach(loader.load(engine), common)
        with bound("native"):
            try:
                yield Backend("native", d)
            finally:
                gc.collect()  # native handles the test dropped are finalized while the fakes are loaded
    finally:
        loader.reset()


@contextmanager
def over_libdoca(monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """The native backend over libdoca, built for the DOCA version the emulator presents now (the test's
    ``@doca_versions`` or ``--doca-version``), for the duration."""
    from doca_py.emulated import version as emu_version

    major, minor = emu_version.VERSION
    try:
        d = libdoca.cached(f"{major}.{minor}")
    except libdoca.NoCompiler as exc:
        pytest.skip(f"native over libdoca: {exc}")
    monkeypatch.setenv(loader.ENV_LIBDIR, str(d))
    loader.reset()
    try:
        with bound("native"):
            try:
                yield Backend("native", libdoca=d)
            finally:
                gc.collect()  # native handles the test dropped are finalized while its libdoca is loaded
    finally:
        loader.reset()
        emu_version.VERSION = (major, minor)  # a first attach sets it; the test's knobs own it


def libdoca_in_use() -> Path | None:
    """The libdoca directory the native backend of this process loaded (a native pass over libdoca), or
    ``None`` (a real DOCA, or nothing loaded)."""
    path = loader.loaded_path("common")
    if path is None or not Path(path).is_absolute():
        return None
    d = Path(path).parent
    return d if is_libdoca_build(d) else None


def select(name: str, request: pytest.FixtureRequest, fakelibs: FakeLibs,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """The ``backend`` fixture: run the requesting test on backend *name*.

    The backend ``doca_py`` selected at import runs every test. A conformance test also
    runs on the other one: the emulated backend is always there; native without DOCA
    libraries means libdoca over the emulator. Other tests skip the backend not in use.
    """
    if name == doca_py.impl:
        yield Backend(name, libdoca=libdoca_in_use() if name == "native" else None)
        return
    if request.node.get_closest_marker(MARK_CONFORMANCE) is None:
        pytest.skip(f"{name} backend not in use (DOCA_PY_IMPL selected {doca_py.impl}); "
                    + ("the native backend runs over the fake libraries in tests/conformance only"
                       if name == "native" else "run with DOCA_PY_IMPL=emulated"))
    if name == "emulated":
        with bound("emulated"):
            try:
                yield Backend("emulated")
            finally:
                gc.collect()
        return
    with over_libdoca(monkeypatch) as b:
        yield b


def describe() -> str:
    """Which backends the conformance tests run on, for the pytest header."""
    from doca_py.emulated import version as emu_version

    from ..native.fakelib import compiler_version

    major, minor = emu_version.VERSION
    emulated = f"emulated (DOCA {major}.{minor} rules)"
    if doca_py.impl == "native":
        return f"native (DOCA {loader.runtime_version_string()}), {emulated}"
    cc = compiler_version()
    if cc is None:
        return f"{emulated}; native: skipped, no C compiler to build libdoca"
    return f"{emulated}, native over libdoca ({cc}; tests/conformance only)"
