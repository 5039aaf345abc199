"""Where a native ``doca_pair`` side's DOCA comes from (``--doca-impl native``).

A real DOCA when one loads — ``libdoca_common`` in a directory of ``$DOCA_PY_LIBDIR``, in the DOCA
install directories or through the system loader (``doca_py.native.loader``'s search) — else
``libdoca``, DOCA's C libraries served by the emulator, built once per DOCA version and content
(``doca_py.libdoca.cached``). A ``libdoca`` build found on those paths is not a real DOCA: the kit
builds its own, for the version the run presents, so that ``--doca-version`` and the
``doca_versions`` marker hold on the native path too.

On the ``libdoca`` path the emulator runs inside the side's process, under the side's knobs (seed,
strict mode, shuffling, faults) and trace, as an emulated side's does. A real DOCA has its own
device and its own version: the knobs do not reach it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import os
import sys
import threading
from pathlib import Path

__all__ = ["NativeDoca", "NativeUnavailable", "resolve", "find_real", "is_libdoca"]


class NativeUnavailable(RuntimeError):
    """Neither a real DOCA nor a C compiler to build ``libdoca``: the native path cannot run."""


@dataclasses.dataclass(frozen=True)
class NativeDoca:
    """The DOCA a native side loads."""

    real: bool
    """A real DOCA (``False``: ``libdoca`` over the emulator)."""
    lib_dir: str
    """The directory of its ``libdoca_common`` (``""``: a real DOCA the system loader finds)."""
    version: str
    """Its version: ``doca_version_runtime()`` of a real DOCA, the version a ``libdoca`` build presents."""

    def env(self) -> dict[str, str]:
        """The environment of a side (and of the processes it starts) on this DOCA."""
        out = {"DOCA_PY_IMPL": "native"}
        if self.lib_dir:
            out["DOCA_PY_LIBDIR"] = self.lib_dir
        return out

    def describe(self) -> str:
        """One line: which DOCA, where."""
        if self.real:
            return f"a real DOCA {self.version} ({self.lib_dir or 'the system loader'})"
        return f"libdoca over the emulator, DOCA {self.version} ({self.lib_dir})"


_lock = threading.Lock()
_resolved: dict[str, NativeDoca] = {}
_real: list[NativeDoca | None] = []  # probed once per process


def is_libdoca(lib_dir: str | os.PathLike[str]) -> bool:
    """Whether *lib_dir* holds a ``libdoca`` build (its content stamp), not a real DOCA."""
    from ..libdoca.build import is_build

    return is_build(lib_dir)


def _runtime_version(cdll: ctypes.CDLL) -> str:
    fn = cdll["doca_version_runtime"]
    fn.restype, fn.argtypes = ctypes.c_char_p, []
    raw = fn()
    return raw.decode("ascii", "replace") if raw else "(unknown version)"


def find_real() -> NativeDoca | None:
    """A real DOCA that loads in this process, or ``None``. A ``libdoca`` build is skipped unloaded (calling
    it would start its emulator here); a real ``libdoca_common`` is opened and asked its version."""
    with _lock:
        if _real:
            return _real[0]
        from ..native import loader

        found: NativeDoca | None = None
        for directory in loader.search_dirs():
            if not directory.is_dir() or is_libdoca(directory):
                continue
            for path in sorted(directory.glob("libdoca_common.so*"), key=lambda p: len(p.name)):
                try:
                    cdll = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                except OSError:
                    continue
                found = NativeDoca(True, str(directory), _runtime_version(cdll))
                break
            if found is not None:
                break
        if found is None:
            name = ctypes.util.find_library("doca_common")
            if name:
                try:
                    found = NativeDoca(True, "", _runtime_version(ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)))
                except OSError:
                    pass
        _real.append(found)
        return found


def resolve(version: str) -> NativeDoca:
    """The DOCA of a native side for DOCA *version* (``"3.2"``): a real DOCA if one loads (whatever its
    version), else ``libdoca`` for *version*, built on first use (seconds; then cached on disk, shared by
    processes). Raises ``NativeUnavailable`` without either."""
    real = find_real()
    if real is not None:
        return real
    with _lock:
        hit = _resolved.get(version)
    if hit is not None:
        return hit
    from .. import libdoca

    try:
        lib_dir = libdoca.cached(version)  # keyed on doca_py's root and venv, not this session's sys.path
    except libdoca.NoCompiler as exc:
        raise NativeUnavailable(f"the native path needs a real DOCA or a C compiler to build libdoca: no DOCA "
                                f"loads (DOCA_PY_LIBDIR, the DOCA install directories, the system loader) and "
                                f"{exc}") from None
    out = NativeDoca(False, str(lib_dir), version)
    with _lock:
        _resolved[version] = out
    return out
