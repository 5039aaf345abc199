"""The application and tests of docs/testing.md ("Test your DOCA application in CI") run as a reader runs them.

The guide includes ``docs/testing/offload_app.py`` and ``docs/testing/test_offload_app.py``; here
they are copied alone into an empty directory and run with ``pytest`` as the guide's CI job runs
them: the test kit comes from the installed entry point, with a seed and without the project's
conftest or environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doca_py.testing.tracecheck import assert_valid_trace, load_trace, unfinished_spans

pytestmark = pytest.mark.multiprocess

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "testing"


def test_the_guides_application_tests_pass_under_two_versions_and_a_seed(tmp_path: Path) -> None:
    for name in ("offload_app.py", "test_offload_app.py"):
        shutil.copy(GUIDE / name, tmp_path / name)
        assert f'--8<-- "docs/testing/{name}"' in (ROOT / "docs" / "testing.md").read_text()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--doca-seed", "2024",
                          f"--doca-trace={tmp_path / 'traces'}"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "doca_py test kit: seed 2024," in out.stdout
    for test in ("test_the_dpu_copies_the_hosts_buffer_and_answers_its_crc[doca2.6] PASSED",
                 "test_the_dpu_copies_the_hosts_buffer_and_answers_its_crc[doca3.2] PASSED",
                 "test_a_failed_copy_reaches_the_host_as_an_error PASSED"):
        assert f"test_offload_app.py::{test}" in out.stdout, out.stdout
    # The trace of each test shows the whole run: every task that started ended (comch sends included).
    traces = sorted((tmp_path / "traces").glob("*.json"))
    assert len(traces) == 3
    for path in traces:
        assert_valid_trace(path)
        assert unfinished_spans(path) == [], path.name
        names = {ev["args"]["name"] for ev in load_trace(path)["traceEvents"] if ev["name"] == "thread_name"}
        assert {"doca_pair", "kit"} <= names and any(n.startswith("EmuComch") for n in names), names


def _outcomes(tmp_path: Path, seed: int, faults: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_")}
    out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-rf", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "--doca-seed", str(seed), "--doca-faults", faults],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    # what each test did, and the first line of each failure (pids and times vary between runs)
    return [re.sub(r"pid \d+|\d+\.\d+s|\[\s*\d+%\]", "", line).strip() for line in out.stdout.splitlines()
            if line.startswith(("test_offload_app.py::", "FAILED test_offload_app.py::"))]


def test_the_guides_application_replays_exactly_under_faults(tmp_path: Path) -> None:
    """Under injected DMA faults a seed decides which copies fail, not the timing of the two processes: the
    first seed that fails something fails the same tests, with the same first lines, in two more runs."""
    for name in ("offload_app.py", "test_offload_app.py"):
        shutil.copy(GUIDE / name, tmp_path / name)
    faults = "dma_memcpy=0.5"
    for seed in range(1, 9):
        first = _outcomes(tmp_path, seed, faults)
        if any(line.startswith("FAILED") for line in first):
            break
    else:
        pytest.fail("no seed of 1..8 made a DMA copy fail at a rate of 0.5")
    assert len([line for line in first if "::" in line and "FAILED" not in line.split()[0]]) == 3, first
    for _ in range(2):
        assert _outcomes(tmp_path, seed, faults) == first
