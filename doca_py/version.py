"""``doca_version``: which DOCA release the backend in use presents.

[`version_runtime`][doca_py.version.version_runtime] mirrors ``doca_version_runtime()``: on the native backend
the loaded libdoca_common's version, on the emulated backend the release whose rules
it follows (``DOCA_PY_EMU_VERSION``, default 3.2).
"""

from __future__ import annotations

import re
from ._backend import backend

__all__ = ["version_runtime", "version_info_runtime"]


def version_runtime() -> str:
    """``doca_version_runtime()``: the runtime version string, e.g. ``"3.0.0058"``."""
    return backend.version.version_runtime()


def version_info_runtime() -> tuple[int, int, int]:
    """``doca_version_runtime`` as [`version_runtime`][doca_py.version.version_runtime] as ``(major, minor, patch)``."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version_runtime())
    if m is None:
        raise ValueError(f"unrecognised DOCA version string {version_runtime()!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
