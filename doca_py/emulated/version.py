"""The DOCA version the emulated backend presents (``DOCA_PY_EMU_VERSION``).

The emulator follows the rules of one DOCA release where releases differ (the RDMA
state machine above all, see ``doca-c-api`` §6.7): ``3.2`` by default, the newest the
project targets, or ``2.6``. :func:`version_runtime` answers like the native
``doca_version_runtime()``.

A function a presented version does not have is refused as a DOCA library of that version refuses it (the
symbol is absent: the native backend raises ``DocaNotSupported`` naming it and the versions that export
it): :func:`require` (from a version on) and :func:`require_until` (up to a version) say so the same way.
"""

from __future__ import annotations

import os
import re

from ..errors import DocaNotSupported

__all__ = ["SUPPORTED", "VERSION", "version_runtime", "at_least", "parse", "require", "require_until", "absent"]

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


def _presented() -> str:
    return f"DOCA {VERSION[0]}.{VERSION[1]}, the version the emulator presents (DOCA_PY_EMU_VERSION)"


def absent(fn: str, since: tuple[int, int] | None = None, until: tuple[int, int] | None = None,
           note: str = "") -> DocaNotSupported:
    """The error for *fn* called where the presented version lacks it: it names the function and the versions
    that export it, as the native backend's message for a symbol the loaded library lacks does."""
    parts = ([f"from DOCA {since[0]}.{since[1]}"] if since else []) + ([f"up to DOCA {until[0]}.{until[1]}"]
                                                                       if until else [])
    tail = f" ({note})" if note else ""
    return DocaNotSupported(f"{fn} is not in {_presented()}; it is exported {' '.join(parts)}{tail}")


def require(fn: str, since: tuple[int, int], note: str = "") -> None:
    """Refuse *fn* (``DocaNotSupported``) unless the presented version is *since* or newer."""
    if VERSION < since:
        raise absent(fn, since=since, note=note)


def require_until(fn: str, until: tuple[int, int], note: str = "") -> None:
    """Refuse *fn* (``DocaNotSupported``) unless the presented version is *until* or older."""
    if VERSION > until:
        raise absent(fn, until=until, note=note)
