"""Shared fixtures: the conformance suite runs once per backend available."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import doca_py
from doca_py import _impl


@pytest.fixture(params=["emulated", "native"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The backend a conformance test runs on; the other one skips with a reason."""
    if request.param != doca_py.impl:
        pytest.skip(f"{request.param} backend not in use (DOCA_PY_IMPL selected {doca_py.impl}); "
                    f"{'no DOCA libraries on this machine' if request.param == 'native' else 'run with DOCA_PY_IMPL=emulated'}")
    yield request.param
