"""Offload contexts through the public task API vs the raw reference, same run.

* Ec create/recover tasks vs ISA-L's C ``ec_encode_data`` called directly on the same
  blocks (GB/s of data blocks);
* Compress ``decompress_lz4_stream`` tasks vs liblz4's ``LZ4_decompress_safe`` into a
  preallocated buffer (GB/s of output);
* Dma memcpy tasks vs a plain memoryview copy.

Tasks are kept 8 in flight per ``Pe.progress`` (how DOCA applications run); tasks of
256 KiB and more run on the emulated engine threads (2). Prints a markdown table.

    .venv/bin/python benchmarks/bench_offload_tasks.py [--time SECONDS]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from collections.abc import Callable

os.environ.setdefault("DOCA_PY_IMPL", "emulated")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import doca_py as d  # noqa: E402
from doca_py.engines import ec as ec_kernels  # noqa: E402
from doca_py.engines import gf256, lz4_stream  # noqa: E402

INFLIGHT = 8


def best_rate(fn: Callable[[], int], budget: float, rounds: int = 3) -> float:
    """Best bytes/s over *rounds* runs of *fn* (returns bytes processed per call)."""
    fn()
    best = 0.0
    for _ in range(rounds):
        n, t0 = 0, time.perf_counter()
        while (dt := time.perf_counter() - t0) < budget:
            n += fn()
        best = max(best, n / dt)
    return best


class Rig:
    def __init__(self, size: int) -> None:
        self.dev = d.Dev.open_by_pci_addr("03:00.0")
        self.pe = d.Pe()
        self.inv = d.BufInventory(8 * INFLIGHT)
        self.mm = d.Mmap()
        self.mem = self.mm.allocate(size)
        self.mm.add_dev(self.dev)
        self.mm.start()
        self.base = self.mm.get_memrange()[0]
        self.done = 0

    def cb(self, t: d.Task, u: object, c: object) -> None:
        self.done += 1

    def err(self, t: d.Task, u: object, c: object) -> None:
        raise RuntimeError(f"task failed: {t.get_status().name}")

    def run(self, tasks: list[d.Task], dsts: list[d.Buf]) -> None:
        for b in dsts:
            b.reset_data_len()
        self.done = 0
        for t in tasks:
            t.submit()
        while self.done < len(tasks):
            if not self.pe.progress():
                self.pe.wait(1.0)

    def close(self) -> None:
        self.pe.close()
        self.inv.close()
        del self.mem
        self.mm.close()
        self.dev.close()


def ec_rows(budget: float) -> list[str]:
    rows = []
    lib = ec_kernels._isal()
    for k, m in ((2, 1), (4, 2), (8, 3)):
        for block in (4 << 10, 64 << 10, 1 << 20):
            stripe = (k + m) * block
            r = Rig(INFLIGHT * stripe + stripe)
            ec = d.Ec(r.dev)
            r.pe.connect_ctx(ec)
            ec.task_create_set_conf(r.cb, r.err, INFLIGHT)
            ec.task_recover_set_conf(r.cb, r.err, INFLIGHT)
            ec.start()
            coding = ec.matrix_create(d.EcMatrixType.CAUCHY, k, m)
            rec = ec.matrix_create_recover(coding, [0])
            r.mem[:] = os.urandom(len(r.mem))
            create, recover, outs = [], [], []
            for i in range(INFLIGHT):
                off = r.base + i * stripe
                src = r.inv.buf_get_by_data(r.mm, off, k * block)
                out = r.inv.buf_get_by_addr(r.mm, off + k * block, m * block)
                surv = r.inv.buf_get_by_data(r.mm, off + block, k * block)  # blocks 1..k as survivors
                out2 = r.inv.buf_get_by_addr(r.mm, r.base + INFLIGHT * stripe, block)
                create.append(ec.task_create_allocate_init(coding, src, out))
                recover.append(ec.task_recover_allocate_init(rec, surv, out2))
                outs += [out, out2]
            enc = gf256.gen_cauchy1_matrix(k, m)[k * k:]
            view = memoryview(r.mem)
            srcs = [view[j * block:(j + 1) * block] for j in range(k)]
            dsts = [view[(k + j) * block:(k + j + 1) * block] for j in range(m)]
            tbl = ec_kernels._isal_tables(k, m, enc)
            # The same 8 stripes the tasks use, so both sides see the same cache footprint.
            arrays = [(ctypes.c_void_p * (k + m))(*[r.base + i * stripe + j * block for j in range(k + m)])
                      for i in range(INFLIGHT)]
            pbases = [ctypes.addressof(a) for a in arrays]

            def c_ref() -> int:
                assert lib is not None
                for pbase in pbases:
                    lib.encode_data(block, k, m, tbl, pbase, pbase + k * 8)
                return INFLIGHT * k * block

            def t_create() -> int:
                r.run(create, outs[0::2])
                return INFLIGHT * k * block

            def t_recover() -> int:
                r.run(recover, outs[1::2])
                return INFLIGHT * k * block

            ref = best_rate(c_ref, budget)
            cr = best_rate(t_create, budget)
            rc = best_rate(t_recover, budget)
            label = f"{block >> 10} KiB" if block < 1 << 20 else "1 MiB"
            rows.append(f"| Ec create {k}+{m} | {label} | {cr / 1e9:.2f} | {ref / 1e9:.2f} | {cr / ref:.2f} |")
            rows.append(f"| Ec recover {k}+{m} | {label} | {rc / 1e9:.2f} | {ref / 1e9:.2f} | {rc / ref:.2f} |")
            del srcs, dsts, view
            r.close()
    return rows


def lz4_rows(budget: float) -> list[str]:
    rows = []
    lib = lz4_stream._lib()
    for size in (64 << 10, 1 << 20):
        plain = (b"storage offload block %d " * 4000)[:size] if False else bytes(
            (b"block %08d of the storage offload test; " % i)[j % 40] for i in range(size // 40 + 1) for j in range(40)
        )[:size]
        stream = lz4_stream.compress_stream(plain)
        r = Rig(INFLIGHT * (size + len(stream)) + 4096)
        comp = d.Compress(r.dev)
        r.pe.connect_ctx(comp)
        comp.task_decompress_lz4_stream_set_conf(r.cb, r.err, INFLIGHT)
        comp.start()
        tasks, dsts = [], []
        for i in range(INFLIGHT):
            off = i * (size + len(stream))
            r.mem[off:off + len(stream)] = stream
            src = r.inv.buf_get_by_data(r.mm, r.base + off, len(stream))
            dst = r.inv.buf_get_by_addr(r.mm, r.base + off + len(stream), size)
            tasks.append(comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst))
            dsts.append(dst)
        # Reference: the stream's blocks decoded by LZ4_decompress_safe into a preallocated buffer.
        blocks, pos = [], 0
        while pos < len(stream):
            word = int.from_bytes(stream[pos:pos + 4], "little")
            n = word & 0x7FFFFFFF
            blocks.append((word, ctypes.create_string_buffer(stream[pos + 4:pos + 4 + n], n)))
            pos += 4 + n
        outs = [ctypes.addressof(ctypes.c_char.from_buffer(r.mem, i * (size + len(stream)) + len(stream)))
                for i in range(INFLIGHT)]

        def ref() -> int:
            assert lib is not None
            for out_addr in outs:  # into the same destinations the tasks use
                o = 0
                for word, blk in blocks:
                    if word & 0x80000000:
                        ctypes.memmove(out_addr + o, blk, len(blk))
                        o += len(blk)
                    else:
                        o += lib.safe(blk, out_addr + o, len(blk), size - o)
            return INFLIGHT * size

        def ours() -> int:
            r.run(tasks, dsts)
            return INFLIGHT * size

        a, b = best_rate(ours, budget), best_rate(ref, budget)
        label = "64 KiB" if size < 1 << 20 else "1 MiB"
        rows.append(f"| Compress lz4_stream | {label} | {a / 1e9:.2f} | {b / 1e9:.2f} | {a / b:.2f} |")
        del outs
        r.close()
    return rows


def dma_rows(budget: float) -> list[str]:
    rows = []
    for size in (64 << 10, 1 << 20):
        r = Rig(2 * INFLIGHT * size)
        dma = d.Dma(r.dev)
        r.pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(r.cb, r.err, INFLIGHT)
        dma.start()
        tasks, dsts = [], []
        for i in range(INFLIGHT):
            src = r.inv.buf_get_by_data(r.mm, r.base + i * size, size)
            dst = r.inv.buf_get_by_addr(r.mm, r.base + (INFLIGHT + i) * size, size)
            tasks.append(dma.task_memcpy_alloc_init(src, dst))
            dsts.append(dst)
        view = memoryview(r.mem)

        def ref() -> int:
            for i in range(INFLIGHT):  # the same buffers the tasks copy
                view[(INFLIGHT + i) * size:(INFLIGHT + i + 1) * size] = view[i * size:(i + 1) * size]
            return INFLIGHT * size

        def ours() -> int:
            r.run(tasks, dsts)
            return INFLIGHT * size

        a, b = best_rate(ours, budget), best_rate(ref, budget)
        label = "64 KiB" if size < 1 << 20 else "1 MiB"
        rows.append(f"| Dma memcpy | {label} | {a / 1e9:.2f} | {b / 1e9:.2f} | {a / b:.2f} |")
        del view
        r.close()
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--time", type=float, default=0.1, help="seconds per measurement round")
    args = p.parse_args()
    print(f"EC kernel: {ec_kernels.select_kernel()}")
    print("| task | size | doca_py GB/s | reference GB/s | ratio |")
    print("|---|---|---:|---:|---:|")
    for row in ec_rows(args.time) + lz4_rows(args.time) + dma_rows(args.time):
        print(row, flush=True)


if __name__ == "__main__":
    main()
