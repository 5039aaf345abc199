"""The backend child processes of a test run on: the one this test run tests.

A plain run tests the emulated backend (``DOCA_PY_IMPL=emulated`` in the children, whatever the
machine has); the native pass (``DOCA_PY_IMPL=native`` with ``DOCA_PY_LIBDIR`` at libdoca or a real
DOCA, ``tasks.py test``) runs the same children through ``doca_py/native``.
"""

from __future__ import annotations

import os

__all__ = ["CHILD_IMPL", "child_impl"]


def child_impl() -> str:
    """``"native"`` when this test process was started with ``DOCA_PY_IMPL=native``, else ``"emulated"``."""
    return "native" if os.environ.get("DOCA_PY_IMPL", "").strip().lower() == "native" else "emulated"


CHILD_IMPL = child_impl()
""":func:`child_impl` of this process (the environment is read once, at import)."""
