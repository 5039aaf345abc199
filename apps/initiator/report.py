"""The initiator's reports: the §7.3 block (plus percentiles) and the fio-style JSON document."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from apps.common.runtime.stats import FAILED_BANNER, RunStats, format_pe_hit_rate, format_run_stats

from .metrics import DIRECTIONS, JSON_NAMESPACE, IoRecord, direction_json, empty_direction_json, format_percentiles, \
    percentiles
from .plan import is_validity_test

__all__ = ["JobResult", "RunReport", "aggregate_stats", "format_normal_report", "build_json_report", "fio_rw",
           "FAILED_BANNER"]


@dataclass
class JobResult:
    """One worker's numbers as the reports need them."""

    index: int
    cpu: int
    transaction_count: int
    completed: int
    duration_s: float
    pe_hits: int
    pe_misses: int
    lat_min_us: int
    lat_max_us: int
    lat_sum_us: int
    io: dict[str, IoRecord]
    error: str | None = None


@dataclass
class RunReport:
    """Everything the reports print."""

    strategy: str
    io_size: int
    storage_block_size: int
    capacity: int
    run_limit: int
    duration_s: float
    jobs: list[JobResult]
    percentiles: Sequence[float]
    options: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    aborted: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.errors) or self.aborted or any(j.error for j in self.jobs)

    @property
    def status(self) -> str:
        return "aborted" if self.aborted else "failed" if self.failed else "passed"


def aggregate_stats(report: RunReport) -> RunStats:
    """The §7.3 aggregate: Σ operations, latency min/max over workers, mean = Σµs / ops."""
    jobs = report.jobs
    ops = sum(j.completed for j in jobs)
    done = [j for j in jobs if j.completed]
    return RunStats(duration_s=report.duration_s, operation_count=ops, effective_block_size=report.io_size,
                    pe_hits=sum(j.pe_hits for j in jobs), pe_misses=sum(j.pe_misses for j in jobs),
                    latency_min_us=min((j.lat_min_us for j in done), default=0),
                    latency_max_us=max((j.lat_max_us for j in done), default=0),
                    latency_sum_us=sum(j.lat_sum_us for j in jobs))


def format_normal_report(report: RunReport) -> str:
    """The statistics block of §7.3 exactly, then fio-style completion latency percentiles
    per IO direction (µs)."""
    parts = [format_run_stats(aggregate_stats(report))]
    for direction in DIRECTIONS:
        merged = IoRecord.merged([j.io[direction] for j in report.jobs])
        if merged.count:
            parts.append(format_percentiles(f"{direction}: clat percentiles (usec), {merged.count} IOs",
                                            percentiles(merged.clat, report.percentiles)))
    return "\n".join(parts)


def fio_rw(strategy: str) -> str:
    """fio's ``rw`` value closest to *strategy*."""
    return {"read_throughput_test": "read", "write_throughput_test": "write",
            "read_only_data_validity_test": "read", "read_write_data_validity_test": "readwrite"}.get(strategy,
                                                                                                      strategy)


def _job_json(report: RunReport, name: str, jobs: Sequence[JobResult], options: dict[str, Any]) -> dict[str, Any]:
    duration = report.duration_s
    out: dict[str, Any] = {
        "jobname": name,
        "groupid": 0,
        "error": 0 if not any(j.error for j in jobs) and not report.errors else 1,
        "eta": 0,
        "elapsed": int(round(duration)),
        "job options": options,
    }
    for direction in DIRECTIONS:
        merged = IoRecord.merged([j.io[direction] for j in jobs])
        out[direction] = direction_json(merged, report.io_size, duration, report.percentiles) if merged.count \
            else empty_direction_json()
    out["trim"] = empty_direction_json()
    out["job_runtime"] = int(round(duration * 1000))
    return out


def build_json_report(report: RunReport, *, version: str, now: float | None = None) -> dict[str, Any]:
    """The ``--output-format json`` document: fio's top-level keys (``timestamp``,
    ``global options``, ``jobs`` …) with one job per worker, or one aggregate job when
    ``options["group_reporting"]`` is true, plus the namespaced :data:`JSON_NAMESPACE`."""
    t = time.time() if now is None else now
    stats = aggregate_stats(report)
    group = bool(report.options.get("group_reporting"))
    global_options = {
        "rw": fio_rw(report.strategy),
        "bs": str(report.io_size),
        "iodepth": str(max((j.transaction_count for j in report.jobs), default=0)),
        "numjobs": str(len(report.jobs)),
        "number_ios": str(report.run_limit),
        "verify": "pattern" if is_validity_test(report.strategy) else "0",
        "verify_fatal": "1" if is_validity_test(report.strategy) else "0",
    }
    if group:
        jobs = [_job_json(report, "initiator", report.jobs,
                          {"cpus_allowed": ",".join(str(j.cpu) for j in report.jobs)})]
    else:
        jobs = [_job_json(report, f"worker{j.index}", [j],
                          {"cpus_allowed": str(j.cpu), "iodepth": str(j.transaction_count)})
                for j in report.jobs]
    return {
        "fio version": f"doca_py-initiator-{version}",
        "timestamp": int(t),
        "timestamp_ms": int(t * 1000),
        "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(t)),
        "global options": global_options,
        "jobs": jobs,
        JSON_NAMESPACE: {
            "execution_strategy": report.strategy,
            "status": report.status,
            "errors": [*report.errors, *(j.error for j in report.jobs if j.error)],
            "storage_capacity": report.capacity,
            "storage_block_size": report.storage_block_size,
            "effective_block_size": report.io_size,
            "duration_s": stats.duration_s,
            "operation_count": stats.operation_count,
            "data_rate_gib_s": stats.data_rate_gib_s,
            "io_rate_miops": stats.io_rate_miops,
            "pe_hit_rate": format_pe_hit_rate(stats.pe_hits, stats.pe_misses),
            "pe_hits": stats.pe_hits,
            "pe_misses": stats.pe_misses,
            "latency_us": {"min": stats.latency_min_us, "max": stats.latency_max_us,
                           "mean": stats.latency_mean_us},
            "workers": [{"index": j.index, "cpu": j.cpu, "transactions": j.transaction_count,
                         "operation_count": j.completed, "error": j.error} for j in report.jobs],
        },
    }
