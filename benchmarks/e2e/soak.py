"""Soak: the topology's read throughput test for a long time, with the memory of every process.

    .venv/bin/python benchmarks/e2e/soak.py --seconds 120
    .venv/bin/python benchmarks/e2e/soak.py --seconds 600 --interval 5 --warmup 60 --json soak.json

The five processes start as ``python -m apps.topology`` starts them (three
``apps.storage_target``, ``apps.gga_offload``, ``apps.initiator``; emulated backend) with a read
throughput test whose run limit is never reached. Once the initiator logs "data path ready",
the resident set size (``VmRSS`` of ``/proc/<pid>/status``) of all five is sampled every
``--interval`` seconds for ``--seconds`` seconds, with the initiator's progress count (IO/s).
Then every process is stopped with SIGINT. As ``run.py``, the emulator's strict mode is off
unless ``DOCA_PY_STRICT`` says otherwise.

The report gives, per process, the RSS at the end of ``--warmup`` (the reference), at the end and
the largest, the growth after the warm-up (end − reference, and the largest sample − reference)
and the least-squares slope of the samples after the warm-up (KiB per minute). Flat memory is a
growth of a few hundred KiB at most, with no trend: a leak of even 16 bytes per IO would show
as megabytes per minute at these rates.

``--max-growth-kib N`` makes the exit status 1 if a process grew by more than *N* KiB after
the warm-up (largest sample − reference), or if a process exited during the soak.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from apps.topology import Proc, Test, build_parser as topology_parser, environment, prepare, start, topology  # noqa: E402

__all__ = ["PROCS", "SoakResult", "ProcMemory", "rss_kib", "soak", "main"]

PROCS = ("data_1", "data_2", "data_p", "bridge", "initiator")
RUN_LIMIT = 2_000_000_000
"""Transactions per initiator worker: never reached in a soak."""
_READY = "data path ready"
_PROGRESS = re.compile(r"progress: .*?\((\d+)/\d+ transactions\)")


def rss_kib(pid: int) -> int:
    """The resident set size of *pid* in KiB (``VmRSS``)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _slope_per_min(times: Sequence[float], values: Sequence[int]) -> float:
    """Least-squares slope of *values* over *times* (seconds), per minute."""
    n = len(times)
    if n < 2:
        return 0.0
    mt, mv = sum(times) / n, sum(values) / n
    var = sum((t - mt) ** 2 for t in times)
    if var == 0:
        return 0.0
    return 60.0 * sum((t - mt) * (v - mv) for t, v in zip(times, values)) / var


@dataclass
class ProcMemory:
    """The RSS samples of one process and what they show."""

    name: str
    samples_kib: list[int] = field(default_factory=list)
    start_kib: int = 0          # first sample (data path just started)
    reference_kib: int = 0      # last sample of the warm-up
    end_kib: int = 0
    max_kib: int = 0
    growth_kib: int = 0         # end - reference
    max_growth_kib: int = 0     # max after the warm-up - reference
    slope_kib_per_min: float = 0.0


@dataclass
class SoakResult:
    """One soak."""

    seconds: float
    interval: float
    warmup: float
    times_s: list[float]
    operations: list[int]
    procs: dict[str, ProcMemory]
    exited: list[str]

    @property
    def iops(self) -> float:
        """IO/s after the warm-up (from the initiator's progress lines)."""
        after = [(t, n) for t, n in zip(self.times_s, self.operations) if t >= self.warmup]
        if len(after) < 2 or after[-1][0] <= after[0][0]:
            return 0.0
        return (after[-1][1] - after[0][1]) / (after[-1][0] - after[0][0])

    def worst_growth_kib(self) -> int:
        return max((p.max_growth_kib for p in self.procs.values()), default=0)

    def table(self) -> str:
        iops = f"{self.iops:,.0f}".replace(",", " ")
        rows = [f"soak: {self.seconds:g} s of read_throughput_test, RSS every {self.interval:g} s, warm-up "
                f"{self.warmup:g} s; {self.operations[-1] if self.operations else 0} IOs, {iops} IO/s after the "
                f"warm-up",
                "",
                f"| {'process':<9} | {'start':>9} | {'after warm-up':>13} | {'end':>9} | {'max':>9} | "
                f"{'growth':>8} | {'max growth':>10} | {'slope':>12} |",
                f"|{'-' * 11}|{'-' * 11}|{'-' * 15}|{'-' * 11}|{'-' * 11}|{'-' * 10}|{'-' * 12}|{'-' * 14}|"]
        for p in self.procs.values():
            rows.append(f"| {p.name:<9} | {_mib(p.start_kib):>9} | {_mib(p.reference_kib):>13} | "
                        f"{_mib(p.end_kib):>9} | {_mib(p.max_kib):>9} | {p.growth_kib:>+5} KiB | "
                        f"{p.max_growth_kib:>+7} KiB | {p.slope_kib_per_min:>+6.1f} KiB/min |")
        if self.exited:
            rows.append(f"exited during the soak: {', '.join(self.exited)}")
        return "\n".join(rows)

    def to_json(self) -> dict[str, object]:
        return {"seconds": self.seconds, "interval": self.interval, "warmup": self.warmup, "iops": self.iops,
                "times_s": self.times_s, "operations": self.operations, "exited": self.exited,
                "procs": {k: asdict(v) for k, v in self.procs.items()}}


