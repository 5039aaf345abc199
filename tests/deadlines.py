"""How long a test may wait for a process to do something: derived, never a wall-clock guess.

A wait in a test is a hang bound, not a timing check: it must never fire on a slow or loaded
machine while the product is behaving, and it must fire, with the process's output, if the product
hangs. So every bound is the sum of what the product promises and what this machine needs for the
work left, both taken from the run itself:

* **the product's own time-outs** that may elapse before the awaited event (``--io-timeout``,
  ``--target-io-timeout``, ``--control-timeout``, the comch retry window …), named by the test;
* **the work left**, in units this machine measured in this session: `process_cost` (the wall time
  to start a Python process that imports the apps, measured once per test process and again when a
  bound is asked for, the larger one kept) for each process start or teardown the wait includes, and
  for a run of IOs the remaining transactions at the rate the run itself reported (`work_left`).

Each part is multiplied by `SLACK`, because the load can grow during the wait. On a quiet machine
this gives a few seconds; at a load average of 12 on 2 cores, several times that.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["SLACK", "process_cost", "processes", "work_left", "bound"]

ROOT = Path(__file__).resolve().parents[1]
SLACK = 4.0
"""How much slower than measured the machine may become during one wait."""

_cost = 0.0
_measured_at = float("-inf")


def _measure() -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import doca_py, doca_py.emulated, apps.initiator, apps.gga_offload"],
                   cwd=ROOT, check=True, capture_output=True)
    return time.monotonic() - t0


def process_cost() -> float:
    """Seconds this machine takes now to start a Python process that imports the apps (the unit of a
    process's local work: start-up, teardown). Measured at the first call and again at every call
    after a minute, the largest kept: the bound follows the load up, never down within a session."""
    global _cost, _measured_at
    if time.monotonic() - _measured_at > 60.0:
        _cost = max(_cost, _measure())
        _measured_at = time.monotonic()
    return _cost


def processes(n: int = 1) -> float:
    """Seconds for *n* processes' start-up or teardown, with `SLACK`."""
    return SLACK * n * process_cost()


_PROGRESS = re.compile(r"progress: [\d.]+% \((\d+)/(\d+) transactions\).*elapsed ([\d.]+)s")


def work_left(lines: Iterable[str]) -> float:
    """Seconds for the transactions an initiator has left, at the overall rate its own last
    ``progress:`` line reported (from its *lines*), with `SLACK`; 0 without such a line."""
    last = None
    for line in lines:
        m = _PROGRESS.search(line)
        if m:
            last = m
    if last is None:
        return 0.0
    done, total, elapsed = int(last.group(1)), int(last.group(2)), float(last.group(3))
    if done <= 0 or elapsed <= 0:
        return 0.0
    return SLACK * (total - done) * elapsed / done


def bound(*timeouts: float, starts: int = 0, work: float = 0.0) -> float:
    """A hang bound: the product *timeouts* that may elapse, plus *starts* processes' start-up or
    teardown (`processes`) and *work* seconds of work left (`work_left`)."""
    return sum(timeouts) + (processes(starts) if starts else 0.0) + work
