"""Live statistics: the sampler's arithmetic and both line forms, and the flags of the three apps
(off by default, from the command line or a ``--json`` file)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from apps.common.runtime.live_stats import JSON_KEYS, LiveCounters, LiveStats, live_stats


class _Source:
    def __init__(self) -> None:
        self.c = LiveCounters(0, 0, 0, 0, 0)

    def live_counters(self) -> LiveCounters:
        return self.c


def test_one_record_per_interval_from_the_workers_deltas() -> None:
    a, b = _Source(), _Source()
    now = [10.0]
    out = io.StringIO()
    stats = LiveStats("app", 2.0, "json", stream=out, sources=lambda: [a, b], clock=lambda: now[0])
    stats._last = {id(a): a.c, id(b): b.c}
    stats._start = stats._last_t = now[0]
    a.c = LiveCounters(ops=300, bytes=300 * 4096, in_flight=5, errors=1, degraded_reads=7)
    b.c = LiveCounters(ops=100, bytes=100 * 4096, in_flight=3, errors=0)
    now[0] = 12.0
    stats.write(stats.sample())
    record = json.loads(out.getvalue())
    assert list(record) == list(JSON_KEYS)
    assert (record["iops"], record["bw_bytes"], record["total_ios"], record["in_flight"], record["errors"],
            record["degraded_reads"], record["workers"], record["elapsed_s"]) == (200.0, 200 * 4096, 400, 8, 1, 7, 2,
                                                                                   2.0)
    assert record["bw_mib_s"] == round(200 * 4096 / (1 << 20), 3)
    # the next interval counts only what happened since; a worker that went away adds nothing
    a.c = LiveCounters(ops=500, bytes=500 * 4096, in_flight=0, errors=1, degraded_reads=7)
    now[0] = 14.0
    stats.sources = lambda: [a]
    record = stats.sample()
    assert (record["total_ios"], record["errors"], record["degraded_reads"], record["workers"]) == (200, 0, 0, 1)


def test_text_line_and_latency() -> None:
    stats = LiveStats("app", 1.0, "text", latency=lambda: (812_000, None))
    record = {"elapsed_s": 3.0, "iops": 12345.4, "bw_mib_s": 48.2, "in_flight": 64, "errors": 0,
              "degraded_reads": 2, "lat_ns": {"p50": 812_000, "p99": None}}
    assert stats.format(record) == ("stats: 3.0 s | 12345 IO/s | 48.20 MiB/s | in flight 64 | errors 0 | "
                                    "degraded reads 2 | p50 812 us | p99 -")


def test_off_means_no_thread() -> None:
    with live_stats("app", 0, "text") as stats:
        assert stats is None
    with pytest.raises(ValueError):
        LiveStats("app", 0, "text")


APPS = {
    "apps.storage_target": ["-d", "03:00.0", "--cpu", "0", "--listen-port", "0"],
    "apps.gga_offload": ["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--data-1-storage", "127.0.0.1:1",
                         "--data-2-storage", "127.0.0.1:2", "--data-p-storage", "127.0.0.1:3"],
    "apps.zero_copy": ["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--storage-server", "127.0.0.1:1"],
    "apps.initiator": ["-d", "3b:00.0", "--cpu", "0", "--execution-strategy", "read_throughput_test"],
}


@pytest.mark.parametrize("module", list(APPS))
def test_the_flags_are_off_by_default_and_come_from_json_too(module: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import importlib

    parse_args = importlib.import_module(module).parse_args
    base = APPS[module]
    default = parse_args(base)
    assert (default.stats_interval, default.stats_format) == (0, "text")
    assert parse_args([*base, "--stats-interval", "2", "--stats-format", "json"]).stats_interval == 2
    cfg = tmp_path / "flags.json"
    cfg.write_text(json.dumps({"doca_program_flags": {"stats-interval": 5, "stats-format": "json"}}))
    from_json = parse_args([*base, "--json", str(cfg)])
    assert (from_json.stats_interval, from_json.stats_format) == (5, "json")
    for bad in (["--stats-interval", "-1"], ["--stats-interval", "3601"], ["--stats-format", "xml"]):
        with pytest.raises(SystemExit):
            parse_args([*base, *bad])
        assert "--stats-" in capsys.readouterr().err


def test_interval_latency_counts_only_the_ios_folded_since_the_last_call() -> None:
    from apps.initiator.metrics import IntervalLatency, IoRecord

    record = IoRecord()
    sampler = IntervalLatency(lambda: [record])
    for v in range(1, 101):
        record.add(0, v * 1000)  # 1..100 us
    record.flush()
    p50, p99 = sampler()
    assert p50 is not None and p99 is not None
    assert abs(p50 - 50_000) <= 50_000 / 256 + 1 and abs(p99 - 99_000) <= 99_000 / 256 + 1
    assert sampler() == (None, None)  # nothing new
    for _ in range(10):
        record.add(0, 5_000_000)
    record.flush()
    assert sampler() == (pytest.approx(5_000_000, rel=1 / 256),) * 2
