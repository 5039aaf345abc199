"""A buffer per IO: take a ``Buf``, touch it, free it, through the public API (emulated backend).

Each allocation gets its own wrapper (a stale reference kept past the free can never act on the next
holder's buffer); this measures what that costs where it matters, an application taking a buffer per IO:

* ``BufPool``: ``buf_alloc`` → ``set_data`` → ``dec_refcount``;
* ``BufInventory``: ``buf_get_by_data`` → ``get_data_len`` → ``dec_refcount``;

against a three-argument Python call (``bare call``) measured in the same run, interleaved with the
loops (best of ``--repeats``, thread CPU time). Run it at two commits to compare: the ratios hold.

    .venv/bin/python benchmarks/bench_buf_alloc.py [--n N] [--repeats R]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def best_ns(loops: list[Callable[[], int]], repeats: int) -> list[float]:
    best = [float("inf")] * len(loops)
    for loop in loops:
        loop()
    for _ in range(repeats):
        for i, loop in enumerate(loops):
            t0 = time.thread_time_ns()
            k = loop()
            best[i] = min(best[i], (time.thread_time_ns() - t0) / k)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    import doca_py as d

    n = args.n

    def bare() -> int:
        def cb(a: object, b: object, c: object) -> None:
            pass
        for _ in range(n):
            cb(None, None, None)
        return n

    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Mmap() as mm, d.BufInventory(4) as inv:
        mm.allocate(1 << 16)
        mm.add_dev(dev)
        mm.start()
        base, _ = mm.get_memrange()
        with d.BufPool(4, 4096, mm) as pool:
            def pool_loop() -> int:
                alloc = pool.buf_alloc
                for _ in range(n):
                    b = alloc()
                    b.set_data(b.get_head(), 64)
                    b.dec_refcount()
                return n

            def inv_loop() -> int:
                get = inv.buf_get_by_data
                for _ in range(n):
                    b = get(mm, base, 64)
                    b.get_data_len()
                    b.dec_refcount()
                return n

            ns = best_ns([bare, pool_loop, inv_loop], args.repeats)
    print(f"{'bare call (reference)':<44} {ns[0]:8.0f} ns   1.00x")
    for name, v in (("BufPool alloc, set_data, dec_refcount", ns[1]),
                    ("BufInventory get_by_data, get, dec_refcount", ns[2])):
        print(f"{name:<44} {v:8.0f} ns {v / ns[0]:6.2f}x")


if __name__ == "__main__":
    main()
