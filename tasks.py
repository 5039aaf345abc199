#!/usr/bin/env python3
"""Project set-up and the two README commands, using only the standard library.

    python3 tasks.py run    # the main job: the whole storage topology locally (emulated backend)
    python3 tasks.py test   # mypy --strict, mkdocs build --strict, the test suite

Both create or refresh ``.venv`` next to this file and install the project into it
(editable, with the ``dev`` extras) whenever ``pyproject.toml`` or ``setup.py``
changed since the last install, then run their tools from it.

``test`` then runs the test suite again (``pytest -n auto -q`` only) on every other
Python of ``DOCA_PY_TEST_PYTHONS`` (default: ``python3.12 python3.13``) that runs
on this machine, each in its own ``.venv-<version>``; one that is missing or does
not start is skipped with the reason. ``DOCA_PY_TEST_PYTHONS=`` (empty) skips them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
STAMP = VENV / ".setup-stamp"
OTHER_PYTHONS = ("python3.12", "python3.13")
MIN_PYTHON = (3, 11)


def _sh(*cmd: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, env=env)


def _wanted() -> str:
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "setup.py"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def _install(py: Path) -> None:
    """Install the project, editable with the ``dev`` extras, into *py*'s venv when out of date."""
    stamp = py.parent.parent / STAMP.name
    wanted = _wanted()
    if stamp.exists() and stamp.read_text() == wanted:
        return
    _sh(py, "-m", "pip", "install", "--quiet", "--upgrade", "pip", "setuptools>=77")
    # Without build isolation: an editable install needs only setuptools (setup.py makes it a
    # ``compat`` one, a .pth that mypy follows), not the wheel build's requirements.
    _sh(py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "-e", ".[dev]")
    stamp.write_text(wanted)


def ensure_venv() -> None:
    """Create ``.venv`` and install the project when missing or out of date."""
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        STAMP.unlink(missing_ok=True)
    _install(PY)


def _python_version(exe: str) -> tuple[tuple[int, int] | None, str]:
    """``((major, minor), "")`` of the interpreter *exe*, or ``(None, why not)``."""
    path = shutil.which(exe)
    if path is None:
        return None, "not on PATH"
    try:
        out = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} does not start: {exc}"
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[0]
        return None, f"{path} does not start: {why}"
    major, minor = (int(x) for x in out.stdout.split(".")[:2])
    return (major, minor), ""


def _other_pythons() -> list[tuple[str, Path]]:
    """The interpreters of ``DOCA_PY_TEST_PYTHONS`` that run here, each with its venv dir."""
    names = os.environ.get("DOCA_PY_TEST_PYTHONS")
    candidates = names.split() if names is not None else list(OTHER_PYTHONS)
    own = _python_version(str(PY))[0]
    found: list[tuple[str, Path]] = []
    for exe in candidates:
        version, why = _python_version(exe)
        if version is None:
            print(f"skipping {exe}: {why}", flush=True)
        elif version < MIN_PYTHON:
            print(f"skipping {exe}: Python {version[0]}.{version[1]} is older than doca_py supports", flush=True)
        elif version == own or any(v.name == f".venv-{version[0]}.{version[1]}" for _, v in found):
            print(f"skipping {exe}: Python {version[0]}.{version[1]} already tested", flush=True)
        else:
            found.append((exe, ROOT / f".venv-{version[0]}.{version[1]}"))
    return found


def ensure_other_venv(exe: str, venv_dir: Path) -> Path:
    """Create ``.venv-X.Y`` with *exe* and install the project into it when out of date."""
    py = venv_dir / "bin" / "python"
    if not py.exists():
        print(f"creating {venv_dir}", flush=True)
        _sh(exe, "-m", "venv", "--clear", venv_dir)
        (venv_dir / ".gitignore").write_text("*\n")  # as Python 3.13's venv does itself
        (venv_dir / STAMP.name).unlink(missing_ok=True)
    _install(py)
    return py


def run(args: list[str]) -> None:
    env = dict(os.environ, DOCA_PY_IMPL=os.environ.get("DOCA_PY_IMPL", "emulated"))
    _sh(PY, "-m", "apps.topology", *args, env=env)


def test(args: list[str]) -> None:
    _sh(PY, "-m", "mypy")
    docs_env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    # No --quiet: every warning is visible, and --strict makes it fatal.
    _sh(PY, "-m", "mkdocs", "build", "--strict", "--site-dir", str(ROOT / "build" / "site"), env=docs_env)
    # -n auto: pytest-xdist, one worker per core.
    _sh(PY, "-m", "pytest", "-n", "auto", "-q", *args)
    # The other Pythons: the suite only (mypy and the docs do not depend on the interpreter).
    failed = []
    for exe, venv_dir in _other_pythons():
        py = ensure_other_venv(exe, venv_dir)
        try:
            _sh(py, "-m", "pytest", "-n", "auto", "-q", *args)
        except subprocess.CalledProcessError as exc:
            failed.append((venv_dir.name, exc))
    if failed:
        print("test suite failed on: " + ", ".join(name for name, _ in failed), flush=True)
        raise failed[0][1]


COMMANDS = {"run": run, "test": test}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    ensure_venv()
    try:
        COMMANDS[argv[0]](argv[1:])
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
