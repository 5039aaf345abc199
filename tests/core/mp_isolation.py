"""Processes of one unprivileged user for the isolation tests: ``python -m tests.core.mp_isolation MODE …``.

* ``export``: export 4 KiB of ``Mmap.allocate`` memory, print ``pid fd blobhex``, wait for a line on stdin.
* ``ring-create`` / ``ring-attach``: create a same-host ring (as a comch or RDMA receiver does), or attach
  one a peer made (as a sender does: the memfd is made here by hand, so only the attach can have
  closed this process), print ``pid fd``, wait for a line on stdin.
* ``neighbour PID FD``: try to open the exporter's memfd through ``/proc``; print ``opened`` or ``refused``.

Both drop every capability first (as root, CAP_SYS_PTRACE would bypass the check this is
about, and a capability-less process may not look into one that has capabilities); both
keep the same uid, so they are two ordinary processes of one user.
"""

from __future__ import annotations

import ctypes
import os
import sys

_CAP_VERSION_3 = 0x20080522


def drop_capabilities() -> None:
    """capset(2) with empty effective, permitted and inheritable sets: an ordinary process of this uid."""
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if ctypes.CDLL(None, use_errno=True).capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def main(argv: list[str]) -> int:
    drop_capabilities()
    if argv[0] == "neighbour":
        try:
            os.close(os.open(f"/proc/{argv[1]}/fd/{argv[2]}", os.O_RDWR))
            print("opened", flush=True)
        except PermissionError:
            print("refused", flush=True)
        return 0
    if argv[0].startswith("ring-"):
        return _ring(argv[0])
    import doca_py as d
    from doca_py.memory import find_shared

    with d.Dev.open_by_pci_addr("3b:00.0") as dev:
        mm = d.Mmap()
        mm.allocate(4096)
        mm.set_permissions(d.AccessFlag.PCI_READ_WRITE)
        mm.add_dev(dev)
        mm.start()
        blob = mm.export_pci(dev)
        shm = find_shared(*mm.get_memrange())
        assert shm is not None
        print(os.getpid(), shm.fd, blob.hex(), flush=True)
        sys.stdin.readline()
        mm.close()
    return 0


def _ring(mode: str) -> int:
    import fcntl

    from doca_py.emulated.transport import shmring

    if mode == "ring-create":
        ring = shmring.Ring.create()
    else:
        fd = os.memfd_create("peer-ring", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, shmring.DATA + shmring.DEFAULT_SIZE)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        with open(f"/proc/self/fd/{fd}", "r+b", buffering=0) as f:  # a peer's ring: a valid header
            import mmap
            with mmap.mmap(f.fileno(), shmring.DATA + shmring.DEFAULT_SIZE) as mm:
                shmring._GLOBAL.pack_into(mm, 0, shmring._MAGIC, shmring._VERSION, shmring.DEFAULT_SIZE)
        ring = shmring.Ring.attach(fd)
    print(os.getpid(), ring.fd, flush=True)
    sys.stdin.readline()
    ring.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
