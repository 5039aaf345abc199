"""Latency records, percentiles, fio-style JSON and the live progress line.

The §7.3 statistics block itself is :func:`apps.storage.stats.format_run_stats`. The JSON
report uses fio's key names (``jobs[].read.iops``, ``bw`` in KiB/s, ``bw_bytes``,
``runtime`` in ms, ``clat_ns.percentile["99.000000"]`` …) so that fio tooling can read it;
the initiator's own numbers go under the namespaced key :data:`JSON_NAMESPACE`.

>>> percentile_key(99.9)
'99.900000'
>>> parse_percentile_list("50:99:99.9")
(50.0, 99.0, 99.9)
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DEFAULT_PERCENTILES", "JSON_NAMESPACE", "DIRECTIONS", "IoRecord", "parse_percentile_list",
           "percentile_key", "percentiles", "latency_summary", "direction_json", "empty_direction_json",
           "format_percentiles", "human_rate", "human_bytes_rate", "ProgressLine"]

DEFAULT_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
                       99.95, 99.99)
"""fio's default ``percentile_list``."""
JSON_NAMESPACE = "doca_storage_initiator"
"""Top-level JSON key of the initiator's own report (the §7.3 numbers and the outcome)."""
DIRECTIONS = ("read", "write")


def parse_percentile_list(text: str) -> tuple[float, ...]:
    """``"50:99:99.9"`` → ``(50.0, 99.0, 99.9)``; each in (0, 100], at most 20 (as fio)."""
    parts = [p.strip() for p in text.split(":") if p.strip()]
    if not parts:
        raise ValueError("the percentile list is empty")
    if len(parts) > 20:
        raise ValueError(f"{len(parts)} percentiles given, at most 20 are allowed")
    out: list[float] = []
    for p in parts:
        try:
            value = float(p)
        except ValueError:
            raise ValueError(f"{p!r} is not a number") from None
        if not 0.0 < value <= 100.0 or math.isnan(value):
            raise ValueError(f"{p} is not in (0, 100]")
        out.append(value)
    return tuple(out)


def percentile_key(p: float) -> str:
    """fio's key for a percentile: six decimals."""
    return f"{p:.6f}"


@dataclass
class IoRecord:
    """Per-direction IO latencies of one worker (nanoseconds).

    ``slat`` = submit call, ``clat`` = from submission to the completion of both the
    send and the response, as fio measures them; ``lat = slat + clat``.
    """

    slat: array[int] = field(default_factory=lambda: array("Q"))
    clat: array[int] = field(default_factory=lambda: array("Q"))

    @property
    def count(self) -> int:
        return len(self.clat)

    def add(self, slat_ns: int, clat_ns: int) -> None:
        self.slat.append(slat_ns)
        self.clat.append(clat_ns)

    @classmethod
    def merged(cls, records: Sequence[IoRecord]) -> IoRecord:
        out = cls()
        for r in records:
            out.slat.extend(r.slat)
            out.clat.extend(r.clat)
        return out


def _np(values: array[int] | np.ndarray) -> np.ndarray:
    return values if isinstance(values, np.ndarray) else np.frombuffer(values, dtype=np.uint64)


def percentiles(values: array[int] | np.ndarray, points: Sequence[float]) -> dict[str, int]:
    """Nearest-rank percentiles of *values* keyed as fio keys them (empty if no values)."""
    v = _np(values)
    if v.size == 0:
        return {}
    s = np.sort(v)
    out: dict[str, int] = {}
    for p in points:
        rank = max(1, math.ceil(p / 100.0 * s.size))
        out[percentile_key(p)] = int(s[min(rank, s.size) - 1])
    return out


def latency_summary(values: array[int] | np.ndarray) -> dict[str, Any]:
    """fio's ``{min, max, mean, stddev, N}`` of a latency series."""
    v = _np(values)
    if v.size == 0:
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    f = v.astype(np.float64)
    return {"min": int(v.min()), "max": int(v.max()), "mean": float(f.mean()),
            "stddev": float(f.std(ddof=1)) if v.size > 1 else 0.0, "N": int(v.size)}


