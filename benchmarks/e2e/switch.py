"""Run ``python -m MODULE ARGS...`` with another GIL switch interval.

    python -m benchmarks.e2e.switch SECONDS MODULE [ARGS...]

Used by ``run.py --switch-interval`` to see how much of the latency is threads of one process
waiting for the GIL (CPython's default interval is 5 ms).
"""

from __future__ import annotations

import runpy
import sys

if __name__ == "__main__":
    interval, module, *args = sys.argv[1:]
    sys.setswitchinterval(float(interval))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
