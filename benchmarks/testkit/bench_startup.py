"""What a two-sided test costs to start, per start method, as ratios measured in the same run.

* **One run**: wall time of ``DocaPair.run`` with two trivial sides (each returns its role), in
  this process, for each start method, best of ``--repeats`` (the methods take turns). The
  reference is ``start_method="fork"`` (a copy of this process: the cheapest start there is).
  ``warm`` (the default) forks from the session's zygote; its first run, which starts the zygote,
  is reported apart.
* **Sessions**: wall time of a pytest session of ``TESTS`` trivial ``doca_pair`` tests, serially
  with each start method and with ``-n 2`` (pytest-xdist), best of ``--repeats``, against the
  serial ``fork`` session.
* **In a test, absolute**: the wall time of a trivial ``DocaPair.run`` inside a pytest test, per start
  method, under ``PYTHONDONTWRITEBYTECODE=1`` (pytest's assertion rewriter then caches nothing: a side
  that imports what it does not use pays for it there), best of ``--repeats``. The bound, ``BOUND`` s on
  every start method, is checked when the load average is at most ``BOUND_LOAD`` (exit status 1 if a
  method exceeds it; above that load the times are printed without a verdict).

    .venv/bin/python benchmarks/testkit/bench_startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

TESTS = 20
METHODS = ("fork", "warm", "spawn")
BOUND = 0.5
"""Seconds a trivial two-sided test may take on every start method (issue 35), at a load of at most BOUND_LOAD."""
BOUND_LOAD = 4.0
_IN_TEST = '''
import time
import pytest


def host(side):
    return side.role


def dpu(side):
    return side.role


@pytest.mark.parametrize("method", {methods!r})
def test_trivial(doca_pair, method):
    t0 = time.perf_counter()
    assert doca_pair.run(host, dpu, start_method=method) == ("host", "dpu")
    print(f"\\nTIME {{method}} {{time.perf_counter() - t0:.6f}}")
'''
_TEST = '''
import os
import pytest

METHOD = os.environ["BENCH_START_METHOD"]


def host(side):
    return side.role


def dpu(side):
    return side.role


@pytest.mark.parametrize("n", range({tests}))
def test_trivial(doca_pair, n):
    assert doca_pair.run(host, dpu, start_method=METHOD) == ("host", "dpu")
'''


def trivial(side: object) -> str:
    return str(getattr(side, "role"))


def one_run(repeats: int) -> tuple[dict[str, float], float]:
    """Best seconds of one ``DocaPair.run`` per method, and the first warm run (it starts the zygote)."""
    os.environ["DOCA_PY_IMPL"] = "emulated"
    from doca_py.testing import DocaPair, Knobs, warm

    pair = DocaPair(Knobs(seed=1))
    warm.stop()
    t0 = time.perf_counter()
    pair.run(trivial, trivial, start_method="warm")
    first = time.perf_counter() - t0
    best = dict.fromkeys(METHODS, float("inf"))
    with warnings.catch_warnings():  # Python 3.12+ warns when a threaded process forks
        warnings.simplefilter("ignore", DeprecationWarning)
        for _ in range(repeats):
            for m in METHODS:
                t0 = time.perf_counter()
                assert pair.run(trivial, trivial, start_method=m) == ("host", "dpu")
                best[m] = min(best[m], time.perf_counter() - t0)
    warm.stop()
    return best, first


def sessions(repeats: int) -> dict[tuple[str, bool], float]:
    """Best wall seconds of the TESTS-test session per (method, with -n 2)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_")}
    env["DOCA_PY_IMPL"] = "emulated"
    runs = [(m, False) for m in METHODS] + [(m, True) for m in ("fork", "warm")]
    best = dict.fromkeys(runs, float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_trivial_pairs.py").write_text(_TEST.replace("{tests}", str(TESTS)))
        for _ in range(repeats):
            for method, xdist in runs:
                cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                       "-W", "ignore::DeprecationWarning", "--doca-seed", "1"]
                cmd += ["-n", "2"] if xdist else ["-p", "no:xdist"]
                t0 = time.perf_counter()
                subprocess.run(cmd, cwd=tmp, env={**env, "BENCH_START_METHOD": method}, check=True,
                               stdout=subprocess.DEVNULL)
                best[(method, xdist)] = min(best[(method, xdist)], time.perf_counter() - t0)
    return best


def in_test(repeats: int) -> tuple[dict[str, float], list[float]]:
    """Best seconds of one trivial ``DocaPair.run`` inside a pytest test per method (the zygote started
    first), without a bytecode cache; and the load averages seen (1 min, before and after each session)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_")}
    env.update({"DOCA_PY_IMPL": "emulated", "PYTHONDONTWRITEBYTECODE": "1"})
    order = ["warm"] + [m for _ in range(2) for m in METHODS]  # the first warm run starts the zygote
    best = dict.fromkeys(METHODS, float("inf"))
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_in_test.py").write_text(_IN_TEST.format(methods=order))
        for _ in range(repeats):
            loads.append(os.getloadavg()[0])
            out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p",
                                  "no:randomly", "-p", "no:xdist", "-W", "ignore::DeprecationWarning",
                                  "--doca-seed", "1"], cwd=tmp, env=env, check=True, capture_output=True, text=True)
            loads.append(os.getloadavg()[0])
            times = [ln.split()[1:] for ln in out.stdout.splitlines() if ln.startswith("TIME ")]
            for method, seconds in times[1:]:
                best[method] = min(best[method], float(seconds))
    return best, loads


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    best, first = one_run(args.repeats * 4)
    ref = best["fork"]
    print(f"one DocaPair.run of two trivial sides (wall, best of {args.repeats * 4}):")
    print(f"  fork                        {ref * 1e3:8.1f} ms  (reference)")
    print(f"  warm (default)              {best['warm'] * 1e3:8.1f} ms  ratio {best['warm'] / ref:.2f}")
    print(f"  spawn                       {best['spawn'] * 1e3:8.1f} ms  ratio {best['spawn'] / ref:.2f}")
    print(f"  warm, first run (+ zygote)  {first * 1e3:8.1f} ms  ratio {first / ref:.2f}")
    s = sessions(args.repeats)
    ref = s[("fork", False)]
    print(f"pytest session of {TESTS} trivial doca_pair tests (wall, best of {args.repeats}):")
    for (method, xdist), t in s.items():
        label = f"{method}{', -n 2' if xdist else ''}"
        print(f"  {label:26}  {t:8.2f} s   ratio {t / ref:.2f}{'  (reference)' if t is ref else ''}")
    print(f"  warm -n 2 / fork -n 2       ratio {s[('warm', True)] / s[('fork', True)]:.2f}")
    print(f"  warm -n 2 / warm serial     ratio {s[('warm', True)] / s[('warm', False)]:.2f}")
    inside, loads = in_test(args.repeats)
    load = max(loads)
    print(f"one trivial two-sided test inside pytest, PYTHONDONTWRITEBYTECODE=1 (wall, best of {args.repeats}; "
          f"load average {min(loads):.1f} to {load:.1f}):")
    over = {m: t for m, t in inside.items() if t > BOUND}
    for m, t in inside.items():
        print(f"  {m:26}  {t * 1e3:8.1f} ms{'  over the bound' if m in over else ''}")
    if load > BOUND_LOAD:
        print(f"  bound {BOUND} s per start method: not judged (load {load:.1f} > {BOUND_LOAD})")
        return 0
    print(f"  bound {BOUND} s per start method at load <= {BOUND_LOAD}: {'exceeded' if over else 'holds'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
