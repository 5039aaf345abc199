"""DMA Copy with one side on the native path over libdoca and the other on the emulated backend: the
emulator serves both ends of the comch connection and of the PCI export, so a native DPU copies the
memory an emulated host exported, and the other way round."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.file_compression.procs import DPU_PCI, HOST_PCI, ROOT, Proc
from tests.libdoca.env import native_env

pytestmark = [pytest.mark.multiprocess]


@pytest.fixture
def started() -> Iterator[list[Proc]]:
    procs: list[Proc] = []
    yield procs
    for p in procs:
        p.kill()
        p.proc.wait()
        if p.proc.stdout is not None:
            p.proc.stdout.close()


def _start(procs: list[Proc], tmp_path: Path, env: dict[str, str], *argv: str) -> Proc:
    errpath = tmp_path / f"child-{len(procs)}.err"
    with open(errpath, "wb") as errf:
        p = subprocess.Popen([sys.executable, "-m", "apps.dma_copy", *argv], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=errf)
    procs.append(Proc(p, errpath))
    return procs[-1]


@pytest.mark.parametrize(("dpu_path", "host_path", "to_dpu"), [
    ("native", "emulated", True), ("native", "emulated", False), ("emulated", "native", True),
    ("emulated", "native", False)])
def test_a_copy_across_paths_is_byte_exact(started: list[Proc], tmp_path: Path, dpu_path: str, host_path: str,
                                           to_dpu: bool) -> None:
    comch_dir = tempfile.mkdtemp(prefix="dca-")  # short: it holds Unix socket paths
    base = dict(os.environ, DOCA_PY_COMCH_DIR=comch_dir, PYTHONWARNINGS="error::ResourceWarning")

    def env(path: str) -> dict[str, str]:
        return native_env(None, base) if path == "native" else dict(base, DOCA_PY_IMPL="emulated")

    (tmp_path / "host").mkdir()
    (tmp_path / "dpu").mkdir()
    host_file, dpu_file = tmp_path / "host" / "f.bin", tmp_path / "dpu" / "f.bin"
    data = random.Random(9).randbytes(1_000_003)
    (host_file if to_dpu else dpu_file).write_bytes(data)
    try:
        dpu = _start(started, tmp_path, env(dpu_path), "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(dpu_file))
        dpu.wait_for("Server waiting on a client to connect")
        host = _start(started, tmp_path, env(host_path), "-p", HOST_PCI, "-f", str(host_file))
        hrc, hout, herr = host.finish()
        drc, dout, derr = dpu.finish()
    finally:
        shutil.rmtree(comch_dir, ignore_errors=True)
    assert (hrc, drc) == (0, 0), (hout, herr, dout, derr)
    assert host_file.read_bytes() == data and dpu_file.read_bytes() == data
