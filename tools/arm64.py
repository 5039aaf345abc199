#!/usr/bin/env python3
"""The suite's fast folders on arm64: an AArch64 Debian userland under qemu-user, the built wheel in it.

    python3 tasks.py test --arch arm64 [pytest arguments]     # or: python3 tools/arm64.py [...]

Needs root (debootstrap, chroot, mounts) and Debian's ``debootstrap`` and ``qemu-user-static``
(installed with apt-get when missing). Steps:

1. the ``qemu-aarch64`` binfmt_misc handler: registered (from qemu-user-static's
   ``/usr/lib/binfmt.d/qemu-aarch64.conf``, with the F flag so it works inside the chroot) only
   when it is not there already, and unregistered at the end if this script registered it; the
   same for mounting binfmt_misc itself;
2. an arm64 Debian (bookworm, minbase, with python3, python3-venv and gcc for the C fakes) under
   ``build/arm64/root``, made once and kept: reruns reuse it (``--fresh`` makes it anew);
3. the wheel, built here (``build/arm64/dist``), and its dependencies and the test runner as AArch64
   wheels fetched here with this machine's pip, installed into a venv in the chroot, and the repository's ``tests/`` folder (and ``pyproject.toml``, pytest's settings)
   copied in;
4. pytest there over ``tests/core tests/native tests/engines tests/conformance``, then
   ``tests/transport`` with the shared-memory rings on (``DOCA_PY_RDMA_SHM=1``,
   ``DOCA_PY_COMCH_SHM=1``). Arguments given replace those folders (e.g. a subset:
   ``tests/native tests/core/test_buf.py``).

What it proves and what it cannot: docs/arm64.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "arm64"
CHROOT = WORK / "root"
DIST = WORK / "dist"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-venv", "gcc", "libc6-dev", "ca-certificates")
#: Written last by the set-up: a chroot without it (an interrupted debootstrap) is made anew.
READY = CHROOT / ".doca_py-ready"
BINFMT = Path("/proc/sys/fs/binfmt_misc")
HANDLER = BINFMT / "qemu-aarch64"
HANDLER_CONF = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
FAST = ("tests/core", "tests/native", "tests/engines", "tests/conformance")
RINGS = ("tests/transport",)
VENV = "/opt/doca_py-venv"
TESTS = "/opt/doca_py-tests"
#: Runtime dependencies come with the wheel; these are the test runner's.
TEST_DEPS = ("pytest>=8", "pytest-xdist>=3.5", "pytest-timeout>=2.3")
#: pytest-timeout's hang bound under qemu-user: pyproject's 300 s is for native speed; emulated AArch64 runs
#: Python several times slower.
QEMU_TIMEOUT = 1800


def sh(*cmd: str | Path, env: dict[str, str] | None = None, check: bool = True) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=check, env=env).returncode


def need_tools() -> None:
    missing = [pkg for tool, pkg in (("debootstrap", "debootstrap"), ("qemu-aarch64-static", "qemu-user-static"))
               if shutil.which(tool) is None]
    if missing:
        sh("apt-get", "update", "-qq")
        sh("apt-get", "install", "-y", "-qq", *missing)


@contextmanager
def binfmt_handler() -> Iterator[None]:
    """The qemu-aarch64 handler for the block; what this registered (or mounted) is undone after it."""
    mounted = registered = False
    if not (BINFMT / "register").exists():
        sh("mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT)
        mounted = True
    try:
        if not HANDLER.exists():
            line = HANDLER_CONF.read_text().strip()
            if not line.endswith("F"):  # the interpreter opened now, so it works inside the chroot too
                line += "F"
            print(f"registering the binfmt handler {HANDLER.name}", flush=True)
            (BINFMT / "register").write_text(line)
            registered = True
        yield
    finally:
        if registered:
            print(f"unregistering the binfmt handler {HANDLER.name}", flush=True)
            HANDLER.write_text("-1")
        if mounted:
            sh("umount", BINFMT, check=False)


def make_chroot(fresh: bool) -> None:
    if READY.exists() and not fresh:
        print(f"reusing {CHROOT.relative_to(ROOT)}", flush=True)
        return
    if CHROOT.exists():
        shutil.rmtree(CHROOT)
    CHROOT.mkdir(parents=True)
    # --foreign, then the second stage run under qemu inside the chroot.
    sh("debootstrap", "--foreign", "--arch=arm64", "--variant=minbase", "--include=" + ",".join(PACKAGES),
       SUITE, CHROOT, MIRROR)
    sh("chroot", CHROOT, "/debootstrap/debootstrap", "--second-stage")
    READY.write_text(" ".join(PACKAGES) + "\n")


@contextmanager
def mounts() -> Iterator[None]:
    """/proc, /dev, /dev/shm (the rings' shared memory) and the host's DNS in the chroot for the block."""
    done: list[Path] = []
    try:
        for src, args in (("/proc", ("-t", "proc", "proc")), ("/dev", ("--bind", "/dev")),
                          ("/dev/shm", ("--bind", "/dev/shm")), ("/sys", ("--bind", "/sys"))):
            target = CHROOT / src.lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            sh("mount", *args, target)
            done.append(target)
        shutil.copy("/etc/resolv.conf", CHROOT / "etc" / "resolv.conf")
        yield
    finally:
        for target in reversed(done):
            sh("umount", "-l", target, check=False)


def build_wheel() -> Path:
    if DIST.exists():
        shutil.rmtree(DIST)
    py = ROOT / ".venv" / "bin" / "python"
    sh(py if py.exists() else sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", DIST, ROOT)
    (wheel,) = DIST.glob("doca_py-*.whl")
    return wheel


def install(wheel: Path) -> None:
    inside = CHROOT / "opt" / "dist"
    if inside.exists():
        shutil.rmtree(inside)
    inside.mkdir(parents=True)
    shutil.copy(wheel, inside)
    if not (CHROOT / VENV.lstrip("/") / "bin" / "python").exists():
        sh("chroot", CHROOT, "python3", "-m", "venv", VENV)
    # The wheels for the userland's Python and AArch64 are fetched here, with this machine's pip and
    # its settings (index, certificates), and installed there from that folder only.
    r = subprocess.run(["chroot", str(CHROOT), "python3", "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                       capture_output=True, text=True, check=True)
    pyver = r.stdout.strip()
    wheels = CHROOT / "opt" / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    py = ROOT / ".venv" / "bin" / "python"
    platforms = [a for tag in ("manylinux2014_aarch64", "manylinux_2_28_aarch64", "manylinux_2_34_aarch64",
                               "linux_aarch64") for a in ("--platform", tag)]
    sh(py if py.exists() else sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
       "--python-version", pyver, "--implementation", "cp", *platforms, "-d", wheels, wheel, *TEST_DEPS)
    pip = (f"{VENV}/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--no-index", "--find-links", "/opt/wheels")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = "/dev/null"
    sh("chroot", CHROOT, *pip, *TEST_DEPS, env=env)
    sh("chroot", CHROOT, *pip, "--force-reinstall", "--no-deps", f"/opt/dist/{wheel.name}", env=env)
    sh("chroot", CHROOT, *pip, f"/opt/dist/{wheel.name}", env=env)  # its dependencies, aarch64 wheels
    tests = CHROOT / TESTS.lstrip("/")
    if tests.exists():
        shutil.rmtree(tests)
    tests.mkdir(parents=True)
    shutil.copytree(ROOT / "tests", tests / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tests)


def pytest(folders: list[str], extra_env: dict[str, str]) -> int:
    env = dict(os.environ, **extra_env)
    env.pop("PYTHONPATH", None)
    # cd into the copied tests: doca_py and apps are imported from the wheel, not from a checkout.
    cmd = (f"cd {TESTS} && exec {VENV}/bin/python -m pytest -q -p no:cacheprovider -n 2 "
           f"--timeout {QEMU_TIMEOUT} " + " ".join(folders))
    return sh("chroot", CHROOT, "/bin/sh", "-c", cmd, env=env, check=False)


def main(argv: list[str]) -> int:
    fresh = "--fresh" in argv
    args = [a for a in argv if a != "--fresh"]
    if os.geteuid() != 0:
        print("tools/arm64.py needs root (debootstrap, chroot, mounts)", file=sys.stderr)
        return 2
    need_tools()
    wheel = build_wheel()
    with binfmt_handler():
        make_chroot(fresh)
        with mounts():
            install(wheel)
            sh("chroot", CHROOT, f"{VENV}/bin/python", "-c",
               "import platform, doca_py; print('doca_py', doca_py.__version__, 'on', platform.machine(), "
               "platform.python_version())")
            if args:
                return pytest(args, {})
            status = pytest(list(FAST), {})
            rings = pytest(list(RINGS), {"DOCA_PY_RDMA_SHM": "1", "DOCA_PY_COMCH_SHM": "1"})
            return status or rings


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
