"""The one fixture that builds the fake DOCA libraries: ``fakelibs`` (session-scoped).

Imported into ``tests/conftest.py`` (which makes it a fixture of the whole suite) so both
``tests/native`` and ``tests/conformance`` use it. Each *variant* is a directory laid
out like a DOCA install (a fake common plus the fakes of other libraries), compiled
the first time a test asks for it and then shared by the session (one copy per xdist
worker, under ``tmp_path_factory``). Without a C compiler, asking for a variant skips
the test with that reason; a compile error fails it (the fakes are ours).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import build_fake_common, compiler_version, find_compiler
from .comch import build_fake_comch
from .engines import build_fake_engines
from .rdma import build_fake_rdma

__all__ = ["VARIANTS", "FakeLibs", "fakelibs", "NO_COMPILER"]

NO_COMPILER = "no C compiler (gcc/cc/$CC) to build the fake DOCA libraries"

Build = Callable[[Path], object]


def _all_3x(d: Path) -> None:
    build_fake_comch(d)
    build_fake_rdma(d)
    build_fake_engines(d)


# name: (libdoca_common version, common options, the other fakes to build beside it)
VARIANTS: dict[str, tuple[str, dict[str, bool], Build | None]] = {
    # DOCA 3.0.0058-like common (no buf reuse functions)
    "common30": ("3.0.0058", {}, None),
    # DOCA 2.6.0058-like common (``double *`` active rate)
    "common26": ("2.6.0058", {}, None),
    # DOCA 3.2-like common exporting ``reuse_by_data`` and ``reuse_by_args`` only
    "common32": ("3.2.1025", {"reuse_args": True, "reuse_data": True}, None),
    # comch with immediate data; 2.8 comch without; 2.6's libdoca_cc
    "comch30": ("3.0.0058", {}, build_fake_comch),
    "comch28": ("2.8.0081", {}, lambda d: build_fake_comch(d, imm_api=False)),
    "cc26": ("2.6.0058", {}, lambda d: build_fake_comch(d, cc=True)),
    # dma, erasure_coding and compress with the split (3.x) or legacy (2.6) LZ4 API
    "engines30": ("3.0.0058", {}, lambda d: build_fake_engines(d, lz4="split")),
    "engines26": ("2.6.0058", {}, lambda d: build_fake_engines(d, lz4="legacy")),
    # rdma with connection objects (3.x) or without (2.6)
    "rdma30": ("3.0.0058", {}, lambda d: build_fake_rdma(d, conn_api=True)),
    "rdma26": ("2.6.0058", {}, lambda d: build_fake_rdma(d, conn_api=False)),
    # every fake, DOCA 3.2-like common and 3.x ABIs: what the conformance suite's native backend loads
    "all32": ("3.2.1025", {"reuse_args": True, "reuse_data": True}, _all_3x),
}


@dataclass
class FakeLibs:
    """Builds and caches the fake library directories of one test session."""

    factory: pytest.TempPathFactory
    built: dict[str, Path] = field(default_factory=dict)

    @staticmethod
    def compiler() -> str | None:
        """What builds the fakes (``gcc (Debian 12.2.0-14) 12.2.0``), or ``None`` without one."""
        return compiler_version()

    def dir(self, variant: str) -> Path:
        """The directory of *variant* (see :data:`VARIANTS`), built on first use."""
        if variant not in self.built:
            if find_compiler() is None:
                pytest.skip(NO_COMPILER)
            version, options, extra = VARIANTS[variant]
            d = self.factory.mktemp(variant)
            build_fake_common(d, version, **options)
            if extra is not None:
                extra(d)
            self.built[variant] = d
        return self.built[variant]


@pytest.fixture(scope="session")
def fakelibs(tmp_path_factory: pytest.TempPathFactory) -> FakeLibs:
    """The fake DOCA library builds (see :class:`FakeLibs`)."""
    return FakeLibs(tmp_path_factory)
