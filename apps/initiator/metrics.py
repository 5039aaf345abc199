"""Latency histograms, percentiles, fio-style JSON and the live progress line.

Latencies go into :class:`LatencyHistogram`, a bounded log-linear histogram in the style of
HdrHistogram: values below 256 ns have a bucket each, and every power of two above is split
into 128 equal sub-buckets. Its memory is fixed (7424 counters, 58 KiB) however many IOs are
recorded; percentiles are within 0.4 % of the exact nearest-rank value (half a sub-bucket),
and count, min, max and mean are exact. :class:`IoRecord` keeps one histogram each for
``slat``, ``clat`` and ``lat`` per direction, fed in batches of 1024 IOs.

The §7.3 statistics block itself is :func:`apps.common.runtime.stats.format_run_stats`. The JSON
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

__all__ = ["DEFAULT_PERCENTILES", "JSON_NAMESPACE", "DIRECTIONS", "LatencyHistogram", "IoRecord",
           "parse_percentile_list", "percentile_key", "percentiles", "latency_summary", "direction_json",
           "empty_direction_json", "format_percentiles", "human_rate", "human_bytes_rate", "ProgressLine"]

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


_SUB_BITS = 7
_SUB = 1 << _SUB_BITS        # sub-buckets per power of two
_EXACT = 2 * _SUB            # values below this have a bucket each
_SHIFT = _SUB_BITS + 1       # significant bits kept per value
_U64_MAX = (1 << 64) - 1
_BUCKETS = (64 - _SHIFT + 2) * _SUB  # enough for any u64: 7424
_POW2 = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
_PENDING = 1024              # IOs an IoRecord buffers before it folds them into its histograms


def _bucket_bounds(index: int) -> tuple[int, int]:
    """The lowest value of bucket *index* and its width."""
    if index < _EXACT:
        return index, 1
    e = (index >> _SUB_BITS) - 1
    return (index - (e << _SUB_BITS)) << e, 1 << e


class LatencyHistogram:
    """Bounded log-linear histogram of non-negative integers (nanoseconds).

    A value ``v < 256`` is counted exactly; above, ``v`` falls in the bucket of its 8 most
    significant bits, so a bucket is at most 1/128 of its lowest value wide. Percentiles
    report the middle of the bucket holding the nearest-rank value, clamped to the exact
    min/max: the relative error is at most 1/256 (0.4 %). Storage is 7424 u64 counters
    whatever the number of values; count, min, max and the sum (so the mean) are exact, the
    standard deviation comes from a running sum of squared deviations (Chan et al.'s
    pairwise update, in floating point).

    >>> h = LatencyHistogram()
    >>> for v in (100, 200, 300_000):
    ...     h.record(v)
    >>> h.count, h.min, h.max, h.mean
    (3, 100, 300000, 100100.0)
    >>> h.percentile(50.0), h.percentile(100.0)
    (200, 300000)
    """

    __slots__ = ("counts", "count", "total", "m2", "min", "max")

    def __init__(self) -> None:
        self.counts: array[int] = array("Q", bytes(8 * _BUCKETS))
        self.count = 0
        self.total = 0       # a Python int: exact
        self.m2 = 0.0        # sum of squared deviations from the mean
        self.min = 0
        self.max = 0

    @property
    def nbytes(self) -> int:
        """Bytes of counter storage (constant)."""
        return self.counts.itemsize * len(self.counts)

    def record(self, value: int) -> None:
        """Count one value (negative → 0, above 2**64 - 1 → 2**64 - 1)."""
        v = value if 0 <= value <= _U64_MAX else (0 if value < 0 else _U64_MAX)
        e = v.bit_length() - _SHIFT
        self.counts[v if e <= 0 else (e << _SUB_BITS) + (v >> e)] += 1
        self._account(1, v, v, v, 0.0)

    def record_many(self, values: np.ndarray) -> None:
        """Count every value of a ``uint64`` array (vectorised :meth:`record`)."""
        v = np.asarray(values, dtype=np.uint64)
        n = int(v.size)
        if not n:
            return
        bits = np.searchsorted(_POW2, v, side="right")  # bit_length
        shift = np.maximum(bits.astype(np.int64) - _SHIFT, 0).astype(np.uint64)
        index = np.where(shift == 0, v, (shift << np.uint64(_SUB_BITS)) + (v >> shift))
        counts = np.frombuffer(self.counts, dtype=np.uint64)
        counts += np.bincount(index.astype(np.intp), minlength=_BUCKETS).astype(np.uint64)
        vmax = int(v.max())
        total = int(v.sum(dtype=np.uint64)) if vmax < (1 << 64) // n else sum(v.tolist())
        m2 = float(np.square(v.astype(np.float64) - total / n).sum())
        self._account(n, int(v.min()), vmax, total, m2)

    def _account(self, n: int, vmin: int, vmax: int, total: int, m2: float) -> None:
        """Fold in *n* values with these min, max, sum and squared deviations."""
        count = self.count
        if count:
            self.min = min(self.min, vmin)
            self.max = max(self.max, vmax)
            delta = total / n - self.total / count
            self.m2 += m2 + delta * delta * (count * n / (count + n))
        else:
            self.min, self.max, self.m2 = vmin, vmax, m2
        self.count = count + n
        self.total += total

    def merge(self, other: LatencyHistogram) -> None:
        """Add *other*'s values to this histogram."""
        if not other.count:
            return
        mine = np.frombuffer(self.counts, dtype=np.uint64)
        mine += np.frombuffer(other.counts, dtype=np.uint64)
        self._account(other.count, other.min, other.max, other.total, other.m2)

    @property
    def mean(self) -> float:
        """Exact mean (0.0 when empty)."""
        return self.total / self.count if self.count else 0.0

    @property
    def stddev(self) -> float:
        """Sample standard deviation (ddof = 1)."""
        n = self.count
        return math.sqrt(max(0.0, self.m2) / (n - 1)) if n > 1 else 0.0

    def percentiles(self, points: Sequence[float]) -> list[int]:
        """Nearest-rank percentiles (empty histogram: zeros)."""
        if not self.count:
            return [0 for _ in points]
        cum = np.cumsum(np.frombuffer(self.counts, dtype=np.uint64))
        out: list[int] = []
        for p in points:
            rank = min(max(1, math.ceil(p / 100.0 * self.count)), self.count)
            low, width = _bucket_bounds(int(np.searchsorted(cum, rank, side="left")))
            out.append(min(max(low + (width - 1) // 2, self.min), self.max))
        return out

    def percentile(self, p: float) -> int:
        """One nearest-rank percentile."""
        return self.percentiles((p,))[0]


class IoRecord:
    """Per-direction IO latencies of one worker (nanoseconds), in fixed-size histograms.

    ``slat`` = submit call, ``clat`` = from submission to the completion of both the
    send and the response, as fio measures them; ``lat = slat + clat`` (recorded per IO).
    :meth:`add` only stores the pair in a fixed buffer of 1024 IOs, folded into the three
    histograms when full or when the record is read (:meth:`flush`), which keeps the cost
    per IO close to appending to a list. Fill it from one thread and read it once the
    filling is over.
    """

    __slots__ = ("_slat", "_clat", "_lat", "_pending_slat", "_pending_clat", "_pending")

    def __init__(self) -> None:
        self._slat, self._clat, self._lat = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
        self._pending_slat: array[int] = array("Q", bytes(8 * _PENDING))
        self._pending_clat: array[int] = array("Q", bytes(8 * _PENDING))
        self._pending = 0

    def add(self, slat_ns: int, clat_ns: int) -> None:
        """Record one IO."""
        i = self._pending
        try:
            self._pending_slat[i] = slat_ns
            self._pending_clat[i] = clat_ns
        except OverflowError:  # negative or beyond u64: clamp (never happens with perf_counter_ns)
            self._pending_slat[i] = min(max(slat_ns, 0), _U64_MAX)
            self._pending_clat[i] = min(max(clat_ns, 0), _U64_MAX)
        self._pending = i + 1
        if i + 1 == _PENDING:
            self.flush()

    def flush(self) -> None:
        """Fold the buffered IOs into the histograms."""
        n = self._pending
        if not n:
            return
        self._pending = 0
        s = np.frombuffer(self._pending_slat, dtype=np.uint64, count=n)
        c = np.frombuffer(self._pending_clat, dtype=np.uint64, count=n)
        lat = s + c
        lat = np.where(lat < s, np.uint64(_U64_MAX), lat)  # saturate instead of wrapping
        self._slat.record_many(s)
        self._clat.record_many(c)
        self._lat.record_many(lat)

    @property
    def slat(self) -> LatencyHistogram:
        """Submission latencies."""
        self.flush()
        return self._slat

    @property
    def clat(self) -> LatencyHistogram:
        """Completion latencies."""
        self.flush()
        return self._clat

    @property
    def lat(self) -> LatencyHistogram:
        """Total latencies (``slat + clat`` of each IO)."""
        self.flush()
        return self._lat

    def folded_lat_counts(self) -> array[int]:
        """The bucket counters of the total latencies folded so far, without folding the buffered
        IOs: what another thread may read while this one records (live statistics)."""
        return self._lat.counts

    @property
    def count(self) -> int:
        """IOs recorded."""
        return self._clat.count + self._pending

    @property
    def nbytes(self) -> int:
        """Bytes of storage (constant: three histograms and the buffer)."""
        return 3 * self._clat.nbytes + self._pending_slat.itemsize * (len(self._pending_slat) +
                                                                       len(self._pending_clat))

    @classmethod
    def from_values(cls, slat: Sequence[int], clat: Sequence[int]) -> IoRecord:
        """A record of the IOs ``(slat[i], clat[i])``."""
        if len(slat) != len(clat):
            raise ValueError(f"{len(slat)} slat values but {len(clat)} clat values")
        out = cls()
        for s_ns, c_ns in zip(slat, clat):
            out.add(s_ns, c_ns)
        return out

    @classmethod
    def merged(cls, records: Sequence[IoRecord]) -> IoRecord:
        """One record holding the IOs of all *records*."""
        out = cls()
        for r in records:
            out._slat.merge(r.slat)
            out._clat.merge(r.clat)
            out._lat.merge(r.lat)
        return out


Latencies = Union[LatencyHistogram, "array[int]", np.ndarray]


def _np(values: array[int] | np.ndarray) -> np.ndarray:
    return values if isinstance(values, np.ndarray) else np.frombuffer(values, dtype=np.uint64)


def percentiles(values: Latencies, points: Sequence[float]) -> dict[str, int]:
    """Nearest-rank percentiles keyed as fio keys them (empty if no values): from a
    :class:`LatencyHistogram` (within 0.4 %), or exact from a plain series."""
    if isinstance(values, LatencyHistogram):
        if not values.count:
            return {}
        return {percentile_key(p): v for p, v in zip(points, values.percentiles(points))}
    v = _np(values)
    if v.size == 0:
        return {}
    s = np.sort(v)
    out: dict[str, int] = {}
    for p in points:
        rank = max(1, math.ceil(p / 100.0 * s.size))
        out[percentile_key(p)] = int(s[min(rank, s.size) - 1])
    return out


def latency_summary(values: Latencies) -> dict[str, Any]:
    """fio's ``{min, max, mean, stddev, N}`` of a latency histogram or series."""
    if isinstance(values, LatencyHistogram):
        if not values.count:
            return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
        return {"min": values.min, "max": values.max, "mean": values.mean, "stddev": values.stddev,
                "N": values.count}
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
        "lat_ns": latency_summary(record.lat),
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


class IntervalLatency:
    """``sampler()`` → (p50, p99) in ns of the IOs folded into *records*' histograms since the
    previous call (``None`` when none was): the initiator's live statistics. Each record folds
    every 1024 IOs, so under that many IOs per interval and worker the figures lag a little."""

    def __init__(self, records: Callable[[], Sequence[IoRecord]]) -> None:
        self.records = records
        self._prev = np.zeros(_BUCKETS, dtype=np.uint64)

    def __call__(self) -> tuple[int | None, int | None]:
        total = np.zeros(_BUCKETS, dtype=np.uint64)
        for r in self.records():
            total += np.frombuffer(r.folded_lat_counts(), dtype=np.uint64)
        delta = np.where(total >= self._prev, total - self._prev, np.uint64(0))
        self._prev = total
        n = int(delta.sum())
        if not n:
            return None, None
        cum = np.cumsum(delta)
        out: list[int] = []
        for p in (50.0, 99.0):
            low, width = _bucket_bounds(int(np.searchsorted(cum, max(1, math.ceil(p / 100.0 * n)), side="left")))
            out.append(low + (width - 1) // 2)
        return out[0], out[1]


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
