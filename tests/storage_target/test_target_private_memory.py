"""The storage a target holds is private to it: another process of the same (unprivileged) user cannot
open the target's memfd through ``/proc/<pid>/fd`` (the target is non-dumpable, as exporters are),
unless ``DOCA_PY_EMU_DUMPABLE=1`` asks for a dumpable process (the control case, which proves the probe
would see the storage otherwise).

The target and the probe both run as uid/gid 65534 (``nobody``): the test must run as root to set that
up. The probe is a forked child that ``setuid()``s and then tries the open.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from doca_py.memory import HEADER_SIZE

from ..impl import CHILD_IMPL
from .client import DEADLINE, DEVICE, LISTENING, ROOT

pytestmark = pytest.mark.multiprocess
NOBODY = 65534
BLOCK, BLOCKS = 4096, 4
DUMPABLE_ENV = "DOCA_PY_EMU_DUMPABLE"


def _as_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _probe(pid: int, fd: int, length: int) -> bytes | str:
    """In a forked child running as ``nobody``: the first *length* bytes of the storage read through
    ``/proc/<pid>/fd/<fd>``, or why not."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only makes system calls and exits
        os.close(r)
        try:
            _as_nobody()
        except OSError as exc:
            out = f"setuid: {exc}".encode()
        else:
            try:
                with open(f"/proc/{pid}/fd/{fd}", "rb") as f:
                    f.seek(HEADER_SIZE)
                    out = b"D" + f.read(length)
            except PermissionError:
                out = b"refused"
            except OSError as exc:
                out = f"open: {exc}".encode()
        os.write(w, out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read()
    os.waitpid(child, 0)
    return got[1:] if got.startswith(b"D") else got.decode()


def _storage_fd(pid: int) -> int:
    """The target's storage memfd (root can list a non-dumpable process's descriptors)."""
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}").startswith("/memfd:doca_py (deleted)"):
                return int(name)
        except OSError:
            continue
    raise AssertionError(f"no storage memfd among the descriptors of {pid}")


@pytest.mark.parametrize("dumpable", [False, True], ids=["default", "DOCA_PY_EMU_DUMPABLE=1"])
def test_a_neighbour_of_the_same_user_cannot_open_the_targets_storage(dumpable: bool) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the target and the probe as another, unprivileged user")
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        content = bytes(range(256)) * (BLOCK * BLOCKS // 256)
        raw = Path(tmp) / "storage.bin"
        raw.write_bytes(content)
        raw.chmod(0o644)
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", DUMPABLE_ENV)}
        env.update(DOCA_PY_IMPL=CHILD_IMPL, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", HOME=tmp)
        if dumpable:
            env[DUMPABLE_ENV] = "1"
        if CHILD_IMPL == "native" and env.get("DOCA_PY_LIBDIR"):
            # The native pass's libraries may sit where nobody cannot reach (root's cache): a copy beside the storage.
            libs = Path(tmp) / "lib"
            shutil.copytree(env["DOCA_PY_LIBDIR"], libs, symlinks=True)
            env["DOCA_PY_LIBDIR"] = str(libs)
        try:
            target = subprocess.Popen([sys.executable, "-m", "apps.storage_target", "-d", DEVICE, "--cpu", "0",
                                       "--listen-address", "127.0.0.1", "--listen-port", "0", "--binary-content",
                                       str(raw), "--block-size", str(BLOCK), "--block-count", str(BLOCKS)],
                                      cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, preexec_fn=_as_nobody)
        except (OSError, subprocess.SubprocessError) as exc:
            pytest.skip(f"cannot start a process as uid {NOBODY}: {exc}")
        try:
            assert target.stdout is not None
            lines = []
            for line in target.stdout:  # bounded: the target prints this line or exits
                lines.append(line)
                if line.startswith(LISTENING):
                    break
            else:
                pytest.fail("the target (as nobody) did not start:\n" + "".join(lines))
            got = _probe(target.pid, _storage_fd(target.pid), len(content))
            if isinstance(got, str) and got.startswith("setuid"):
                pytest.skip(got)
            if dumpable:
                assert got == content  # the control: a dumpable target's storage is open to its neighbours
            else:
                assert got == "refused"
        finally:
            target.kill()
            target.wait(DEADLINE)
            if target.stdout is not None:
                target.stdout.close()
