"""Decompression throughput: doca_py's LZ4-stream and deflate kernels vs their references.

Run ``python benchmarks/bench_compress.py`` (a few seconds; ``--time`` raises the
per-figure budget). GB/s of *uncompressed* bytes per call, best of five interleaved rounds, on
log-like text (compressed/uncompressed ~0.5 for LZ4). References measured in the same run:

* ``lz4.block.decompress`` returning a new bytes object per block (python-lz4's API),
* a plain memory copy of the uncompressed size into the same destination (the ceiling),
* ``isal_zlib.decompress`` / ``isal_zlib.compress`` returning bytes, for deflate.

"ratio" is ours / lz4.block for LZ4 and ours / isal_zlib for deflate.
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import sys

import lz4.block
from isal import isal_zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import rates  # noqa: E402
from doca_py.engines import deflate, lz4_stream  # noqa: E402

SIZES = [4 << 10, 64 << 10, 1 << 20]


_WORDS = (
    b"the of and to in is was for that with as on by at from his her which this be are or an had not "
    b"but have were they one all their there been has storage block target initiator parity offload "
    b"request response completed buffer 0 1 2 3 4 5 6 7 8 9 10 42 100 4096 65536 error ok read write"
).split()


def text(n: int, seed: int = 1) -> bytes:
    """Log-like text from a small vocabulary (LZ4 ratio ~0.5-0.6, deflate ~0.4)."""
    rng = random.Random(seed)
    out = bytearray()
    while len(out) < n:
        out += rng.choice(_WORDS) + (b"\n" if rng.random() < 0.08 else b" ")
    return bytes(out[:n])


def label(n: int) -> str:
    return f"{n >> 10} KiB" if n < (1 << 20) else f"{n >> 20} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=0.01, help="seconds per round per figure (default 0.01)")
    args = ap.parse_args()
    t = args.time
    lib = lz4_stream._lib()
    print(f"LZ4 decode path: {'ctypes ' + lib.path if lib else 'lz4.block fallback (copy)'}\n")

    print("| LZ4 stream | block | ratio C/U | ours into dst GB/s | lz4.block bytes GB/s | ratio | memcpy GB/s | ours / memcpy |")
    print("|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        plain = text(n)
        stream = lz4_stream.compress_stream(plain)
        dst = bytearray(n)
        # The reference decodes the very same block payloads (parsed from the stream:
        # liblz4's frame and block APIs do not emit identical bytes above 64 KiB - 11),
        # each into a fresh bytes object.
        blocks: list[tuple[bytes, int]] = []
        pos = 0
        while pos < len(stream):
            (word,) = struct.unpack_from("<I", stream, pos)
            size = word & 0x7FFFFFFF
            assert not word & lz4_stream.STORED_FLAG, "corpus should compress"
            blocks.append((stream[pos + 4 : pos + 4 + size], min(64 << 10, n - len(blocks) * (64 << 10))))
            pos += 4 + size
        dmv = memoryview(dst)
        src = memoryview(plain)

        def ours() -> None:
            lz4_stream.decompress_stream_into(stream, dst)

        def ref() -> None:
            for raw, size in blocks:
                lz4.block.decompress(raw, uncompressed_size=size)

        def copy() -> None:
            dmv[:] = src

        r_ours, r_ref, r_copy = rates([ours, ref, copy], n, t)
        print(
            f"| decompress | {label(n)} | {len(stream) / n:.2f} | {r_ours:.2f} | {r_ref:.2f} | "
            f"{r_ours / r_ref:.2f} | {r_copy:.2f} | {r_ours / r_copy:.3f} |"
        )
        assert dst == plain

    print()
    print("| deflate (ISA-L, raw) | block | ratio C/U | ours GB/s | isal_zlib bytes GB/s | ratio |")
    print("|---|---|---|---|---|---|")
    for n in SIZES:
        plain = text(n)
        comp_buf = bytearray(2 * n + 1024)
        clen = deflate.compress_deflate(plain, comp_buf)
        comp = bytes(comp_buf[:clen])
        dst = bytearray(n)

        def c_ours() -> None:
            deflate.compress_deflate(plain, comp_buf)

        def c_ref() -> None:
            isal_zlib.compress(plain, 1, -15)

        def d_ours() -> None:
            deflate.decompress_deflate_into(comp, dst)

        def d_ref() -> None:
            isal_zlib.decompress(comp, -15, n)

        for op, a, b in (("compress", c_ours, c_ref), ("decompress", d_ours, d_ref)):
            ra, rb = rates([a, b], n, t)
            print(f"| {op} | {label(n)} | {clen / n:.2f} | {ra:.2f} | {rb:.2f} | {ra / rb:.2f} |")
        assert dst == plain


if __name__ == "__main__":
    main()
