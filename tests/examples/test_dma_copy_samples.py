"""The two-sided DMA copy ports (``samples/doca_dma/dma_copy_host`` and ``dma_copy_dpu``) as processes.

The host side starts first and exports its text; once it has written the descriptor files and waits for
enter, the DPU side reads them, copies the host's memory with a DMA memcpy task and prints it. Runs on
the path this test run tests (emulated, or native over libdoca), strict and shuffled (``env``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .test_examples import EXAMPLES, ROOT, TIMEOUT, env, run, samples  # noqa: F401 - env is a fixture

pytestmark = pytest.mark.multiprocess

HOST_READY = "Wait till the DPU has finished and press enter"


def _paths(tmp_path: Path) -> list[str]:
    return ["-d", str(tmp_path / "export_desc.txt"), "-b", str(tmp_path / "buffer_info.txt")]


def test_dma_copy_host_to_dpu(env: dict[str, str], tmp_path: Path) -> None:
    text = "copied from the host's memory by the DPU"
    with samples() as started:
        host = run(started, env, "dma_copy_host.py", "-p", "3b:00.0", "-t", text, *_paths(tmp_path), stdin=True)
        host.wait_for_line(HOST_READY)
        # The buffer information file: the exported buffer's address and its length (the text and its NUL).
        addr, length = (tmp_path / "buffer_info.txt").read_text().split("\n")
        assert int(addr) > 0 and int(length) == len(text) + 1
        dpu = run(started, env, "dma_copy_dpu.py", "-p", "03:00.0", *_paths(tmp_path))
        out = dpu.finish()
        assert "Remote DMA copy was done Successfully" in out
        assert f"Memory content: {text}" in out
        host.send_enter()  # the DPU has finished
        host.finish()


def test_dma_copy_dpu_reads_the_buffer_info_as_strtoull_does(env: dict[str, str], tmp_path: Path) -> None:
    """``strtoull(..., 0)``: an address written in hex is read as such, and a length shorter than the buffer
    copies that many bytes (the last of them replaced by the NUL the DPU prints up to)."""
    with samples() as started:
        host = run(started, env, "dma_copy_host.py", "-t", "abcdefgh", *_paths(tmp_path), stdin=True)
        host.wait_for_line(HOST_READY)
        info = tmp_path / "buffer_info.txt"
        addr, _ = info.read_text().split("\n")
        info.write_text(f"{int(addr):#x}\n5")
        out = run(started, env, "dma_copy_dpu.py", *_paths(tmp_path)).finish()
        assert "Memory content: abcd" in out and "Memory content: abcde" not in out
        host.send_enter()
        host.finish()


def _dpu(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLES / "dma_copy_dpu.py"), *args], cwd=ROOT, env=env,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)


def test_dma_copy_dpu_needs_the_files_at_start(env: dict[str, str], tmp_path: Path) -> None:
    """As the C DPU build's argp callbacks do, ``-d``/``-b`` must name readable files already."""
    proc = _dpu(env, *_paths(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Failed to find file path pointed by export descriptor" in proc.stderr


def test_dma_copy_dpu_refuses_an_empty_buffer(env: dict[str, str], tmp_path: Path) -> None:
    """A zero length in the buffer information: ``DOCA_ERROR_EMPTY`` before anything is mapped."""
    (tmp_path / "export_desc.txt").write_bytes(b"not read")
    (tmp_path / "buffer_info.txt").write_text("4096\nnot a number")
    proc = _dpu(env, *_paths(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Remote buffer from host is zero" in out and "DOCA_ERROR_EMPTY" in out, out
    assert "Traceback" not in out, out
