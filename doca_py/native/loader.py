"""Find and open the DOCA shared libraries.

Search order for ``load("dma")`` (the first file that opens wins):

1. every directory of ``$DOCA_PY_LIBDIR`` (``os.pathsep`` separated),
2. ``/opt/mellanox/doca/lib/<arch>-linux-gnu`` (Debian/Ubuntu packages),
3. ``/opt/mellanox/doca/lib64`` (RPM packages),
4. the system loader: ``ctypes.util.find_library("doca_dma")``, then the plain
   sonames ``libdoca_dma.so.3``, ``.so.2`` and ``.so`` (``LD_LIBRARY_PATH``, ld.so.cache).

In a directory the candidates are ``libdoca_X.so.3``, ``.so.2``, ``.so`` and then any
fully versioned ``libdoca_X.so.M.m.pppp`` (newest first), so an install with the real
file but without symlinks is still found.

``libdoca_common`` is always opened first, with ``RTLD_GLOBAL``: the other libraries
resolve their ``doca_buf``/``doca_ctx``… symbols against it, and opening it first turns
"undefined symbol" errors into a clear "libdoca_common not found". Once it came from a directory,
the other libraries are opened from that directory only: one missing there is not taken from
another DOCA (the system loader's, or one already open in the process), whose version would not
match libdoca_common's (DOCA 2.6 has no ``libdoca_comch``, a 3.x one beside it would be bound to
2.6's libdoca_common).

Successful loads are cached per library; failures are not, so setting
``DOCA_PY_LIBDIR`` later and retrying works. A failure raises
[`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound], an ``ImportError`` (a missing optional native
dependency, like any other failed import) whose message lists every path tried and
why it failed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import re
import threading
from pathlib import Path

from ..errors import DocaPyError
from ..log import logger as _pkg_logger

__all__ = [
    "LIBRARIES",
    "DocaLibraryNotFound",
    "load",
    "loaded_path",
    "is_available",
    "search_dirs",
    "runtime_version",
    "runtime_version_string",
    "parse_version",
    "reset",
    "ENV_LIBDIR",
]

_log = _pkg_logger.getChild("native.loader")

ENV_LIBDIR = "DOCA_PY_LIBDIR"
"""Environment variable with extra directories to search first."""

LIBRARIES: tuple[str, ...] = ("common", "dma", "compress", "erasure_coding", "rdma", "comch", "cc", "argp")
"""Short names accepted by [`load`][doca_py.native.loader.load] (``"dma"`` → ``libdoca_dma``). ``cc`` is the 2.6 comch."""

# Sonames to try, newest ABI first (2.x and 3.x share no major number).
_MAJORS = (".so.3", ".so.2", ".so")
_FULL_VERSION = re.compile(r"\.so\.(\d+)\.(\d+)\.(\d+)$")
_VERSION_TEXT = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?")


class DocaLibraryNotFound(DocaPyError, ImportError):
    """No candidate file for a DOCA library could be opened.

    ``attempts`` holds ``(path_or_name, reason)`` for every candidate, in search order;
    the message lists them one per line.
    """

    def __init__(self, lib: str, attempts: list[tuple[str, str]]) -> None:
        self.lib = lib
        self.attempts = list(attempts)
        lines = "\n".join(f"    {where}: {why}" for where, why in attempts) or "    (nothing to try)"
        super().__init__(
            f"cannot load libdoca_{lib}; set {ENV_LIBDIR} to the directory holding it. Tried:\n{lines}",
            name=f"libdoca_{lib}",
        )

    def summary(self) -> str:
        """One line: the files that exist but failed to open (a broken install says more than the
        places that hold nothing), else that the library was found nowhere."""
        broken = [f"{where}: {why}" for where, why in self.attempts if os.path.isabs(where) and os.path.isfile(where)]
        if broken:
            return f"libdoca_{self.lib}: " + "; ".join(broken)
        return f"libdoca_{self.lib} not found (searched ${ENV_LIBDIR}, the DOCA install directories, the system loader)"


_lock = threading.Lock()
_cache: dict[str, tuple[ctypes.CDLL, str]] = {}
_version: tuple[str, tuple[int, int, int]] | None = None


def search_dirs() -> list[Path]:
    """Directories searched before the system loader, in order (existing or not)."""
    dirs = [Path(p) for p in os.environ.get(ENV_LIBDIR, "").split(os.pathsep) if p.strip()]
    machine = platform.machine() or "x86_64"
    dirs.append(Path(f"/opt/mellanox/doca/lib/{machine}-linux-gnu"))
    dirs.append(Path("/opt/mellanox/doca/lib64"))
    return dirs


def _dir_candidates(directory: Path, base: str) -> list[Path]:
    names = [directory / f"{base}{suffix}" for suffix in _MAJORS]
    # A real file without its symlinks (e.g. copied out of a package): newest first.
    full = []
    for p in directory.glob(f"{base}.so.*"):
        m = _FULL_VERSION.search(p.name)
        if m and p.name.startswith(base + ".so."):
            full.append((tuple(int(g) for g in m.groups()), p))
    names += [p for _, p in sorted(full, reverse=True)]
    return names


def _try_open(target: str, mode: int, attempts: list[tuple[str, str]]) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(target, mode=mode)
    except OSError as exc:
        attempts.append((target, f"dlopen failed: {exc}"))
        return None


def _open(lib: str) -> tuple[ctypes.CDLL, str]:
    base = f"libdoca_{lib}"
    # RTLD_GLOBAL only for common: the others must not leak symbols into each other.
    mode = ctypes.RTLD_GLOBAL if lib == "common" else ctypes.DEFAULT_MODE
    attempts: list[tuple[str, str]] = []
    common = _cache.get("common")
    home = Path(common[1]).parent if lib != "common" and common is not None and os.path.isabs(common[1]) else None
    for directory in search_dirs() if home is None else [home]:
        if not directory.is_dir():
            attempts.append((str(directory), "no such directory"))
            continue
        tried_any = False
        for path in _dir_candidates(directory, base):
            if not path.exists():
                continue
            tried_any = True
            handle = _try_open(str(path), mode, attempts)
            if handle is not None:
                return handle, str(path)
        if not tried_any:
            attempts.append((str(directory), f"no {base}.so* file"))
    if home is not None:
        attempts.append((f"{base}.so* elsewhere", f"not searched: libdoca_common came from {home}, and another "
                                                  f"DOCA's {base} would not match it"))
        raise DocaLibraryNotFound(lib, attempts)
    name = base.removeprefix("lib")  # find_library wants the name without "lib"
    found = ctypes.util.find_library(name)
    if found:
        handle = _try_open(found, mode, attempts)
        if handle is not None:
            return handle, found
    else:
        attempts.append((f"find_library({name!r})", "not found"))
    for suffix in _MAJORS:
        handle = _try_open(f"{base}{suffix}", mode, attempts)
        if handle is not None:
            return handle, f"{base}{suffix}"
    raise DocaLibraryNotFound(lib, attempts)


def load(lib: str) -> ctypes.CDLL:
    """Open ``libdoca_<lib>`` (``lib`` is a short name from [`LIBRARIES`][doca_py.native.loader.LIBRARIES]), cached.

    Opens ``libdoca_common`` first. Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound] (an
    ``ImportError``) listing every attempt, or ``ValueError`` for an unknown name.
    """
    if lib not in LIBRARIES:
        raise ValueError(f"unknown DOCA library {lib!r}; expected one of {', '.join(LIBRARIES)}")
    hit = _cache.get(lib)
    if hit is not None:
        return hit[0]
    with _lock:
        hit = _cache.get(lib)
        if hit is not None:
            return hit[0]
        if lib != "common" and "common" not in _cache:
            _cache["common"] = _open("common")
        _cache[lib] = entry = _open(lib)
    _log.debug("loaded libdoca_%s from %s", lib, entry[1])
    return entry[0]


def loaded_path(lib: str) -> str | None:
    """Where ``libdoca_<lib>`` was opened from, or ``None`` if it is not loaded."""
    hit = _cache.get(lib)
    return hit[1] if hit is not None else None


def is_available(lib: str = "common") -> bool:
    """Whether ``libdoca_<lib>`` can be opened (loads it as a side effect)."""
    try:
        load(lib)
    except ImportError:
        return False
    return True


def parse_version(text: str) -> tuple[int, int, int]:
    """``"3.0.0058"`` → ``(3, 0, 58)``; a missing patch is 0. ``ValueError`` if unparsable."""
    m = _VERSION_TEXT.match(text)
    if m is None:
        raise ValueError(f"unrecognised DOCA version string {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def runtime_version_string() -> str:
    """``doca_version_runtime()`` of the loaded libdoca_common, e.g. ``"3.0.0058"``."""
    return _runtime()[0]


def runtime_version() -> tuple[int, int, int]:
    """The loaded libdoca_common's version as ``(major, minor, patch)``, e.g. ``(3, 0, 58)``."""
    return _runtime()[1]


def _runtime() -> tuple[str, tuple[int, int, int]]:
    global _version
    cached = _version
    if cached is not None:
        return cached
    cdll = load("common")
    # Item access returns a fresh function object, so these settings cannot clash
    # with the argtypes the capi layer installs on its own objects.
    fn = cdll["doca_version_runtime"]
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    raw = fn()
    text = raw.decode("ascii", "replace") if raw else ""
    _version = (text, parse_version(text))
    return _version


def reset() -> None:
    """Forget every loaded library and the cached version (for tests).

    The shared objects stay mapped (``dlclose`` is unsafe with ctypes); the next
    [`load`][doca_py.native.loader.load] searches again and may open a different file.
    """
    global _version
    with _lock:
        _cache.clear()
        _version = None
