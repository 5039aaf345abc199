"""Throughput of the storage topology against transactions in flight and block size.

    .venv/bin/python benchmarks/e2e/sweep.py                       # 1, 8, 64, 256 in flight × 4 KiB, 64 KiB, 1 MiB
    .venv/bin/python benchmarks/e2e/sweep.py --in-flight 1 --in-flight 64 --block-size 4096 --operations 4000
    .venv/bin/python benchmarks/e2e/sweep.py --svg docs/img/throughput-sweep.svg

Each point is one read run of the five-process topology (``read_throughput_test``, emulated
backend, strict mode off), started and measured by ``run.py``'s :func:`run_scenario`; the
initiator keeps ``--transaction-count`` transactions in flight per worker. The initiator caps
that at the number of storage blocks a worker gets (``T_w = min(T, blocks)``), so the sample has
at least as many blocks as the largest in-flight count (``--block-count``). Prints one markdown
table (IO/s, GiB/s, mean latency and CPU per IO of every point) and, with ``--svg``, writes a
self-contained SVG plot (GiB/s against transactions in flight, one line per block size, both
axes logarithmic).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from apps.topology import environment, prepare  # noqa: E402
from benchmarks.e2e import run  # noqa: E402
from benchmarks.e2e.ceiling import LAYOUTS  # noqa: E402

IN_FLIGHT = (1, 8, 64, 256)
BLOCK_SIZES = (4096, 65536, 1 << 20)
_BASE = run.SCENARIOS["read-4k"]


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


Point = tuple[int, int, run.Result]  # (block size, in flight, result)


def table(points: list[Point]) -> str:
    """The markdown table of every point: one row per block size and in-flight count."""
    out = ["| block | in flight | IO/s | GiB/s | mean latency µs | µs CPU per IO, all processes | machine busy |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for bs, n, r in points:
        cpu = sum(r.cpu_s.values()) / r.operations * 1e6
        out.append(f"| {_size(bs)} | {n} | {run._fmt_int(r.iops)} | {r.gibs:.3f} | "
                   f"{run._fmt_int(r.latency_mean_us)} | {cpu:.0f} | {r.machine_busy:.0%} |")
    return "\n".join(out)


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def svg(points: list[Point], title: str) -> str:
    """A self-contained SVG line plot: GiB/s (log) against transactions in flight (log 2)."""
    w, h, left, right, top, bottom = 640, 400, 70, 130, 40, 50
    pw, ph = w - left - right, h - top - bottom
    flights = sorted({n for _, n, _ in points})
    rates = [r.gibs for _, _, r in points if r.gibs > 0]
    if not flights or not rates:
        raise ValueError("nothing to plot")
    y_lo = 10 ** math.floor(math.log10(min(rates)))
    y_hi = 10 ** math.ceil(math.log10(max(rates)))
    if y_hi <= y_lo:
        y_hi = y_lo * 10
    x_lo, x_hi = math.log2(flights[0]), math.log2(flights[-1])

    def x(n: int) -> float:
        return left + (pw * (math.log2(n) - x_lo) / (x_hi - x_lo) if x_hi > x_lo else pw / 2)

    def y(v: float) -> float:
        return top + ph * (1 - (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    e: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>',
    ]
    decade = y_lo
    while decade <= y_hi * 1.0001:
        yy = y(decade)
        e.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" stroke="#ddd"/>')
        e.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{decade:g}</text>')
        decade *= 10
    for n in flights:
        xx = x(n)
        e.append(f'<line x1="{xx:.1f}" y1="{top}" x2="{xx:.1f}" y2="{top + ph}" stroke="#ddd"/>')
        e.append(f'<text x="{xx:.1f}" y="{top + ph + 18}" text-anchor="middle">{n}</text>')
    e.append(f'<text x="{left + pw / 2}" y="{h - 10}" text-anchor="middle">transactions in flight</text>')
    e.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" text-anchor="middle">GiB/s</text>')
    for i, bs in enumerate(sorted({b for b, _, _ in points})):
        colour = _COLOURS[i % len(_COLOURS)]
        series = sorted((n, r.gibs) for b, n, r in points if b == bs and r.gibs > 0)
        path = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in series)
        e.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for n, v in series:
            e.append(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour}">'
                     f'<title>{_size(bs)}, {n} in flight: {v:.3f} GiB/s</title></circle>')
        ly = top + 10 + 20 * i
        e.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 32}" y2="{ly}" stroke="{colour}" '
                 f'stroke-width="2"/>')
        e.append(f'<text x="{left + pw + 38}" y="{ly + 4}">{_size(bs)} blocks</text>')
    e.append("</svg>")
    return "\n".join(e) + "\n"


def _measure(sc: run.Scenario, in_flight: int, args: argparse.Namespace, files: dict[str, Path], plain: Path,
             workdir: Path, env: dict[str, str], pins: dict[str, int]) -> run.Result | str:
    """One point, run again up to ``--retries`` times; a failure is reported by its first line."""
    why = ""
    for _ in range(args.retries + 1):
        try:
            return run.run_scenario(sc, args.operations, files, plain, workdir, env, pins, set(), args.timeout,
                                    initiator_args=("--transaction-count", str(in_flight)))
        except RuntimeError as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if "EXCEPTION" in ln or "failed" in ln]
            why = (lines or [str(exc).splitlines()[0]])[0]
    return why


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks/e2e/sweep.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--in-flight", type=int, action="append", metavar="N",
                   help="transactions in flight per initiator worker (repeatable; default: 1 8 64 256)")
    p.add_argument("--block-size", type=int, action="append", metavar="BYTES",
                   help="storage block size (repeatable; default: 4096 65536 1048576)")
    p.add_argument("--operations", type=int, default=4000, help="initiator transactions per run (default: 4000)")
    p.add_argument("--block-count", type=int,
                   help="storage blocks of the sample (default: the largest in-flight count, at least 64)")
    p.add_argument("--layout", choices=tuple(LAYOUTS), default="one-core",
                   help="CPU layout of the workers, as run.py's (default: one-core, everything on cpu 0)")
    p.add_argument("--retries", type=int, default=1,
                   help="run a point that failed again, up to this many times; then it is left out (default: 1)")
    p.add_argument("--svg", type=Path, help="write the plot here (a self-contained SVG)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per run (default: 300)")
    p.add_argument("--workdir", type=Path, help="keep files and logs here (default: a temporary directory)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    flights = sorted(set(args.in_flight or IN_FLIGHT))
    sizes = sorted(set(args.block_size or BLOCK_SIZES))
    if min(flights) < 1 or min(sizes) < 1:
        print("--in-flight and --block-size must be positive", file=sys.stderr)
        return 2
    blocks = args.block_count or max(64, max(flights))
    env = environment()
    env["DOCA_PY_STRICT"] = os.environ.get("DOCA_PY_STRICT", "0")  # measure the data path, not the sanitizer
    pins = LAYOUTS[args.layout]
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="doca_py_sweep_")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    points: list[Point] = []
    failed: list[tuple[int, int, str]] = []
    try:
        for bs in sizes:
            d = workdir / f"bs{bs}"
            d.mkdir(exist_ok=True)
            ns = argparse.Namespace(input=None, block_size=bs, block_count=blocks, matrix_type="vandermonde",
                                    timeout=args.timeout)
            plain, files = prepare(ns, d, env)
            sc = replace(_BASE, key=f"read-{bs}", title=f"read {_size(bs)}", block_size=bs, ceiling=False)
            for n in flights:
                r = _measure(sc, n, args, files, plain, d, env, pins)
                if isinstance(r, str):
                    failed.append((bs, n, r))
                    print(f"{_size(bs)}, {n} in flight: FAILED: {r}", flush=True)
                    continue
                points.append((bs, n, r))
                print(f"{_size(bs)}, {n} in flight: {run._fmt_int(r.iops)} IO/s, {r.gibs:.3f} GiB/s, "
                      f"mean latency {run._fmt_int(r.latency_mean_us)} µs", flush=True)
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(f"{args.operations} read transactions per run, {blocks} blocks, layout {args.layout}, "
          f"{os.cpu_count()} CPUs:")
    print()
    print(table(points))
    for bs, n, why in failed:
        print(f"\n{_size(bs)}, {n} in flight: no figure ({args.retries + 1} runs failed): {why}")
    if args.svg is not None and points:
        args.svg.parent.mkdir(parents=True, exist_ok=True)
        args.svg.write_text(svg(points, f"Topology read throughput ({args.operations} transactions per point)"))
        print(f"\nplot written to {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
