"""Child process of the cross-process sync event tests: ``python -m tests.core.mp_sync_event BLOBHEX``.

Imports the parent's remote-PCI export and answers one command per stdin line with one stdout line:
``get`` (the value), ``add N`` (the value before), ``wait_ge N`` (``ok`` once the value is at least N: ``wait_gt``, which DOCA 2.6 has too), ``set N``.
A failure prints the exception's class name.
"""

from __future__ import annotations

import sys

import doca_py as d

from .helpers import DPU_PCI


def main(blob_hex: str) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        try:
            se = d.SyncEvent.create_from_export(dev, bytes.fromhex(blob_hex))
            se.start()
        except d.DocaError as exc:
            print(type(exc).__name__, flush=True)
            return
        print("ready", flush=True)
        with se:
            for line in sys.stdin:
                cmd, *arg = line.split()
                try:
                    if cmd == "get":
                        out = str(se.get())
                    elif cmd == "add":
                        out = str(se.update_add(int(arg[0])))
                    elif cmd == "set":
                        se.update_set(int(arg[0]))
                        out = "ok"
                    elif cmd == "wait_ge":
                        se.wait_gt(int(arg[0]) - 1)
                        out = "ok"
                    else:
                        out = f"unknown {cmd}"
                except d.DocaError as exc:
                    out = type(exc).__name__
                print(out, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