def _mib(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def _progress(initiator: Proc, start: int) -> tuple[int, int | None]:
    """(next line index, the last progress count seen from line *start* on)."""
    lines = initiator.lines
    count = None
    i = start
    while i < len(lines):
        m = _PROGRESS.search(lines[i])
        if m:
            count = int(m.group(1))
        i += 1
    return i, count


def soak(seconds: float, *, interval: float = 5.0, warmup: float = 30.0, block_count: int = 64,
         block_size: int = 4096, workdir: Path | None = None, progress: bool = True) -> SoakResult:
    """Run the topology's read throughput test for *seconds* and sample the RSS of its five
    processes every *interval* seconds (see the module documentation)."""
    own = workdir is None
    tmp = tempfile.TemporaryDirectory(prefix="doca_py_soak_") if own else None
    wd = Path(tmp.name) if tmp is not None else workdir
    assert wd is not None
    wd.mkdir(parents=True, exist_ok=True)
    try:
        args = topology_parser().parse_args(["--block-count", str(block_count), "--block-size", str(block_size),
                                             "--workdir", str(wd)])
        env = environment()
        env["DOCA_PY_STRICT"] = os.environ.get("DOCA_PY_STRICT", "0")  # as run.py: the data path, not the sanitizer
        plain, files = prepare(args, wd, env)
        test = Test("soak", "read_throughput_test", RUN_LIMIT)
        with topology(wd, env) as topo:
            targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=_READY)
            initiator.wait_marker(_READY, 60)
            procs = dict(zip(PROCS, [*targets, bridge, initiator]))
            mem = {name: ProcMemory(name) for name in PROCS}
            times: list[float] = []
            ops: list[int] = []
            exited: list[str] = []
            t0 = time.monotonic()
            line, count = 0, 0
            while True:
                t = time.monotonic() - t0
                for name, p in procs.items():
                    if p.popen.poll() is not None:
                        if name not in exited:
                            exited.append(name)
                        continue
                    mem[name].samples_kib.append(rss_kib(p.popen.pid))
                if exited:
                    break
                line, seen = _progress(initiator, line)
                count = seen if seen is not None else count
                times.append(round(t, 3))
                ops.append(count)
                if progress:
                    print(f"  t={t:6.1f} s  IOs={count:>10}  RSS (MiB): "
                          + "  ".join(f"{n}={mem[n].samples_kib[-1] / 1024:.1f}" for n in PROCS),
                          file=sys.stderr, flush=True)
                if t >= seconds:
                    break
                time.sleep(max(0.0, min(interval, seconds - t) - (time.monotonic() - t0 - t)))
        return _summarise(seconds, interval, warmup, times, ops, mem, exited)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _summarise(seconds: float, interval: float, warmup: float, times: list[float], ops: list[int],
               mem: dict[str, ProcMemory], exited: list[str]) -> SoakResult:
    for p in mem.values():
        s = p.samples_kib
        if not s:
            continue
        n = min(len(s), len(times))
        ref_i = max([i for i in range(n) if times[i] <= warmup], default=0)
        after = s[ref_i:n] or s[-1:]
        p.start_kib, p.reference_kib, p.end_kib, p.max_kib = s[0], s[ref_i], s[-1], max(s)
        p.growth_kib = p.end_kib - p.reference_kib
        p.max_growth_kib = max(after) - p.reference_kib
        p.slope_kib_per_min = _slope_per_min(times[ref_i:n], s[ref_i:n])
    return SoakResult(seconds, interval, warmup, times, ops, mem, exited)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks/e2e/soak.py",
                                description="Run the topology's read throughput test for a long time and report "
                                            "the memory (RSS) of its five processes.")
    p.add_argument("--seconds", type=float, default=120.0, help="length of the soak (default: 120)")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between RSS samples (default: 5)")
    p.add_argument("--warmup", type=float, default=30.0,
                   help="seconds after the data path started whose growth is not counted (default: 30)")
    p.add_argument("--block-count", type=int, default=64, help="storage blocks of the sample (default: 64)")
    p.add_argument("--block-size", type=int, default=4096, help="storage block size (default: 4096)")
    p.add_argument("--max-growth-kib", type=int, metavar="N",
                   help="exit status 1 if a process grew by more than N KiB after the warm-up")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the samples and the summary here")
    p.add_argument("--workdir", type=Path, help="keep files and logs here (default: a temporary directory)")
    p.add_argument("--quiet", action="store_true", help="no sample lines on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.seconds <= 0 or args.interval <= 0 or args.warmup < 0 or args.warmup >= args.seconds:
        print("--seconds and --interval must be positive, --warmup from 0 to less than --seconds", file=sys.stderr)
        return 1
    res = soak(args.seconds, interval=args.interval, warmup=args.warmup, block_count=args.block_count,
               block_size=args.block_size, workdir=args.workdir, progress=not args.quiet)
    print(res.table())
    if args.json is not None:
        args.json.write_text(json.dumps(res.to_json(), indent=2) + "\n")
    if res.exited:
        return 1
    if args.max_growth_kib is not None and res.worst_growth_kib() > args.max_growth_kib:
        print(f"memory grew by {res.worst_growth_kib()} KiB after the warm-up (limit {args.max_growth_kib} KiB)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
