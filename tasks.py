#!/usr/bin/env python3
"""Project set-up and the two README commands, using only the standard library.

    python3 tasks.py run    # the main job: the whole storage topology locally (emulated backend)
    python3 tasks.py test   # mypy --strict, mkdocs build --strict, the test suite

Both create or refresh ``.venv`` next to this file and install the project into it
(editable, with the ``dev`` extras) whenever ``pyproject.toml`` changed since the
last install, then re-run themselves inside it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
STAMP = VENV / ".setup-stamp"


def _sh(*cmd: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, env=env)


def ensure_venv() -> None:
    """Create ``.venv`` and install the project when missing or out of date."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if PY.exists() and STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    _sh(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _sh(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
    STAMP.write_text(wanted)


def run(args: list[str]) -> None:
    env = dict(os.environ, DOCA_PY_IMPL=os.environ.get("DOCA_PY_IMPL", "emulated"))
    _sh(PY, "-m", "apps.topology", *args, env=env)


def test(args: list[str]) -> None:
    _sh(PY, "-m", "mypy")
    docs_env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    _sh(PY, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(ROOT / "build" / "site"), env=docs_env)
    # -n auto: pytest-xdist, one worker per core.
    _sh(PY, "-m", "pytest", "-n", "auto", "-q", *args)


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
