"""The DPU side of the cross-process re-export test: ``python -m tests.zero_copy.dpu_child PCI_BLOB_HEX``.

Imports the host's PCI export blob on the DPU device, re-exports it for RDMA and prints
``blob <hex>``. Then it obeys stdin, one command per line, answering one line each:
``destroy`` → ``destroyed`` (the re-exporting map is destroyed), ``exit``.
"""

from __future__ import annotations

import sys

import doca_py as d

DPU_PCI = "03:00.0"


def main(pci_blob: bytes) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        imported = d.Mmap.create_from_export(pci_blob, dev)
        print("blob " + imported.export_rdma(dev).hex(), flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if not cmd or cmd[0] == "exit":
                break
            if cmd[0] == "destroy":
                imported.close()
                print("destroyed", flush=True)
        if not imported.closed:
            imported.close()


if __name__ == "__main__":
    main(bytes.fromhex(sys.argv[1]))
