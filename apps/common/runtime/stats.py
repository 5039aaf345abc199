"""Statistics blocks the storage apps print (storage-apps-spec §7.3, §7.4).

The layout and number formats follow the C++ ``printf`` strings; these are for humans
(not a protocol), but matching them keeps logs comparable with the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["RULE", "pe_hit_rate", "format_pe_hit_rate", "WorkerStats", "format_worker_stats", "RunStats",
           "format_run_stats", "FAILED_BANNER"]

RULE = "+================================================+"
FAILED_BANNER = f"{RULE}\n| Test failed!!\n{RULE}"


def pe_hit_rate(hits: int, misses: int) -> float:
    """``hits / (hits + misses) · 100``; 0.0 when the PE was never progressed (the C++ code
    would print ``nan``)."""
    total = hits + misses
    return 0.0 if total == 0 else hits * 100.0 / total


def format_pe_hit_rate(hits: int, misses: int) -> str:
    """``"%2.03lf%% (hit:miss)"``, e.g. ``"75.000% (3:1)"``."""
    return f"{pe_hit_rate(hits, misses):2.03f}% ({hits}:{misses})"


@dataclass(frozen=True, slots=True)
class WorkerStats:
    """One service/target worker's counters (§7.4); ``recovery_count`` only for gga."""

    core: int
    operation_count: int
    pe_hits: int
    pe_misses: int
    recovery_count: int | None = None
    degraded_read_count: int | None = None  # gga only: blocks read while a target was out (not in the reference)


def format_worker_stats(workers: Sequence[WorkerStats]) -> str:
    """One block per worker, as the gga/zero-copy services and the target print them."""
    lines: list[str] = []
    for w in workers:
        lines += [RULE, f"| Core: {w.core}", f"| Operation count: {w.operation_count}"]
        if w.recovery_count is not None:
            lines.append(f"| Recovery count: {w.recovery_count}")
        if w.degraded_read_count is not None:
            lines.append(f"| Degraded read count: {w.degraded_read_count}")
        lines.append(f"| PE hit rate: {format_pe_hit_rate(w.pe_hits, w.pe_misses)}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class RunStats:
    """The initiator's aggregate (§7.3): durations in seconds, latencies in µs."""

    duration_s: float
    operation_count: int
    effective_block_size: int
    pe_hits: int
    pe_misses: int
    latency_min_us: int
    latency_max_us: int
    latency_sum_us: int

    @property
    def data_rate_gib_s(self) -> float:
        """``ops × E / 2^30 / duration``."""
        return 0.0 if self.duration_s <= 0 else self.operation_count * self.effective_block_size / (1 << 30) \
            / self.duration_s

    @property
    def io_rate_miops(self) -> float:
        """``ops / 1e6 / duration``."""
        return 0.0 if self.duration_s <= 0 else self.operation_count / 1e6 / self.duration_s

    @property
    def latency_mean_us(self) -> int:
        """Integer mean, as the reference computes it."""
        return 0 if self.operation_count == 0 else self.latency_sum_us // self.operation_count


def format_run_stats(s: RunStats) -> str:
    """The initiator's stats block."""
    return "\n".join([
        RULE, "| Stats", RULE,
        f"| Duration (seconds): {s.duration_s:2.06f}",
        f"| Operation count: {s.operation_count}",
        f"| Data rate: {s.data_rate_gib_s:.03f} GiB/s",
        f"| IO rate: {s.io_rate_miops:.03f} MIOP/s",
        f"| PE hit rate: {format_pe_hit_rate(s.pe_hits, s.pe_misses)}",
        "| Latency:",
        f"| \tMin: {s.latency_min_us}us",
        f"| \tMax: {s.latency_max_us}us",
        f"| \tMean: {s.latency_mean_us}us",
        RULE,
    ])
