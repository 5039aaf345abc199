"""The README's main job, small: every test of the topology passes with all five processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from apps.topology import build_parser, make_sample

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("matrix", ["vandermonde", "cauchy"])
def test_whole_topology_passes(tmp_path: Path, matrix: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "apps.topology", "--block-count", "32", "--throughput-operations", "500",
         "--matrix-type", matrix, "--recovery-every-n", "1" if matrix == "cauchy" else "2",
         "--workdir", str(tmp_path), "--timeout", "90"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert out.stdout.count("--- PASSED") == 3
    for role in ("target-data_1", "target-data_2", "target-data_p", "gga_offload", "initiator"):
        assert (tmp_path / f"{role}.log").exists()


def test_a_bad_block_size_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "apps.topology", "--block-size", "100", "--workdir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "--block-size" in out.stderr
    assert not list(tmp_path.glob("*.sbc"))


def test_sample_is_deterministic_and_sized() -> None:
    a, b = make_sample(10_000), make_sample(10_000)
    assert a == b and len(a) == 10_000 and a[:100] != a[100:200]
    assert build_parser().parse_args([]).block_size == 4096
