"""The host side of the cross-process re-export test: ``python -m tests.zero_copy.host_child PERMS``.

Allocates a 64 KiB region on the host device with the access flags *PERMS* (an int), fills it
with ``i % 251``, exports it for PCI and prints ``blob <hex>``. Then it obeys stdin, one
command per line, answering one line each: ``dump OFF N`` → the bytes as hex, ``stop`` →
``stopped`` (the map is stopped: every export is revoked), ``exit``.
"""

from __future__ import annotations

import sys

import doca_py as d

HOST_PCI = "3b:00.0"
SIZE = 64 << 10


def main(perms: int) -> None:
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev:
        mm = d.Mmap()
        mem = mm.allocate(SIZE)
        mem[:] = bytes(i % 251 for i in range(SIZE))
        mm.set_permissions(perms)
        mm.add_dev(dev)
        mm.start()
        print("blob " + mm.export_pci(dev).hex(), flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "exit":
                break
            if cmd[0] == "dump":
                off, n = int(cmd[1]), int(cmd[2])
                print(bytes(mem[off:off + n]).hex(), flush=True)
            elif cmd[0] == "stop":
                mm.stop()
                print("stopped", flush=True)
        del mem
        mm.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
