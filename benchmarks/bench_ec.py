"""Erasure-coding throughput: doca_py's EC kernels vs ISA-L's ec_encode_data called directly.

Run ``python benchmarks/bench_ec.py`` (a few seconds; ``--time`` raises the per-figure
budget). Figures are GB/s of *data* (k blocks) per call, best of five interleaved rounds. The
reference ("isal C") calls ``ec_encode_data`` through ctypes with tables and pointer
arrays built beforehand, so it is the kernel plus one foreign call; "ratio" is
selected kernel / reference in the same run. Recover regenerates the first
min(m, 2) data blocks from the first k survivors.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import rates  # noqa: E402
from doca_py.engines import ec, gf256  # noqa: E402

SHAPES = [(2, 1), (4, 2), (8, 3)]
SIZES = [4 << 10, 64 << 10, 1 << 20]


def isal_direct(rows: bytes, srcs: list[bytearray], dsts: list[bytearray], n: int) -> Callable[[], object] | None:
    path = ec.isal_library_path()
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    k, r = len(srcs), len(dsts)
    tbl = (ctypes.c_ubyte * (32 * k * r))()
    lib.ec_init_tables(k, r, (ctypes.c_ubyte * len(rows)).from_buffer_copy(rows), tbl)
    sp = (ctypes.c_void_p * k)(*(ctypes.addressof(ctypes.c_char.from_buffer(s)) for s in srcs))
    dp = (ctypes.c_void_p * r)(*(ctypes.addressof(ctypes.c_char.from_buffer(d)) for d in dsts))
    call = lib.ec_encode_data
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    call.restype = None
    keep = (srcs, dsts)  # the pointer arrays hold raw addresses: keep the buffers alive

    def run() -> None:
        call(n, k, r, tbl, sp, dp)
        assert keep

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=0.01, help="seconds per round per figure (default 0.01)")
    ap.add_argument("--matrix", choices=["vandermonde", "cauchy"], default="cauchy")
    args = ap.parse_args()
    gen = gf256.gen_cauchy1_matrix if args.matrix == "cauchy" else gf256.gen_rs_matrix
    selected = ec.select_kernel()
    others = [kname for kname in ec.available_kernels() if kname != selected]
    print(f"ISA-L library: {ec.isal_library_path() or 'not found'}; selected kernel: {selected}; "
          f"matrix: {args.matrix}\n")
    cols = ["op", "k+m", "block", f"{selected} GB/s", "isal C GB/s", "ratio", *(f"{o} GB/s" for o in others)]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for k, m in SHAPES:
        enc = gen(k, m)
        for n in SIZES:
            data = [bytearray(os.urandom(n)) for _ in range(k)]
            parity = [bytearray(n) for _ in range(m)]
            prows = enc[k * k :]
            ec.encode(prows, data, parity)
            blocks = data + parity
            missing = list(range(min(m, 2)))
            avail = {i: b for i, b in enumerate(blocks) if i not in missing}
            outs = [bytearray(n) for _ in missing]
            survivors = gf256.default_survivors(k, m, missing)
            dec_rows = gf256.decode_rows(enc, k, survivors, missing)
            budget = args.time if n < (1 << 20) or k < 8 else args.time * 2
            for op in ("encode", "recover"):
                if op == "encode":
                    def ours(kern: str) -> Callable[[], object]:
                        return lambda: ec.encode(prows, data, parity, kernel=kern)
                    ref = isal_direct(prows, data, parity, n)
                else:
                    def ours(kern: str) -> Callable[[], object]:
                        return lambda: ec.recover(enc, k, avail, missing, outs, kernel=kern)
                    ref = isal_direct(dec_rows, [bytearray(blocks[i]) for i in survivors], outs, n)
                fns = [ours(selected)] + ([ref] if ref else [])
                measured = rates(fns, k * n, budget)
                sel = measured[0]
                ref_rate = measured[1] if ref else float("nan")
                extra = []
                for o in others:
                    slow = o == "pure" and n * k >= (1 << 22)  # keep the default run short
                    extra.append(f"{rates([ours(o)], k * n, budget / 4 if slow else budget, 2)[0]:.2f}")
                ratio = f"{sel / ref_rate:.2f}" if ref else "n/a"
                ref_s = f"{ref_rate:.2f}" if ref else "n/a"
                label = f"{n >> 10} KiB" if n < (1 << 20) else f"{n >> 20} MiB"
                print(f"| {op} | {k}+{m} | {label} | {sel:.2f} | {ref_s} | {ratio} | " + " | ".join(extra) + " |")


if __name__ == "__main__":
    main()
