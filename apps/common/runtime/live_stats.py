"""Live statistics: one line per ``--stats-interval`` seconds while an app runs (not in the reference,
whose apps print statistics only at the end).

Every per-core worker (:class:`~apps.common.runtime.worker_thread.WorkerThread`) registers itself
when created; :class:`LiveStats` is a thread that wakes once per interval, reads the counters the
workers keep anyway (:meth:`WorkerThread.live_counters`: plain integers, read without locking) and
prints the interval's rates. Nothing runs per IO for it, so it costs nothing on the data path when
off (the default) and one wake-up per interval when on.

Two forms (``--stats-format``):

* ``text`` — ``stats: 2.0 s | 12345 IO/s | 48.2 MiB/s | in flight 64 | errors 0 | degraded reads 0``
  (the initiator adds ``| p50 812 us | p99 2100 us``);
* ``json`` — one JSON object per line with stable keys, in fio's spirit (:data:`JSON_KEYS`):
  ``{"type": "stats", "app": ..., "timestamp_ms": ..., "elapsed_s": ..., "interval_s": ..., "iops": ...,
  "bw_bytes": ..., "bw_mib_s": ..., "total_ios": ..., "in_flight": ..., "errors": ..., "degraded_reads": ...,
  "workers": ...}``, plus ``"lat_ns": {"p50": ..., "p99": ...}`` from the initiator (``null`` values
  when no IO completed in the interval).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO

__all__ = ["StatsFormat", "LiveCounters", "LiveSource", "LiveStats", "register", "live_stats", "JSON_KEYS",
           "TEXT_PREFIX", "MAX_STATS_INTERVAL"]

StatsFormat = Literal["text", "json"]
TEXT_PREFIX = "stats: "
"""Start of every text line."""
MAX_STATS_INTERVAL = 3600
JSON_KEYS = ("type", "app", "timestamp_ms", "elapsed_s", "interval_s", "iops", "bw_bytes", "bw_mib_s", "total_ios",
             "in_flight", "errors", "degraded_reads", "workers")
"""The keys of every JSON line, in order (the initiator's lines add ``lat_ns``)."""
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class LiveCounters:
    """A worker's running totals, as sampled: IOs completed, bytes requested, IOs in flight,
    IOs answered or completed with an error, reads served degraded (gga only)."""

    ops: int
    bytes: int
    in_flight: int
    errors: int
    degraded_reads: int = 0


class LiveSource(Protocol):
    """What :class:`LiveStats` samples: a worker."""

    def live_counters(self) -> LiveCounters: ...


_sources: weakref.WeakSet[Any] = weakref.WeakSet()
_sources_lock = threading.Lock()


def register(source: LiveSource) -> None:
    """Make *source* sampled by every :class:`LiveStats` of this process while it lives."""
    with _sources_lock:
        _sources.add(source)


def _registered() -> list[LiveSource]:
    with _sources_lock:
        return list(_sources)


#: ``latency()`` → (p50, p99) in ns of the IOs completed since the previous call, or ``None``s.
LatencySampler = Callable[[], "tuple[int | None, int | None]"]


class LiveStats:
    """A daemon thread printing one line per *interval* seconds to *stream* until :meth:`stop`."""

    def __init__(self, app: str, interval: float, fmt: StatsFormat = "text", *, stream: TextIO | None = None,
                 latency: LatencySampler | None = None, sources: Callable[[], list[LiveSource]] = _registered,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval <= 0:
            raise ValueError(f"the interval must be positive, got {interval}")
        self.app, self.interval, self.fmt = app, interval, fmt
        self.stream = stream
        self.latency, self.sources, self.clock = latency, sources, clock
        self.lines = 0
        """Lines printed so far."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-stats", daemon=True)
        self._last: dict[int, LiveCounters] = {}
        self._start = self._last_t = 0.0

    def start(self) -> None:
        """Take the first sample and start printing."""
        self._start = self._last_t = self.clock()
        self._last = {id(s): s.live_counters() for s in self.sources()}
        self._thread.start()

    def stop(self) -> None:
        """Stop printing (a last partial interval is not printed)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.interval + 1.0)

    def _run(self) -> None:
        while not self._stop.wait(max(0.0, self._last_t + self.interval - self.clock())):
            self.write(self.sample())

    def sample(self) -> dict[str, Any]:
        """The record of the interval since the previous sample (advances it)."""
        now = self.clock()
        dt = max(now - self._last_t, 1e-9)
        ops = nbytes = in_flight = errors = degraded = 0
        current: dict[int, LiveCounters] = {}
        for source in self.sources():
            c = source.live_counters()
            before = self._last.get(id(source), LiveCounters(0, 0, 0, 0, 0))
            current[id(source)] = c
            ops += max(0, c.ops - before.ops)
            nbytes += max(0, c.bytes - before.bytes)
            errors += max(0, c.errors - before.errors)
            degraded += max(0, c.degraded_reads - before.degraded_reads)
            in_flight += max(0, c.in_flight)
        self._last, self._last_t = current, now
        record: dict[str, Any] = {
            "type": "stats", "app": self.app, "timestamp_ms": int(time.time() * 1000),
            "elapsed_s": round(now - self._start, 3), "interval_s": round(dt, 3), "iops": round(ops / dt, 1),
            "bw_bytes": int(nbytes / dt), "bw_mib_s": round(nbytes / dt / _MIB, 3), "total_ios": ops,
            "in_flight": in_flight, "errors": errors, "degraded_reads": degraded, "workers": len(current),
        }
        if self.latency is not None:
            p50, p99 = self.latency()
            record["lat_ns"] = {"p50": p50, "p99": p99}
        return record

    def format(self, record: dict[str, Any]) -> str:
        """*record* as one line of the chosen form (no newline)."""
        if self.fmt == "json":
            return json.dumps(record, separators=(", ", ": "))
        text = (f"{TEXT_PREFIX}{record['elapsed_s']:.1f} s | {record['iops']:.0f} IO/s | {record['bw_mib_s']:.2f} MiB/s"
                f" | in flight {record['in_flight']} | errors {record['errors']} | degraded reads "
                f"{record['degraded_reads']}")
        lat = record.get("lat_ns")
        if lat is not None:
            text += "".join(f" | {k} " + ("-" if v is None else f"{v // 1000} us") for k, v in lat.items())
        return text

    def write(self, record: dict[str, Any]) -> None:
        """Print one line (one write call, so it does not interleave with the app's own lines)."""
        stream = self.stream if self.stream is not None else sys.stdout
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except (OSError, ValueError):  # the stream went away (closed pipe): stop quietly
            self._stop.set()
            return
        self.lines += 1


@contextmanager
def live_stats(app: str, interval: float, fmt: StatsFormat, *, stream: TextIO | None = None,
               latency: LatencySampler | None = None) -> Iterator[LiveStats | None]:
    """A :class:`LiveStats` running for the block when *interval* is positive; nothing otherwise."""
    if interval <= 0:
        yield None
        return
    stats = LiveStats(app, interval, fmt, stream=stream, latency=latency)
    stats.start()
    try:
        yield stats
    finally:
        stats.stop()
