"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import time
from collections.abc import Callable


def rates(fns: list[Callable[[], object]], nbytes: int, budget: float, rounds: int = 5) -> list[float]:
    """Best GB/s of each function; rounds interleave the functions so that machine
    noise (this VM drifts by tens of percent) hits all of them alike."""
    best = [float("inf")] * len(fns)
    for fn in fns:
        fn()  # warm up: caches, lazily built tables, page faults
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            n, t0 = 0, time.perf_counter()
            while True:
                fn()
                n += 1
                dt = time.perf_counter() - t0
                if dt >= budget and n >= 2:
                    break
            best[i] = min(best[i], dt / n)
    return [nbytes / b / 1e9 for b in best]
