"""``DOCA_PY_IMPL`` that cannot be honoured, and ``auto`` falling back: what the programs and a library
importer see (each in a fresh interpreter: the choice is made at import)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_")}
    environ.update(env)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.usefixtures("no_system_doca")
def test_native_probe_without_doca_reports_every_attempt(tmp_path: Path) -> None:
    out = _run(["-m", "doca_py", "probe"], DOCA_PY_IMPL="native", DOCA_PY_LIBDIR=str(tmp_path))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr, out.stderr
    first, *attempts = out.stderr.splitlines()
    assert first.startswith("doca_py: DOCA_PY_IMPL=native requested but the DOCA libraries are not usable: "
                            "cannot load libdoca_common")
    assert f"    {tmp_path}: no libdoca_common.so* file" in attempts
    assert "    find_library('doca_common'): not found" in attempts
    for soname in ("libdoca_common.so.3", "libdoca_common.so.2", "libdoca_common.so"):
        assert any(a.startswith(f"    {soname}: dlopen failed") for a in attempts), attempts
    # the probe still ran (it reads ELF files, no backend needed)
    assert attempts[-1].startswith(f"probe: no DOCA library (libdoca_*.so*) found in: {tmp_path}, ")


def test_a_library_importer_gets_a_doca_py_error() -> None:
    code = """
import json, sys
try:
    import doca_py
except ImportError as exc:
    print(json.dumps({"mro": [c.__name__ for c in type(exc).__mro__], "msg": str(exc)}))
"""
    out = _run(["-c", code], DOCA_PY_IMPL="cuda")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    doc = json.loads(out.stdout)
    assert doc["mro"][:4] == ["DocaImplError", "DocaUsageError", "DocaPyError", "ImportError"]
    assert doc["msg"] == "DOCA_PY_IMPL='cuda' is not one of: auto, native, emulated"


@pytest.mark.usefixtures("no_system_doca")
@pytest.mark.parametrize("content", [b"", b"not an ELF file"], ids=["empty", "not-elf"])
def test_auto_says_why_a_broken_library_was_not_used(tmp_path: Path, content: bytes) -> None:
    lib = tmp_path / "libdoca_common.so"
    lib.write_bytes(content)
    code = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(levelname)s %(message)s")
import doca_py
print("impl", doca_py.impl)
"""
    out = _run(["-c", code], DOCA_PY_IMPL="auto", DOCA_PY_LIBDIR=str(tmp_path))
    assert out.returncode == 0, out.stderr
    record, *rest = [line for line in out.stdout.splitlines() if line.startswith("doca_py ")]
    assert record.startswith("doca_py INFO DOCA_PY_IMPL=auto: using the emulated backend; the native one did "
                             "not load: cannot load libdoca_common")
    assert f"{lib}: dlopen failed" in out.stdout
    assert out.stdout.splitlines()[-1] == "impl emulated"

    text = _run(["-m", "doca_py", "--list"], DOCA_PY_LIBDIR=str(tmp_path))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "backend: emulated"
    assert lines[1].startswith(f"native backend not loaded: libdoca_common: {lib}: dlopen failed: ")
    doc = json.loads(_run(["-m", "doca_py", "--list", "--json"], DOCA_PY_LIBDIR=str(tmp_path)).stdout)
    assert doc["native_unavailable"] == lines[1].removeprefix("native backend not loaded: ")


def test_an_explicit_emulated_choice_gives_no_reason() -> None:
    doc = json.loads(_run(["-m", "doca_py", "--list", "--json"], DOCA_PY_IMPL="emulated").stdout)
    assert doc["backend"] == "emulated" and doc["native_unavailable"] is None
