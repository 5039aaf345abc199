"""Child process for the cross-process export tests: ``python -m tests.core.mp_child MODE BLOBHEX``.

Prints one line: ``ok`` or the name of the exception / failed task status.
"""

from __future__ import annotations

import sys

import doca_py as d

from .helpers import DPU_PCI


def main(mode: str, blob_hex: str) -> str:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(4) as inv:
        try:
            host = d.Mmap.create_from_export(bytes.fromhex(blob_hex), dev)
        except d.DocaError as exc:
            return type(exc).__name__
        hbase, hlen = host.get_memrange()
        local = d.Mmap()
        mem = local.allocate(4096)
        mem[:6] = b"child!"
        local.add_dev(dev)
        local.start()
        lbase, _ = local.get_memrange()
        statuses: list[d.ErrorCode] = []
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: statuses.append(t.get_status()),
                                 lambda t, u, c: statuses.append(t.get_status()), 2)
        dma.start()
        try:
            if mode == "write":
                src = inv.buf_get_by_data(local, lbase, 6)
                dst = inv.buf_get_by_addr(host, hbase + 100, 6)
            elif mode == "read":
                src = inv.buf_get_by_data(host, hbase, 6)
                dst = inv.buf_get_by_addr(local, lbase + 100, 100)
            elif mode == "oob":
                src = inv.buf_get_by_data(local, lbase, 6)
                dst = inv.buf_get_by_addr(host, hbase + hlen - 3, 6)
            else:
                raise SystemExit(f"unknown mode {mode}")
        except d.DocaError as exc:
            return type(exc).__name__
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return "no go"
        dma.task_memcpy_alloc_init(src, dst).submit()
        while not statuses:
            pe.wait(5.0)
        if mode == "read" and statuses[0] == d.ErrorCode.SUCCESS:
            return "ok:" + bytes(mem[100:106]).hex()
        return "ok" if statuses[0] == d.ErrorCode.SUCCESS else statuses[0].name


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2]), flush=True)
