"""What live statistics cost: the read-4k topology with ``--stats-interval`` on in all five processes
against the same topology with it off (the default), run after run in one session, as ratios.

    .venv/bin/python benchmarks/e2e/live_stats_cost.py --operations 10000 --repeat 3

Each repeat runs "off" then "on" back to back (the machine's drift hits both alike); the medians of
IO/s and of the CPU time per IO (all processes) are compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from apps.topology import environment, prepare  # noqa: E402
from benchmarks.e2e.run import LAYOUTS, SCENARIOS, Result, run_scenario  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--operations", type=int, default=10_000, help="initiator transactions per run (default 10000)")
    p.add_argument("--repeat", type=int, default=3, help="off/on pairs (default 3)")
    p.add_argument("--interval", type=int, default=1, help="--stats-interval of the 'on' runs (default 1)")
    p.add_argument("--format", choices=("text", "json"), default="json", help="--stats-format of the 'on' runs")
    p.add_argument("--timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    sc = SCENARIOS["read-4k"]
    env = environment()
    env["DOCA_PY_STRICT"] = os.environ.get("DOCA_PY_STRICT", "0")
    on = ("--stats-interval", str(args.interval), "--stats-format", args.format)
    with tempfile.TemporaryDirectory(prefix="doca_py_live_stats_") as tmp:
        ns = argparse.Namespace(input=None, block_size=sc.block_size, block_count=64, matrix_type="vandermonde",
                                timeout=args.timeout, bridge="gga-offload")
        plain, files = prepare(ns, Path(tmp), env)
        runs: dict[str, list[Result]] = {"off": [], "on": []}
        for i in range(args.repeat):
            for mode in ("off", "on"):
                extra = on if mode == "on" else ()
                r = run_scenario(sc, args.operations, files, plain, Path(tmp), env, LAYOUTS["one-core"], set(),
                                 args.timeout, initiator_args=extra, bridge_args=extra,
                                 target_args={role: extra for role in ("data_1", "data_2", "data_p")})
                runs[mode].append(r)
                print(f"run {i + 1} stats {mode}: {r.iops:,.0f} IO/s, {r.cpu_us_per_io('all'):.1f} µs CPU per IO",
                      flush=True)
    iops = {m: statistics.median(r.iops for r in rs) for m, rs in runs.items()}
    cpu = {m: statistics.median(r.cpu_us_per_io('all') for r in rs) for m, rs in runs.items()}
    print()
    print(f"read 4 KiB, {args.operations} transactions, median of {args.repeat} pairs, stats every {args.interval} s "
          f"({args.format}) in all five processes:")
    print()
    print("| | stats off | stats on | on ÷ off |")
    print("|---|---:|---:|---:|")
    print(f"| IO/s | {iops['off']:,.0f} | {iops['on']:,.0f} | {iops['on'] / iops['off']:.3f} |")
    print(f"| CPU µs per IO (all processes) | {cpu['off']:.1f} | {cpu['on']:.1f} | {cpu['on'] / cpu['off']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
