"""Fixtures of the comch tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import doca_py as d


@pytest.fixture(params=["socket", "rings"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The connection's transport: its Unix socket (the default) or the opt-in same-host shared-memory
    rings of the emulated backend (``DOCA_PY_COMCH_SHM``, for this process and its children)."""
    if request.param == "socket":
        yield "socket"
        return
    if d.impl != "emulated":
        pytest.skip("the shared-memory rings are the emulated backend's transport")
    from doca_py.emulated.comch import config

    monkeypatch.setenv("DOCA_PY_COMCH_SHM", "1")
    config.configure(shm=True)
    try:
        yield "rings"
    finally:
        config.configure(shm=False)
