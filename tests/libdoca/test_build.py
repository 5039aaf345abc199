"""libdoca's build: the symbol set and sonames of each DOCA version, the content cache, no compiler."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from doca_py import libdoca
from doca_py.libdoca import cgen
from doca_py.native import capi
from doca_py.native.probe import _dynamic_symbols

from .env import lib_dir

ROOT = Path(__file__).resolve().parents[2]


def _symbols(path: Path) -> tuple[set[str], str | None]:
    with path.open("rb") as f:
        names, soname = _dynamic_symbols(ELFFile(f))
    return names, soname


def _expected(version: tuple[int, int], lib: str) -> set[str]:
    """What the tables say DOCA *version*'s libdoca_<lib> exports, worked out independently of cgen."""
    out = set()
    for d in capi.tables()[lib]:
        if (d.since is None or version >= d.since) and (d.until is None or version <= d.until) and d.platform is None:
            out.add(d.name)
    return out


@pytest.mark.parametrize("version", libdoca.VERSIONS)
def test_each_library_exports_exactly_the_tables_symbols_with_doca_s_soname(version: str) -> None:
    ver = tuple(int(x) for x in version.split("."))
    d = lib_dir(version)
    # One comch library per version: 2.6's libdoca_cc, renamed libdoca_comch by 3.0.
    expect_libs = [lib for lib in cgen.LIBRARIES if _expected(ver, lib)  # type: ignore[arg-type]
                   and lib != ("comch" if ver < (3, 0) else "cc")]
    assert ("cc" in expect_libs) == (ver < (3, 0)) and ("comch" in expect_libs) == (ver >= (3, 0))
    for lib in expect_libs:
        major = ver[0]
        path = d / f"libdoca_{lib}.so.{major}"
        names, soname = _symbols(path)
        assert soname == f"libdoca_{lib}.so.{major}"
        assert names == _expected(ver, lib), lib  # type: ignore[arg-type]
        assert (d / f"libdoca_{lib}.so").resolve() == path.resolve()
    # Nothing else is there: no library of another version's set.
    present = {p.name.split(".so")[0] for p in d.glob("libdoca_*.so")}
    assert present == {f"libdoca_{lib}" for lib in expect_libs}


def test_the_probe_finds_libdoca_complete() -> None:
    proc = subprocess.run([sys.executable, "-m", "doca_py", "probe", str(lib_dir())], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, DOCA_PY_IMPL="emulated"))
    assert proc.returncode == 0, proc.stderr
    assert "libdoca_dma" in proc.stdout
    missing = [line for line in proc.stdout.splitlines() if line.startswith("    - ")]
    assert missing and all("(expected: " in line for line in missing), missing  # only other versions' functions


def test_a_build_is_cached_by_content(tmp_path: Path) -> None:
    lib = libdoca.build(tmp_path / "out", "3.2")
    real = lib / "libdoca_dma.so.3.2.0"
    first = real.stat().st_mtime_ns
    assert libdoca.build(tmp_path / "out", "3.2") == lib
    assert real.stat().st_mtime_ns == first  # unchanged: not rebuilt
    libdoca.build(tmp_path / "out", "2.6")  # another version's build replaces it
    assert not real.exists() and (lib / "libdoca_cc.so.2").exists() and not (lib / "libdoca_comch.so").exists()
    assert (tmp_path / "out" / "src" / "libdoca_cc.c").exists()


def test_the_command_without_a_compiler_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    env = dict(os.environ, PATH=str(bare), CC="", DOCA_PY_IMPL="emulated")
    proc = subprocess.run([sys.executable, "-m", "doca_py", "libdoca", "--out", str(tmp_path / "x")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "needs a C compiler" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_the_command_prints_the_lib_directory(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "doca_py", "libdoca", "--out", str(tmp_path / "o"), "--doca-version",
                           "3.0"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, DOCA_PY_IMPL="emulated"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "o" / "lib")
    assert (tmp_path / "o" / "lib" / "libdoca_common.so.3").exists()


def test_an_unknown_version_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "doca_py", "libdoca", "--out", str(tmp_path), "--doca-version", "4.0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=dict(os.environ, DOCA_PY_IMPL="emulated"))
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
