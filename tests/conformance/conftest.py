"""tests/conformance: the DOCA-semantics tests, run on every backend.

Every test here takes the ``backend`` fixture (``tests/conftest.py``) and runs twice: on
the emulated backend, and on the native one, over the fake libraries of
``tests/native/fakelib`` when the machine has no DOCA (see ``backends.py`` for how the
public object layer is re-bound and what is skipped on the fakes, and why).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .backends import MARK_CONFORMANCE

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(_HERE):
            item.add_marker(MARK_CONFORMANCE)
