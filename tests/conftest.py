"""Shared fixtures: the conformance suite runs once per backend available.

The emulated backend runs the suite in strict mode with shuffled completion order
(``DOCA_PY_STRICT=1``, ``DOCA_PY_EMU_SHUFFLE=1``) unless the environment says
otherwise; the seed is in the header and in every failure report, so a failing
run can be replayed with ``DOCA_PY_EMU_SEED=<seed>``.
"""

from __future__ import annotations

import os
import random

# Before doca_py is imported: the knobs are read once, and child processes inherit them.
os.environ.setdefault("DOCA_PY_STRICT", "1")
os.environ.setdefault("DOCA_PY_EMU_SHUFFLE", "1")
os.environ.setdefault("DOCA_PY_EMU_SEED", str(random.SystemRandom().randrange(1 << 31)))

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

import doca_py  # noqa: E402
from doca_py import _impl  # noqa: E402


def _knobs() -> str:
    from doca_py.emulated import strict

    return strict.describe()


def pytest_report_header(config: pytest.Config) -> str:
    return f"doca_py backend: {doca_py.impl}; emulator: {_knobs()}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    if getattr(report, "failed", False):
        report.sections.append(("doca_py emulator", f"replay with: {_knobs()}"))  # type: ignore[attr-defined]
    return report


@pytest.fixture(params=["emulated", "native"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The backend a conformance test runs on; the other one skips with a reason."""
    if request.param != doca_py.impl:
        pytest.skip(f"{request.param} backend not in use (DOCA_PY_IMPL selected {doca_py.impl}); "
                    f"{'no DOCA libraries on this machine' if request.param == 'native' else 'run with DOCA_PY_IMPL=emulated'}")
    yield request.param