def empty_direction_json() -> dict[str, Any]:
    """A direction without IO (fio prints zeros)."""
    return direction_json(IoRecord(), 0, 0.0, ())


def direction_json(record: IoRecord, io_size: int, runtime_s: float, points: Sequence[float]) -> dict[str, Any]:
    """One fio direction object (``read`` / ``write`` / ``trim``) for *record*."""
    ios = record.count
    io_bytes = ios * io_size
    rt = runtime_s if runtime_s > 0 else 0.0
    bw_bytes = int(io_bytes / rt) if rt else 0
    clat = latency_summary(record.clat)
    if ios:
        clat["percentile"] = percentiles(record.clat, points)
    lat = _np(record.slat) + _np(record.clat) if ios else np.zeros(0, dtype=np.uint64)
    return {
        "io_bytes": io_bytes,
        "io_kbytes": io_bytes // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": ios / rt if rt else 0.0,
        "runtime": int(round(rt * 1000)) if ios else 0,
        "total_ios": ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": latency_summary(record.slat),
        "clat_ns": clat,
        "lat_ns": latency_summary(lat),
    }


def format_percentiles(title: str, pct: Mapping[str, int], unit_ns: int = 1000, per_line: int = 3) -> str:
    """fio's text layout of a percentile table, values in µs by default::

          clat percentiles (usec):
           |  1.00th=[   12],  5.00th=[   13], 10.00th=[   13],
    """
    lines = [f"  {title}:"]
    items = [f"{float(k):5.2f}th=[{max(0, round(v / unit_ns)):5d}]" for k, v in pct.items()]
    for i in range(0, len(items), per_line):
        chunk = items[i:i + per_line]
        lines.append("     | " + ", ".join(chunk) + ("," if i + per_line < len(items) else ""))
    return "\n".join(lines)


def human_rate(value: float) -> str:
    """``31.5k``-style count per second."""
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if value >= div:
            return f"{value / div:.1f}{unit}"
    return f"{value:.0f}"


def human_bytes_rate(value: float) -> str:
    """Bytes per second in power-of-two units (``123MiB/s``)."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= div:
            return f"{value / div:.1f}{unit}/s"
    return f"{value:.0f}B/s"


@dataclass
class ProgressLine:
    """The status line (fio's ``--eta`` line): ``tty`` redraws one line in place with ``\\r``
    at most every *min_interval* seconds; otherwise a plain line every *interval* seconds."""

    total_ops: int
    io_size: int
    tty: bool
    interval: float
    min_interval: float = 0.25
    workers: int = 1
    _last_t: float = 0.0
    _last_ops: int = 0
    _start: float = 0.0
    _width: int = 0
    lines: int = 0

    def start(self, now: float) -> None:
        self._start = self._last_t = now
        self._last_ops = 0

    def due(self, now: float) -> bool:
        wait = self.min_interval if self.tty else self.interval
        return wait > 0 and now - self._last_t >= wait

    def render(self, now: float, ops: int, running: int) -> str:
        dt = max(now - self._last_t, 1e-9)
        rate = (ops - self._last_ops) / dt
        self._last_t, self._last_ops = now, ops
        elapsed = now - self._start
        pct = 100.0 * ops / self.total_ops if self.total_ops else 100.0
        overall = ops / elapsed if elapsed > 0 else 0.0
        eta = (self.total_ops - ops) / overall if overall > 0 else 0.0
        self.lines += 1
        if self.tty:
            text = (f"Jobs: {running}: [{pct:5.1f}% done] [{human_rate(rate)} IOPS] "
                    f"[{human_bytes_rate(rate * self.io_size)}] [eta {int(eta) // 60:02d}m:{int(eta) % 60:02d}s]")
            pad = max(0, self._width - len(text))
            self._width = len(text)
            return "\r" + text + " " * pad
        return (f"progress: {pct:.1f}% ({ops}/{self.total_ops} transactions), {human_rate(rate)} IOPS, "
                f"{human_bytes_rate(rate * self.io_size)}, elapsed {elapsed:.1f}s\n")

    def clear(self) -> str:
        """What erases the TTY line (empty otherwise)."""
        if not self.tty or not self._width:
            return ""
        text = "\r" + " " * self._width + "\r"
        self._width = 0
        return text
