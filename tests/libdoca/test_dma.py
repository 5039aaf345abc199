"""libdoca_dma: the DMA sample through the native backend over libdoca."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .env import native_env

ROOT = Path(__file__).resolve().parents[2]


def test_dma_local_copy_example_runs_through_the_native_backend() -> None:
    # DOCA_PY_IMPL=native is a demand: doca_py's import fails if libdoca_common does not load.
    proc = subprocess.run([sys.executable, "examples/dma_local_copy.py"],
                          cwd=ROOT, env=native_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'Destination buffer holds: "This is a sample piece of text"' in proc.stdout + proc.stderr
