"""Run ``python -m MODULE ARGS...`` under cProfile, every Python thread included.

    python -m benchmarks.e2e.profiled OUT.prof MODULE [ARGS...]

Before Python 3.12 cProfile only sees the thread that enabled it, so ``threading.Thread.run`` is wrapped
to give each thread its own profiler; at exit all of them are merged into ``OUT.prof`` (readable with
``pstats``). Threads that are still running at exit (daemon I/O threads) are included as they are. From
3.12 cProfile is built on ``sys.monitoring``, whose events come from every thread: one profiler sees them
all, and a second one in another thread would be refused ("Another profiling tool is already active").

Times are each thread's CPU time (``time.thread_time``; before 3.12 only, where each thread has its own
profiler: from 3.12 the default is wall time), so waiting in ``select`` or being
preempted costs nothing; ``DOCA_PY_E2E_PROFILE_CLOCK=wall`` profiles wall time instead, and
``DOCA_PY_E2E_PROFILE_CLOCK=internal`` cProfile's own clock (no Python-level timer call per event: the
cheapest, for call counts, where the times do not matter).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import runpy
import signal
import sys
import threading
import time
from typing import Any

_profilers: list[cProfile.Profile] = []
_CLOCK = os.environ.get("DOCA_PY_E2E_PROFILE_CLOCK")
#: One profiler per thread (before 3.12); from 3.12 one profiler sees every thread (sys.monitoring).
_PER_THREAD = sys.version_info < (3, 12)
# A thread's CPU clock read by one profiler across threads would mix clocks: wall time there.
_TIMER = time.thread_time if _CLOCK != "wall" and _PER_THREAD else time.perf_counter


def _profiler() -> cProfile.Profile:
    return cProfile.Profile() if _CLOCK == "internal" else cProfile.Profile(_TIMER)
_lock = threading.Lock()


def _wrap_thread_run() -> None:
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        prof = _profiler()
        with _lock:
            _profilers.append(prof)
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()

    threading.Thread.run = run  # type: ignore[method-assign]


def _dump(out: str) -> None:
    stats: pstats.Stats | None = None
    with _lock:
        profs = list(_profilers)
    for prof in profs:
        try:
            prof.create_stats()
        except Exception:  # noqa: BLE001 - a profiler still live in another thread
            continue
        if not getattr(prof, "stats", None):
            continue
        if stats is None:
            stats = pstats.Stats(prof)
        else:
            stats.add(prof)
    if stats is not None:
        stats.dump_stats(out)


def main() -> Any:
    out, module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    if _PER_THREAD:
        _wrap_thread_run()
    main_prof = _profiler()
    with _lock:
        _profilers.append(main_prof)
    main_prof.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        main_prof.disable()
        # The topology's teardown sends SIGINT to a process that may already be ending by itself: a
        # KeyboardInterrupt inside the merge would lose the whole profile.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _dump(out)


if __name__ == "__main__":
    main()
