"""A short tour of doca_py across two processes (``python -m doca_py.demo``).

The "host" process allocates shareable memory, fills it and exports it over PCI.
A "DPU" process imports the export, DMA-reads the host bytes into its own memory,
inverts them, and DMA-writes the result back next to the original. The host then
checks every byte. On the emulated backend both processes run on this machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import doca_py as d
from doca_py.types import AccessFlag as A

HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"


def _run_tasks(pe: d.Pe, dma: d.Dma, pairs: list[tuple[d.Buf, d.Buf]]) -> None:
    """Copy every (src, dst) pair and wait for all completions."""
    failures: list[d.ErrorCode] = []
    done: list[d.DmaTaskMemcpy] = []

    def ok(task: d.DmaTaskMemcpy, _u: object, _c: object) -> None:
        done.append(task)

    def err(task: d.DmaTaskMemcpy, _u: object, _c: object) -> None:
        failures.append(task.get_status())
        done.append(task)

    dma.task_memcpy_set_conf(ok, err, num_tasks=len(pairs))
    dma.start()
    for src, dst in pairs:
        dma.task_memcpy_alloc_init(src, dst).submit()
    while len(done) < len(pairs):
        pe.wait(1.0)
    for t in done:
        t.free()
    if failures:
        raise SystemExit(f"DMA failed: {failures}")


def dpu(blob_hex: str, size: int) -> None:
    """The DPU side: import, read, transform, write back."""
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(8) as inv:
        host = d.Mmap.create_from_export(bytes.fromhex(blob_hex), dev)
        local = d.Mmap()
        view = local.allocate(size)
        local.add_dev(dev)
        local.start()
        hbase, _ = host.get_memrange()
        lbase, _ = local.get_memrange()
        with d.Dma(dev) as dma:
            pe.connect_ctx(dma)
            src = inv.buf_get_by_data(host, hbase, size)
            dst = inv.buf_get_by_addr(local, lbase, size)
            _run_tasks(pe, dma, [(src, dst)])
            view[:] = bytes(b ^ 0xFF for b in view)  # the "offload" work
            dma.stop()
            pe.progress()
            back_src = inv.buf_get_by_data(local, lbase, size)
            back_dst = inv.buf_get_by_addr(host, hbase + size, size)
            _run_tasks(pe, dma, [(back_src, back_dst)])
            for b in (src, dst, back_src, back_dst):
                b.dec_refcount()
        del view
        local.close()
        host.close()


def host(size: int) -> int:
    print(f"doca_py {d.__version__}, backend: {d.impl}")
    for info in d.devinfo_create_list():
        print(f"  device {info.get_pci_addr_str()} {info.get_ibdev_name()} ({info.get_iface_name()})")
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev:
        mm = d.Mmap()
        mem = mm.allocate(2 * size)
        mem[:size] = bytes(i % 251 for i in range(size))
        mm.set_permissions(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
        mm.add_dev(dev)
        mm.start()
        blob = mm.export_pci(dev)
        print(f"exported {2 * size} bytes over PCI: {len(blob)}-byte blob")
        t0 = time.perf_counter()
        child = subprocess.run([sys.executable, "-m", "doca_py.demo", "--dpu", blob.hex(), "--size", str(size)])
        elapsed = time.perf_counter() - t0
        if child.returncode:
            print(f"DPU process failed with exit code {child.returncode}")
            return 1
        good = bytes(mem[size:]) == bytes((i % 251) ^ 0xFF for i in range(size))
        del mem
        mm.close()
    print(f"DPU process read {size} bytes by DMA, inverted them and wrote them back in {elapsed:.2f} s: "
          f"{'all bytes correct' if good else 'MISMATCH'}")
    return 0 if good else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m doca_py.demo", description=__doc__)
    p.add_argument("--size", type=int, default=1 << 20, help="bytes to move (default 1 MiB)")
    p.add_argument("--dpu", metavar="BLOB", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.dpu:
        dpu(args.dpu, args.size)
        return 0
    return host(args.size)


if __name__ == "__main__":
    sys.exit(main())
