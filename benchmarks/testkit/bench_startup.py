"""What a two-sided test costs to start, per start method, as ratios measured in the same run.

* **One run**: wall time of ``DocaPair.run`` with two trivial sides (each returns its role), in
  this process, for each start method, best of ``--repeats`` (the methods take turns). The
  reference is ``start_method="fork"`` (a copy of this process: the cheapest start there is).
  ``warm`` (the default) forks from the session's zygote; its first run, which starts the zygote,
  is reported apart.
* **Sessions**: wall time of a pytest session of ``TESTS`` trivial ``doca_pair`` tests, serially
  with each start method and with ``-n 2`` (pytest-xdist), best of ``--repeats``, against the
  serial ``fork`` session.

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
