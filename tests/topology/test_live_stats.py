"""Live statistics (``--stats-interval``, ``--stats-format``) of the target, the bridge and the
initiator, in a real topology of separate processes: lines appear at the interval and parse; a
process started without the flag prints none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import deadlines

from apps.common.runtime.live_stats import JSON_KEYS, TEXT_PREFIX
from apps.topology import Test as TopologyTest, build_parser, environment, prepare, start, topology

pytestmark = pytest.mark.multiprocess

OPERATIONS = 40_000
"""Read transactions: a data path of a few seconds, so the initiator's 1 s interval elapses twice."""
TEXT = re.compile(r"^stats: (\d+\.\d) s \| (\d+) IO/s \| (\d+\.\d\d) MiB/s \| in flight (\d+) \| errors (\d+) \| "
                  r"degraded reads (\d+)(?: \| p50 (-|\d+ us) \| p99 (-|\d+ us))?$")


def _json_lines(lines: list[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in lines if line.startswith('{"type": "stats"')]


def _check_json(records: list[dict[str, object]], app: str, latency: bool) -> None:
    assert len(records) >= 2, records
    for r in records:
        assert list(r) == list(JSON_KEYS) + (["lat_ns"] if latency else []), r
        assert r["type"] == "stats" and r["app"] == app
        for key in JSON_KEYS[2:]:
            assert isinstance(r[key], (int, float)) and r[key] >= 0, (key, r)
        if latency:
            lat = r["lat_ns"]
            assert isinstance(lat, dict) and set(lat) == {"p50", "p99"}
            assert (lat["p50"] is None) == (lat["p99"] is None)
            if lat["p50"] is not None:
                assert 0 < lat["p50"] <= lat["p99"]
    assert any(isinstance(r["total_ios"], int) and r["total_ios"] > 0 for r in records), records
    elapsed = [r["elapsed_s"] for r in records]
    assert elapsed == sorted(elapsed)


def test_live_statistics_lines_at_the_interval_in_both_forms(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--block-count", "32", "--workdir", str(tmp_path)])
    env = environment()
    plain, files = prepare(args, tmp_path, env)
    every_second = ("--stats-interval", "1")
    test = TopologyTest("live stats", "read_throughput_test", OPERATIONS,
                        bridge_args=(*every_second, "--stats-format", "json"),
                        initiator_args=(*every_second, "--stats-format", "json"),
                        target_args={"data_1": every_second})
    with topology(tmp_path, env) as topo:
        targets, bridge, initiator = start(topo, test, args, files, plain)
        # hang bounds (tests/deadlines.py): the topology's own per-test time-out, then each teardown
        assert initiator.popen.wait(args.timeout) == 0, initiator.tail(40)
        assert bridge.popen.wait(deadlines.bound(10.0, starts=2)) == 0, bridge.tail(40)  # its --control-timeout
        for t in targets:
            assert t.popen.wait(deadlines.bound(starts=2)) == 0, t.tail(40)
        for p in (initiator, bridge, *targets):
            assert p._pump is not None
            p._pump.join(deadlines.bound(starts=1))
    _check_json(_json_lines(initiator.lines), "doca_storage_initiator_comch", latency=True)
    _check_json(_json_lines(bridge.lines), "doca_storage_comch_to_rdma_gga_offload", latency=False)
    assert not any(line.startswith(TEXT_PREFIX) for line in initiator.lines + bridge.lines)
    text = [TEXT.match(line) for line in targets[0].lines if line.startswith(TEXT_PREFIX)]
    assert len(text) >= 2 and all(text), targets[0].tail(40)
    assert any(int(m.group(2)) > 0 for m in text if m), targets[0].tail(40)
    assert all(m.group(7) is None for m in text if m)  # no latency from a target
    for quiet in targets[1:]:  # started without --stats-interval: no line at all
        assert not any(line.startswith(TEXT_PREFIX) or '"type": "stats"' in line for line in quiet.lines)
