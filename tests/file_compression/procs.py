"""Child processes of the two-sided app tests: the apps as ``python -m`` and the wire-format peers,
with bounded line reads (no sleeping) and a private comch directory per test."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.deadlines import hang
from tests.impl import CHILD_IMPL

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = hang(60.0)
HOST_PCI, DPU_PCI = "3b:00.0", "03:00.0"


@dataclass
class Proc:
    """One child: stdout read line by line, stderr collected in a file."""

    proc: subprocess.Popen[bytes]
    errpath: Path
    buf: bytes = b""
    lines: list[str] = field(default_factory=list)

    def line(self) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], DEADLINE)
            assert ready, f"no output before the deadline; so far: {self.lines}"
            chunk = os.read(fd, 65536)
            assert chunk, f"exited (rc={self.proc.poll()}) before printing a line; so far: {self.lines}\n" \
                          f"stderr: {self.errpath.read_text()}"
            self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\n")
        self.lines.append(raw.decode(errors="replace").rstrip())
        return self.lines[-1]

    def wait_for(self, text: str) -> str:
        """Read lines until one contains *text*; that line."""
        while True:
            got = self.line()
            if text in got:
                return got

    def finish(self, within: float = DEADLINE) -> tuple[int, str, str]:
        """Exit status, all stdout, stderr once the child exits (within *within* seconds)."""
        rc = self.proc.wait(max(within, DEADLINE))
        assert self.proc.stdout is not None
        rest = (self.buf + self.proc.stdout.read()).decode(errors="replace")
        return rc, "\n".join(self.lines) + "\n" + rest, self.errpath.read_text()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)


@pytest.fixture
def comch_env() -> Iterator[dict[str, str]]:
    """The children's environment: the run's backend (:mod:`tests.impl`) and a private comch directory
    (the apps' server names are fixed, so parallel tests must not share one)."""
    tmp = tempfile.mkdtemp(prefix="dpc-")  # short: the socket path must fit in 108 bytes
    try:
        yield dict(os.environ, DOCA_PY_IMPL=CHILD_IMPL, DOCA_PY_COMCH_DIR=tmp,
                   PYTHONWARNINGS="error::ResourceWarning")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def spawn(tmp_path: Path, comch_env: dict[str, str]) -> Iterator[object]:
    """``spawn(*argv)`` → a started `Proc` (``python -m`` argv), killed at teardown if still running."""
    started: list[Proc] = []

    def start(*argv: str) -> Proc:
        errpath = tmp_path / f"child-{len(started)}.err"
        with open(errpath, "wb") as errf:
            p = subprocess.Popen([sys.executable, "-m", *argv], cwd=ROOT, env=comch_env,
                                 stdout=subprocess.PIPE, stderr=errf)
        started.append(Proc(p, errpath))
        return started[-1]

    yield start
    for p in started:
        p.kill()
        p.proc.wait(DEADLINE)
        if p.proc.stdout is not None:
            p.proc.stdout.close()
