"""The port of ``samples/doca_common/graph`` (``examples/graph.py``): two DMA nodes and a user node per
instance, ten instances, run as its users run it (a process, strict and shuffled, on the backend the
suite's child processes use)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .test_examples import EXAMPLES, ROOT, TIMEOUT, Sample, env  # noqa: F401 - env is the fixture

pytestmark = pytest.mark.multiprocess


def test_graph(env: dict[str, str]) -> None:  # noqa: F811 - the imported fixture
    sample = Sample("graph.py", [], env)
    try:
        out = sample.finish()
    finally:
        sample.kill()
    # Every instance's user node ran after both of its DMA nodes: each destination holds the instance's
    # source, filled with the instance's number plus one (the C sample's memset).
    verified = dict(re.findall(r"Instance (\d+): both DMA destinations hold the source's 1024 bytes of 0x([0-9a-f]{2})",
                               out))
    assert verified == {str(i): f"{i + 1:02x}" for i in range(10)}, out
    assert sorted(re.findall(r"Instance (\d+) user callback", out), key=int) == [str(i) for i in range(10)]
    assert out.index("Submitting all graph instances") < out.index("Instance") < out.index("All instances completed")
    assert "Sample finished successfully" in out and "failed" not in out


def test_graph_takes_no_arguments(env: dict[str, str]) -> None:  # noqa: F811
    proc = subprocess.run([sys.executable, str(EXAMPLES / "graph.py"), "-p", "03:00.0"], cwd=ROOT, env=env,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "takes no arguments" in proc.stderr
