"""The storage apps on older DOCA through the native backend: a gga_offload end-to-end test (three storage
targets, the gga service and the test initiator, every process on ``doca_py/native`` over libdoca built for
DOCA 3.0 or 2.6). There libdoca exports no ``doca_buf_inventory_buf_reuse_by_*`` (3.2), and on 2.6 no
``doca_mmap_enable_thread_safety`` nor RDMA connection objects, so the apps take their older paths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.deadlines import hang

from .env import native_env

ROOT = Path(__file__).resolve().parents[2]
#: Reads (normal and both recovery modes), malformed requests and the write flow.
E2E = "tests/gga_offload/test_e2e.py::test_reads_recovery_malformed_and_write[cauchy-1]"

pytestmark = pytest.mark.multiprocess


@pytest.mark.parametrize("version", ["3.0", "2.6"])
def test_gga_offload_end_to_end_on_older_doca(version: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", E2E, "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--doca-version", version], cwd=ROOT, env=native_env(version), capture_output=True, text=True,
                          timeout=hang(600), check=False)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert "1 passed" in tail, tail
    assert f"doca_py backends: native (DOCA {version}." in proc.stdout, proc.stdout[:2000]  # the header
