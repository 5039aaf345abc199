"""What the test kit costs where it is not used, as ratios measured in the same run.

* **Session**: CPU time (user + system, of the pytest process) of a small test session that uses
  nothing of the kit — ``FILES`` files of ``TESTS`` trivial tests — with the plugin loaded (as
  installed: entry point ``doca_py``) against the same session with ``-p no:doca_py``. The two
  take turns, best of ``--repeats``.
* **Hot path**: a 64-byte ``Dma`` memcpy round trip (submit → progress → callback, 64 in flight)
  with the trace off, against a loop of the two ``if trace.ON`` tests a task passes (the cost of
  the hooks when off), and against the round trip with the trace on (the ring's cost).

    .venv/bin/python benchmarks/testkit/bench_plugin.py [--repeats N] [--tasks N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from bench_task_roundtrip import best_ns  # noqa: E402

FILES, TESTS = 20, 10


def _session_dir(where: Path) -> Path:
    for f in range(FILES):
        body = "".join(f"def test_{t}():\n    assert {t} + 1 == {t + 1}\n\n" for t in range(TESTS))
        (where / f"test_plain_{f}.py").write_text(body)
    return where


def _child_cpu(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def session_cost(repeats: int) -> tuple[float, float, float]:
    """Best CPU seconds of the session: plugin on, plugin off, plugin off with ``doca_py`` imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCA_PY_")}
    opts = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    base = [sys.executable, "-m", "pytest", *opts]
    imported = [sys.executable, "-c", f"import sys, doca_py, pytest; sys.exit(pytest.main({[*opts, '-p', 'no:doca_py']!r}))"]
    with tempfile.TemporaryDirectory() as tmp:
        d = _session_dir(Path(tmp))
        runs: list[list[str]] = [base, [*base, "-p", "no:doca_py"], imported]
        best = [float("inf")] * 3
        for cmd in runs:
            _child_cpu(cmd, d, env)  # warm the page cache and the bytecode
        for _ in range(repeats):
            for i, cmd in enumerate(runs):
                best[i] = min(best[i], _child_cpu(cmd, d, env))
    return best[0], best[1], best[2]


def hot_path(tasks: int, repeats: int) -> tuple[float, float, float]:
    """ns per task: (round trip with the trace off, the two hook tests alone, round trip with the trace on)."""
    os.environ["DOCA_PY_IMPL"] = "emulated"
    import doca_py as d
    from doca_py.emulated import trace
    from doca_py.testing.pair import open_side

    batch = 64
    dev, rep = open_side("dpu")
    rep.close()
    pe, inv, mm = d.Pe(), d.BufInventory(2 * batch), d.Mmap()
    mm.allocate(2 * batch * 4096)
    mm.add_dev(dev)
    mm.start()
    base = mm.get_memrange()[0]
    dma = d.Dma(dev)
    pe.connect_ctx(dma)
    dma.task_memcpy_set_conf(lambda t, u, c: None, lambda t, u, c: None, batch)
    dma.start()
    pairs = [(dma.task_memcpy_alloc_init(inv.buf_get_by_data(mm, base + i * 4096, 64),
                                         inv.buf_get_by_addr(mm, base + (batch + i) * 4096, 4096)))
             for i in range(batch)]

    def round_trips() -> int:
        for r in range(tasks // batch):
            if r % 64 == 0:
                for t in pairs:
                    t.get_dst().reset_data_len()
            for t in pairs:
                t.submit()
            while pe.progress():
                pass
        return tasks // batch * batch

    def hooks_alone() -> int:
        mod = trace
        for _ in range(tasks):
            if mod.ON:
                pass
            if mod.ON:
                pass
        return tasks

    def empty_loop() -> int:  # subtracted from hooks_alone: the loop is not the hooks' cost
        for _ in range(tasks):
            pass
        return tasks

    def traced() -> int:
        trace.enable()
        try:
            return round_trips()
        finally:
            trace.disable()

    loops: list[Callable[[], int]] = [round_trips, hooks_alone, empty_loop, traced]
    trace.disable()
    off, hooks, empty, on = best_ns(loops, repeats)
    for t in pairs:
        t.free()
        t.get_src().dec_refcount()
        t.get_dst().dec_refcount()
    dma.close()
    pe.close()
    mm.close()
    inv.close()
    dev.close()
    return off, max(hooks - empty, 0.0), on


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tasks", type=int, default=64 * 400)
    args = p.parse_args()
    on, off, imported = session_cost(args.repeats)
    print(f"session of {FILES * TESTS} tests that use nothing of the kit (CPU, best of {args.repeats}):")
    print(f"  -p no:doca_py                      {off * 1e3:8.1f} ms  (reference)")
    print(f"  plugin loaded                      {on * 1e3:8.1f} ms  ratio {on / off:.3f}")
    print(f"  -p no:doca_py, doca_py imported    {imported * 1e3:8.1f} ms  ratio {imported / off:.3f}"
          f"  (the plugin itself: {on / imported:.3f})")
    t_off, t_hooks, t_on = hot_path(args.tasks, args.repeats)
    print(f"hot path, 64 B Dma memcpy, 64 in flight (thread CPU ns per task, best of {args.repeats}):")
    print(f"  trace off       {t_off:8.0f} ns  (reference)")
    print(f"  the hook tests  {t_hooks:8.1f} ns  ratio {t_hooks / t_off:.4f}  (two 'if trace.ON', loop subtracted)")
    print(f"  trace on        {t_on:8.0f} ns  ratio {t_on / t_off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
