"""Compile ``libdoca``: DOCA's shared libraries over the emulator, cached by content.

A build is one directory with ``lib/`` (``libdoca_<name>.so.<major>.<minor>.0`` with its soname and the
``.so.<major>`` and ``.so`` links) and ``src/`` (the generated C, kept for reading and debugging). Its
identity is the SHA-256 of everything that goes into it — the generated C (the tables, the version, the
Python it boots), the compiler and the flags — so an unchanged build is never redone, and a changed table
is never served from a stale one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from ..errors import DocaPyError, ErrorCode
from . import cgen, headers

__all__ = ["NoCompiler", "BuildError", "build", "cached", "find_compiler", "default_version", "parse_version",
           "libpython", "is_build", "VERSIONS", "CACHE_ENV"]

VERSIONS = ("2.6", "3.0", "3.2")
"""The DOCA versions ``libdoca`` can present (the emulator's)."""

CACHE_ENV = "DOCA_PY_LIBDOCA_CACHE"
"""Where [`cached`][doca_py.libdoca.build.cached] keeps its builds (default ``$XDG_CACHE_HOME/doca_py/libdoca``)."""

_FLAGS = ("-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wall", "-Wno-unused-function")
_STAMP = ".libdoca-digest"


class NoCompiler(DocaPyError):
    """No C compiler on ``PATH`` (``$CC``, ``cc``, ``gcc``)."""


class BuildError(DocaPyError):
    """The compiler failed on the generated C (a bug of doca_py: the message has its output)."""


def is_build(lib_dir: str | os.PathLike[str]) -> bool:
    """Whether *lib_dir* holds a libdoca build (its content stamp), not a real DOCA."""
    return (Path(lib_dir) / _STAMP).is_file()


def find_compiler() -> str | None:
    """``$CC``, ``cc`` or ``gcc``, the first on ``PATH``."""
    for name in (os.environ.get("CC", ""), "cc", "gcc"):
        if name and (path := shutil.which(name)):
            return path
    return None


def default_version() -> str:
    """The emulator's default DOCA version (``DOCA_PY_EMU_VERSION``, else its newest)."""
    from ..emulated import version as emu

    return f"{emu.VERSION[0]}.{emu.VERSION[1]}"


def parse_version(text: str) -> tuple[int, int]:
    """``"3.2"`` → ``(3, 2)``; ``ValueError`` for a version ``libdoca`` does not present."""
    parts = text.strip().split(".")
    try:
        ver = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ValueError(f"{text!r} is not a DOCA version like 3.2") from None
    if f"{ver[0]}.{ver[1]}" not in VERSIONS:
        raise ValueError(f"libdoca presents DOCA {', '.join(VERSIONS)}, not {text}")
    return ver


def libpython() -> str:
    """The shared libpython of this interpreter (what a C program's libdoca starts), or ``""``."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return ""
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY") or ""
    for d in (sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LIBPL")):
        if d and name and (Path(d) / name).exists():
            return str(Path(d) / name)
    return ""


def recorded_path() -> tuple[str, ...]:
    """The ``sys.path`` a build records for C programs that start Python: doca_py's own root first, then the
    interpreter's directories (its venv's site-packages, where editable installs' ``.pth`` files live).
    Nothing else (a test directory, the current directory): a Python process that loads libdoca uses its
    own path, and the content cache keys on this one, so one checkout and venv make one build."""
    import doca_py

    root = str(Path(doca_py.__file__).resolve().parents[1])
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    kept = [root] + [p for p in sys.path if p and p != root and os.path.abspath(p).startswith(prefixes)]
    return tuple(p for p in dict.fromkeys(kept) if Path(p).is_dir())


def _sources(version: tuple[int, int]) -> dict[str, str]:
    ver_text = f"{version[0]}.{version[1]}.0000"
    paths = recorded_path()
    out = {}
    for lib, entries in cgen.exported(version).items():
        boot = cgen.Boot(lib, ver_text, libpython(), sys.base_prefix, paths, int(ErrorCode.INITIALIZATION))
        out[lib] = cgen.shim_source(boot, entries)
    return out


def _headers(version: tuple[int, int]) -> dict[str, str]:
    """The text of ``include/``'s headers; a prototype that disagrees with its table is a ``BuildError``."""
    try:
        return headers.render(version)
    except headers.HeaderError as exc:
        raise BuildError(str(exc)) from None


def _digest(cc: str, sources: dict[str, str], version: tuple[int, int], includes: dict[str, str]) -> str:
    h = hashlib.sha256(f"{cc}\0{' '.join(_FLAGS)}\0{version}\0".encode())
    for lib in sorted(sources):
        h.update(lib.encode() + b"\0" + sources[lib].encode() + b"\0")
    for name in sorted(includes):  # a changed header is a new build too
        h.update(name.encode() + b"\0" + includes[name].encode() + b"\0")
    return h.hexdigest()


def _compile(cc: str, version: tuple[int, int], sources: dict[str, str], dest: Path) -> None:
    lib_dir, src_dir = dest / "lib", dest / "src"
    lib_dir.mkdir(parents=True, exist_ok=True)
    src_dir.mkdir(parents=True, exist_ok=True)
    major, minor = version
    for lib, text in sources.items():
        base = f"libdoca_{lib}"
        src = src_dir / f"{base}.c"
        src.write_text(text)
        real = f"{base}.so.{major}.{minor}.0"
        cmd = [cc, *_FLAGS, f"-Wl,-soname,{base}.so.{major}", "-o", str(lib_dir / real), str(src), "-ldl"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
        for link in (f"{base}.so.{major}", f"{base}.so"):
            (lib_dir / link).unlink(missing_ok=True)
            (lib_dir / link).symlink_to(real)


def _needs(cc: str | None) -> str:
    if cc is None:
        raise NoCompiler("libdoca needs a C compiler (set $CC, or install cc/gcc)")
    return cc


def build(out: Path, version: str | None = None) -> Path:
    """Build libdoca for DOCA *version* into *out* (``out/lib``, ``out/src``, ``out/include``); returns ``out/lib``.

    Does nothing when *out* already holds this exact build. Raises [`NoCompiler`][doca_py.libdoca.build.NoCompiler]
    without a compiler, ``ValueError`` for an unknown version.
    """
    ver = parse_version(version or default_version())
    cc = _needs(find_compiler())
    sources = _sources(ver)
    includes = _headers(ver)
    digest = _digest(cc, sources, ver, includes)
    stamp = out / "lib" / _STAMP
    if stamp.exists() and stamp.read_text() == digest:
        return out / "lib"
    if (out / "lib").exists():
        shutil.rmtree(out / "lib")
    _compile(cc, ver, sources, out)
    headers.write(out / "include", ver)
    stamp.write_text(digest)
    return out / "lib"


def cached(version: str | None = None) -> Path:
    """The ``lib`` directory of a build for *version* in the shared cache, built on first use.

    Safe across processes (pytest-xdist workers): each builds in a private directory and renames
    it into place; the first rename wins and the others use it.
    """
    ver = parse_version(version or default_version())
    cc = _needs(find_compiler())
    sources = _sources(ver)
    includes = _headers(ver)
    digest = _digest(cc, sources, ver, includes)
    root = Path(os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                / "doca_py" / "libdoca")
    final = root / f"{ver[0]}.{ver[1]}-{digest[:16]}"
    if (final / "lib" / _STAMP).exists():
        return final / "lib"
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        _compile(cc, ver, sources, tmp)
        headers.write(tmp / "include", ver)
        (tmp / "lib" / _STAMP).write_text(digest)
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "lib" / _STAMP).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / "lib"
