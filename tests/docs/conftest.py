"""The docs build the tests of this folder share: one strict ``mkdocs build`` per session, run as a
reader runs it, that also records which top-level modules it imported (tests/docs/test_docs_build.py
checks that the ``docs`` extra provides them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# mkdocs' own command line, in a process that lists the modules it imported beyond a bare interpreter's.
_BUILD = """
import json, sys
startup = set(sys.modules)
from mkdocs.__main__ import cli
code = 0
try:
    cli(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
finally:
    with open(sys.argv[1], "w") as out:
        json.dump(sorted({m.split(".")[0] for m in set(sys.modules) - startup}), out)
sys.exit(code)
"""


@dataclass(frozen=True)
class Build:
    site: Path
    """The built site."""
    imported: list[str]
    """The top-level modules the build imported (a bare interpreter's left out)."""


def run_mkdocs(*args: str, record: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``mkdocs <args>`` in a subprocess from the checkout (*prelude*: Python run first)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-c", prelude + _BUILD, str(record), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    record = out.parent / "imported.json"
    proc = run_mkdocs("build", "--strict", "--site-dir", str(out), record=record)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    return Build(out, json.loads(record.read_text()))


@pytest.fixture(scope="session")
def site(build: Build) -> Path:
    return build.site
