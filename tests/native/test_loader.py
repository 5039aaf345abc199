"""The loader: search order, failure messages, version parsing, backend selection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doca_py import _backend as _impl
from doca_py.native import loader
from doca_py.native.loader import DocaLibraryNotFound

from .conftest import UseLibdir


def test_search_dirs_env_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv(loader.ENV_LIBDIR, f"{a}{os.pathsep}{os.pathsep}{b}")
    dirs = loader.search_dirs()
    assert dirs[:2] == [a, b]
    assert [str(d) for d in dirs[2:]] == [
        f"/opt/mellanox/doca/lib/{os.uname().machine}-linux-gnu",
        "/opt/mellanox/doca/lib64",
    ]


def _run_clean(code: str, libdir: str) -> dict[str, Any]:
    """Run *code* in a fresh interpreter: once a fake libdoca_common.so.3 is mapped into
    this process, dlopen("libdoca_common.so.3") finds it by SONAME, as it should."""
    env = dict(os.environ, DOCA_PY_LIBDIR=libdir, DOCA_PY_IMPL="emulated")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


_FAILING_LOAD = """
import json
from doca_py.native import loader
try:
    loader.load("common")
except loader.DocaLibraryNotFound as err:
    out = {"import_error": isinstance(err, ImportError), "lib": err.lib, "msg": str(err),
           "attempts": err.attempts, "available": loader.is_available()}
else:
    out = {"loaded": loader.loaded_path("common")}
print(json.dumps(out))
"""


@pytest.mark.usefixtures("no_system_doca")
def test_failure_lists_every_attempt(tmp_path: Path) -> None:
    empty, absent, broken = tmp_path / "empty", tmp_path / "absent", tmp_path / "broken"
    empty.mkdir()
    broken.mkdir()
    (broken / "libdoca_common.so.3").write_bytes(b"not an ELF file")
    out = _run_clean(_FAILING_LOAD, os.pathsep.join(map(str, (empty, absent, broken))))
    assert out.get("import_error") is True and out["lib"] == "common", out
    msg = out["msg"]
    assert f"{empty}: no libdoca_common.so* file" in msg
    assert f"{absent}: no such directory" in msg
    assert f"{broken / 'libdoca_common.so.3'}: dlopen failed" in msg
    assert "find_library('doca_common')" in msg
    for soname in ("libdoca_common.so.3", "libdoca_common.so.2", "libdoca_common.so"):
        assert f"\n    {soname}: dlopen failed" in msg
    assert loader.ENV_LIBDIR in msg
    assert len(out["attempts"]) == msg.count("\n    ")
    assert out["available"] is False


_SELECT_NATIVE = """
import json
from doca_py import _backend as _impl
try:
    _impl.select("native")
except ImportError as err:
    out = {"error": str(err), "auto": _impl.select("auto")}
else:
    out = {"selected": "native"}
print(json.dumps(out))
"""


@pytest.mark.usefixtures("no_system_doca")
def test_select_native_without_doca_raises_import_error(tmp_path: Path) -> None:
    out = _run_clean(_SELECT_NATIVE, str(tmp_path))
    assert "DOCA_PY_IMPL=native" in out.get("error", ""), out
    assert "libdoca_common" in out["error"] and str(tmp_path) in out["error"]
    assert out["auto"] == "emulated"


def test_select_native_with_fake_doca(fake30_dir: Path, use_libdir: UseLibdir) -> None:
    use_libdir(fake30_dir)
    assert _impl.select("native") == "native"


def test_other_libraries_load_common_first(fake30_dir: Path, use_libdir: UseLibdir) -> None:
    use_libdir(fake30_dir)
    with pytest.raises(DocaLibraryNotFound, match="libdoca_dma") as info:
        loader.load("dma")
    assert info.value.lib == "dma"
    assert loader.loaded_path("common") is not None  # opened first, and cached
    assert loader.loaded_path("dma") is None


def test_full_version_file_without_symlinks(fake30_dir: Path, tmp_path: Path, use_libdir: UseLibdir) -> None:
    (tmp_path / "libdoca_common.so.3.0.0058").symlink_to(fake30_dir / "libdoca_common.so.3.0.0058")
    use_libdir(tmp_path)
    loader.load("common")
    assert loader.loaded_path("common") == str(tmp_path / "libdoca_common.so.3.0.0058")


def test_load_is_cached_and_reset(fake30_dir: Path, use_libdir: UseLibdir) -> None:
    use_libdir(fake30_dir)
    first = loader.load("common")
    assert loader.load("common") is first
    loader.reset()
    assert loader.loaded_path("common") is None
    assert loader.load("common") is not first


def test_unknown_library_name() -> None:
    with pytest.raises(ValueError, match="unknown DOCA library"):
        loader.load("nope")


@pytest.mark.parametrize(
    ("text", "want"),
    [("3.0.0058", (3, 0, 58)), ("2.6.0058", (2, 6, 58)), ("3.2.1025", (3, 2, 1025)), ("3.2", (3, 2, 0))],
)
def test_parse_version(text: str, want: tuple[int, int, int]) -> None:
    assert loader.parse_version(text) == want


def test_parse_version_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="unrecognised"):
        loader.parse_version("DOCA")


def test_native_modules_import_without_doca(tmp_path: Path) -> None:
    env = dict(os.environ, DOCA_PY_LIBDIR=str(tmp_path), DOCA_PY_IMPL="emulated")
    code = (
        "import doca_py.native, doca_py.native.loader, doca_py.native.capi, doca_py.native.capi.common, "
        "doca_py.native.inline, doca_py.native.probe"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_a_library_missing_beside_libdoca_common_is_not_taken_from_another_doca(fakelibs: Any,
                                                                                use_libdir: UseLibdir) -> None:
    """A 3.x libdoca_comch already open in the process (as another DOCA on the system loader's path would be)
    is not what a ``DOCA_PY_LIBDIR`` without one means: DOCA 2.6's directory has none, so its libdoca_common
    gets none (and ``capi.load_comch`` takes 2.6's libdoca_cc)."""
    use_libdir(fakelibs.dir("all32"))
    loader.load("comch")  # open in this process from now on
    use_libdir(fakelibs.dir("common30"))
    with pytest.raises(DocaLibraryNotFound, match="libdoca_comch") as info:
        loader.load("comch")
    assert "libdoca_common came from" in str(info.value)
    assert loader.loaded_path("comch") is None
