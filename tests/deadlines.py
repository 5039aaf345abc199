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

Each part is multiplied by `SLACK`, because the load can grow during the wait, and process starts by
`load_growth` as well, because a cost measured on a quiet machine a minute ago does not hold once
other suites and CPU burners run beside this one. On a quiet machine this gives a few seconds; at a
load average of 12 on 2 cores, several times that.

The helpers' fixed bounds (``DEADLINE`` of tests/comch/helpers.py and the like: what a step may take
on a GIL build of CPython) go through `hang`, which stretches them by `INTERPRETER_FACTOR` on a
free-threaded 3.13, whose interpreter runs Python several times slower.

The time-outs a test gives an app (``--control-timeout``, ``--target-io-timeout``,
``--first-message-timeout``, ``--io-timeout``, File Compression's ``-t``, the comch retry window …) are
product deadlines, and a loaded machine must not make a healthy peer miss them: a test that needs one
not to fire, or to fire only for the peer it stalls, takes it from `product_timeout`, never a literal
(tests/test_deadlines_policy.py looks for literals). Its own waits then add that time-out (`bound`).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["SLACK", "INTERPRETER_FACTOR", "hang", "process_cost", "load_growth", "processes", "work_left", "bound",
           "product_timeout"]

ROOT = Path(__file__).resolve().parents[1]
SLACK = 4.0
"""How much slower than measured the machine may become during one wait."""

#: How much slower this interpreter runs Python than a GIL build of the same version: a free-threaded
#: 3.13 has no specialising interpreter (2.3-3.7x measured, docs/performance.md); 3.14t has it back.
INTERPRETER_FACTOR = 4.0 if sysconfig.get_config_var("Py_GIL_DISABLED") and sys.version_info < (3, 14) else 1.0

_cost = 0.0
_measured_at = float("-inf")
_load_at_measure = 1.0


def _load_per_core() -> float:
    """The 1-minute load average per core, at least 1 (a quiet machine)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def hang(seconds: float) -> float:
    """A fixed hang bound of the tests' helpers (*seconds*: what a process may take on a GIL build),
    stretched by `INTERPRETER_FACTOR`; for waits not derived with `bound`."""
    return seconds * INTERPRETER_FACTOR


def _measure() -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import doca_py, doca_py.emulated, apps.initiator, apps.gga_offload"],
                   cwd=ROOT, check=True, capture_output=True)
    return time.monotonic() - t0


def process_cost() -> float:
    """Seconds this machine takes now to start a Python process that imports the apps (the unit of a
    process's local work: start-up, teardown). Measured at the first call and again at every call
    after a minute, the largest kept: the bound follows the load up, never down within a session."""
    global _cost, _measured_at, _load_at_measure
    if time.monotonic() - _measured_at > 60.0:
        cost = _measure()
        if cost >= _cost:
            _cost, _load_at_measure = cost, _load_per_core()
        _measured_at = time.monotonic()
    return _cost


def load_growth() -> float:
    """How much busier the machine is now (load per core) than when `process_cost` was measured: a
    measurement taken on a quiet machine a minute ago says little once two test suites and burners run."""
    return max(1.0, _load_per_core() / _load_at_measure)


def processes(n: int = 1) -> float:
    """Seconds for *n* processes' start-up or teardown, with `SLACK`, scaled by `load_growth`."""
    cost = process_cost()
    return SLACK * n * cost * load_growth()


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


def product_timeout(nominal: float, starts: int = 1) -> int:
    """A time-out for a test to give an app: *nominal* seconds (what the guarded step needs on a quiet
    machine, with room) plus *starts* processes' worth of this machine's work now (`processes`), in
    whole seconds as the apps' flags take them. Whether the test needs it not to fire at all, or to fire
    for the one peer it stops and not for the healthy others, the load of the machine must not decide."""
    return math.ceil(bound(nominal, starts=starts))
