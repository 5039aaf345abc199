"""C programs against libdoca, for tests: compile one (declarations of its own, no DOCA headers needed) and
run it with the library's directory on its rpath."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from doca_py.libdoca.build import find_compiler

from .env import lib_dir

__all__ = ["PRELUDE", "compile_c", "run_c"]

PRELUDE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int doca_error_t;
union doca_data { void *ptr; uint64_t u64; };
#define CHECK(call) do { doca_error_t rc_ = (call); if (rc_ != 0) { \
	fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, rc_); exit(10); } } while (0)
"""
"""Includes, ``doca_error_t``, ``union doca_data`` and ``CHECK(call)`` (exit 10 naming the failed call)."""


def compile_c(tmp_path: Path, source: str, version: str | None = None, libs: tuple[str, ...] = ("common",)) -> Path:
    """*source* (after :data:`PRELUDE`) built into an executable linked with libdoca_*libs* of *version*;
    skips without a C compiler."""
    cc = find_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    lib = lib_dir(version)
    src, exe = tmp_path / "prog.c", tmp_path / "prog"
    src.write_text(PRELUDE + source)
    cmd = [cc, "-O1", "-Wall", "-Werror", "-pthread", "-o", str(exe), str(src), f"-L{lib}",
           *(f"-ldoca_{name}" for name in libs), f"-Wl,-rpath,{lib}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return exe


def run_c(exe: Path, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run *exe* (the emulator it boots reads the environment as it is: no ``DOCA_PY_*`` is needed)."""
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, check=False)
