"""Emulated task round trip: submit → progress → completion callback, per task.

Reference, measured in the same run: a bare Python function call loop (the floor
of any callback-based design in CPython). Prints ns per task and the ratio.

    .venv/bin/python benchmarks/bench_task_roundtrip.py [--tasks N] [--batch B]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("DOCA_PY_IMPL", "emulated")

import doca_py as d  # noqa: E402


def bare_calls(n: int) -> float:
    def cb(task: object, ud: object, cud: object) -> None:
        pass

    t0 = time.perf_counter()
    for _ in range(n):
        cb(None, None, None)
    return (time.perf_counter() - t0) / n


def round_trips(n: int, batch: int, size: int) -> float:
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe, d.BufInventory(2 * batch) as inv:
        mm = d.Mmap()
        mm.allocate(2 * batch * 4096)
        mm.add_dev(dev)
        mm.start()
        base, _ = mm.get_memrange()
        done = [0]

        def ok(task: d.DmaTaskMemcpy, ud: object, cud: object) -> None:
            done[0] += 1

        def err(task: d.DmaTaskMemcpy, ud: object, cud: object) -> None:
            raise RuntimeError(task.get_status())

        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(ok, err, batch)
        dma.start()
        tasks = []
        for i in range(batch):
            src = inv.buf_get_by_data(mm, base + i * 4096, size)
            dst = inv.buf_get_by_addr(mm, base + (batch + i) * 4096, 4096)
            tasks.append((dma.task_memcpy_alloc_init(src, dst), dst))
        progress = pe.progress
        rounds = n // batch
        t0 = time.perf_counter()
        per_window = 4096 // size  # destinations grow; re-aim them only when full
        for r in range(rounds):
            if r % per_window == 0:
                for _task, dst in tasks:
                    dst.reset_data_len()
            for task, _dst in tasks:
                task.submit()
            while progress():
                pass
        elapsed = time.perf_counter() - t0
        assert done[0] == rounds * batch
        for task, dst in tasks:
            task.free()
            task.get_src().dec_refcount()
            dst.dec_refcount()
        pe.close()
        mm.close()
    return elapsed / (rounds * batch)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=64, help="bytes copied per task")
    args = p.parse_args()
    ref = bare_calls(args.tasks)
    rt = round_trips(args.tasks, args.batch, args.size)
    rt1 = round_trips(args.tasks // 4, 1, args.size)
    print("| measure | ns per task | × bare call |")
    print("|---|---:|---:|")
    print(f"| bare Python call (reference) | {ref * 1e9:.0f} | 1.0 |")
    print(f"| round trip, {args.batch} in flight, {args.size} B memcpy | "
          f"{rt * 1e9:.0f} | {rt / ref:.1f} |")
    print(f"| round trip, 1 in flight | {rt1 * 1e9:.0f} | {rt1 / ref:.1f} |")


if __name__ == "__main__":
    main()
