"""The importing side of the cross-process export tests: a ``doca_pair`` DPU function.

:func:`serve` answers requests ``(mode, blob)`` from the host side until ``None``: it imports
the blob on its device and prepares a DMA for *mode* (``write``: 6 bytes into the host's
memory at offset 100; ``read``: 6 bytes from its start; ``oob``: a buffer that ends past the
export). It answers the name of the exception if the import or the buffer is refused; else
``ready``, then waits for ``go``, runs the DMA and answers ``ok`` (``ok:<hex>`` for a read) or
the failed task's status name.
"""

from __future__ import annotations

import doca_py as d
from doca_py.testing import Side


def serve(side: Side) -> None:
    while (req := side.recv(60)) is not None:
        side.send(_one(side, *req))


def _one(side: Side, mode: str, blob: bytes) -> str:
    dev = side.dev
    with d.Pe() as pe, d.BufInventory(4) as inv:
        try:
            host = d.Mmap.create_from_export(blob, dev)
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
                raise ValueError(f"unknown mode {mode}")
        except d.DocaError as exc:  # close what it made: the kit's leak check fails a side that does not
            dma.close()
            del mem
            local.close()
            host.close()
            return type(exc).__name__
        side.send("ready")
        if side.recv(60) != "go":
            return "no go"
        task = dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        while not statuses:
            pe.wait(5.0)
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        dma.close()
        out = "ok:" + bytes(mem[100:106]).hex() if mode == "read" and not statuses[0] else \
            "ok" if not statuses[0] else statuses[0].name
        del mem
        local.close()
        host.close()
        return out
