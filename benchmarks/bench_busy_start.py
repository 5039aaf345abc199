"""Process start on a busy machine: a buffered file's open/read/close, and ``import doca_py`` in a new
process, per interpreter, on a quiet machine and beside CPU burners, as ratios to this interpreter
measured in the same run.

Why: CPython 3.13's free-threaded build closes a buffered file by taking the file's lock a second time
while its own ``close()`` holds it (``close()`` calls ``flush()``, both critical sections on the same
object). 3.13 has no fast path for a lock the thread already holds (3.14 has one, gh-114203), so the
second take spins 40 times through ``sched_yield()`` before it parks and the first lock is let go. On an
idle core a ``sched_yield()`` returns at once; beside runnable processes each one hands the core away.
Every module import reads its file that way, so a process of a free-threaded 3.13 starts up to hundreds
of times slower when the CPU is contended: the suite's multi-process tests saw storage targets, comch
children and examples silent for 20-30 s. This script measures it on the interpreters given.

* ``close``: µs per ``open(path, "rb")`` / ``read(64)`` / ``close()`` of a small file (median of five
  rounds of ``--closes``);
* ``import``: seconds for a new process to run ``import doca_py`` (median of ``--starts``).

Each measure runs quiet, then beside ``--burners`` busy loops (default: two per CPU), per interpreter in
turn. A free-threaded interpreter runs with ``PYTHON_GIL=0``.

    .venv/bin/python benchmarks/bench_busy_start.py                 # + .venv-3.13t when present
    .venv/bin/python benchmarks/bench_busy_start.py --python /opt/python3.13t/bin/python3.13t
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tasks  # noqa: E402 - the checkout's own interpreter probe

_CLOSES = """
import statistics, sys, time
path, n = sys.argv[1], int(sys.argv[2])
rounds = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(n):
        with open(path, "rb") as f:
            f.read(64)
    rounds.append((time.perf_counter() - t0) / n)
print(statistics.median(rounds) * 1e6)
"""

def _describe(python: str) -> tuple[str, bool]:
    """*python*'s row label (version, ``t`` for a free-threaded build, where it is) and whether it is
    free-threaded."""
    py, why = tasks.probe(python)
    if py is None:
        raise SystemExit(f"{python}: {why}")
    name = os.path.relpath(python, ROOT) if python.startswith(str(ROOT)) else python
    return f"{'.'.join(map(str, py.version))}{'t' if py.free_threaded else ''} {name}", py.free_threaded


def _env(free_threaded: bool) -> dict[str, str]:
    env = dict(os.environ)
    if free_threaded:
        env["PYTHON_GIL"] = "0"
    return env


def _close_us(python: str, env: dict[str, str], path: str, n: int) -> float:
    out = subprocess.run([python, "-c", _CLOSES, path, str(n)], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


def _import_s(python: str, env: dict[str, str], starts: int) -> float:
    times = []
    for _ in range(starts):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", "import doca_py"], env=env, cwd=ROOT, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


#: A burner ends by itself after this many seconds, should this script be killed before it kills them.
BURN_LIMIT = 900
_BURN = f"import time\nend = time.monotonic() + {BURN_LIMIT}\nwhile time.monotonic() < end:\n    pass\n"


class _Burners:
    """Busy loops, each in a process of its own, killed on exit."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> _Burners:
        self.procs = [subprocess.Popen([sys.executable, "-c", _BURN, "doca_py-busy-start"]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--python", action="append", default=[],
                    help="an interpreter to measure (repeatable); this one is always the reference")
    ap.add_argument("--burners", type=int, default=2 * (os.cpu_count() or 1),
                    help="busy loops beside the busy rows (default: two per CPU)")
    ap.add_argument("--closes", type=int, default=200, help="open/read/close per round")
    ap.add_argument("--starts", type=int, default=3, help="process starts per import measure")
    ap.add_argument("--only-this", action="store_true", help="measure this interpreter only")
    args = ap.parse_args(argv)
    pythons = [sys.executable, *args.python]
    ft_venv = ROOT / ".venv-3.13t" / "bin" / "python"
    if not args.python and not args.only_this and ft_venv.exists():
        pythons.append(str(ft_venv))
    with tempfile.NamedTemporaryFile(prefix="doca_py_close_") as small:
        small.write(os.urandom(4096))
        small.flush()
        rows: list[tuple[str, str, float, float]] = []
        for busy in (False, True):
            for python in pythons:
                label, ft = _describe(python)
                env = _env(ft)
                with _Burners(args.burners) if busy else contextlib.nullcontext():
                    rows.append((label, "busy" if busy else "quiet", _close_us(python, env, small.name, args.closes),
                                 _import_s(python, env, args.starts)))
    ref = {cond: (c, i) for label, cond, c, i in rows if label == rows[0][0]}
    print(f"{os.cpu_count()} CPUs, busy = beside {args.burners} busy loops; ratios to {rows[0][0]} in the same "
          "condition")
    print(f"{'python':<44} {'machine':<6} {'close µs':>9} {'ratio':>8} {'import s':>9} {'ratio':>7}")
    for label, cond, c, i in rows:
        rc, ri = ref[cond]
        print(f"{label:<44} {cond:<6} {c:>9.1f} {c / rc:>7.1f}× {i:>9.2f} {i / ri:>6.1f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
