"""The DOCA version the emulated backend presents (``DOCA_PY_EMU_VERSION``).

The emulator follows the rules of one DOCA release where releases differ (the RDMA
state machine above all, see ``doca-c-api`` §6.7): ``3.2`` by default, the newest the
project targets, or ``2.6``. :func:`version_runtime` answers like the native
``doca_version_runtime()``.
"""

from __future__ import annotations

import os
import re

__all__ = ["SUPPORTED", "VERSION", "version_runtime", "at_least", "parse"]

#: The releases whose differing rules the emulator knows.
SUPPORTED = ((2, 6), (3, 0), (3, 2))
_DEFAULT = (3, 2)
_TEXT = re.compile(r"^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$")


def parse(text: str) -> tuple[int, int]:
    """``"2.6"`` or ``"3.0.0058"`` → ``(major, minor)``; ``ValueError`` if not a release the emulator knows."""
    m = _TEXT.match(text)
    if m is None:
        raise ValueError(f"DOCA_PY_EMU_VERSION={text!r} is not a DOCA version like 3.2 or 2.6")
    ver = int(m.group(1)), int(m.group(2))
    if ver not in SUPPORTED:
        raise ValueError(f"DOCA_PY_EMU_VERSION={text!r}: the emulator presents one of "
                         f"{', '.join(f'{a}.{b}' for a, b in SUPPORTED)}")
    return ver


_env = os.environ.get("DOCA_PY_EMU_VERSION", "").strip()
VERSION: tuple[int, int] = parse(_env) if _env else _DEFAULT


def at_least(major: int, minor: int) -> bool:
    """Whether the presented version is *major.minor* or newer."""
    return VERSION >= (major, minor)


def version_runtime() -> str:
    """``doca_version_runtime()``: ``"3.2.0000"`` style, as DOCA prints its versions."""
    return f"{VERSION[0]}.{VERSION[1]}.0000"
