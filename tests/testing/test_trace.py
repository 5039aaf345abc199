"""The emulated task trace: the bounded ring, its text tail and its Chrome / Perfetto rendering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import doca_py as d
from doca_py.emulated import trace
from doca_py.testing import Side
from doca_py.testing.pair import open_side

from . import sides

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="the trace of the emulated backend")


def check_chrome_trace(path: Path) -> dict[int, dict[str, Any]]:
    """Load a Chrome trace file and check its structure; per pid: its name, ctx tracks and events."""
    body = json.loads(path.read_text())
    assert set(body) == {"traceEvents", "displayTimeUnit"}
    procs: dict[int, dict[str, Any]] = {}
    open_spans: dict[str, int] = {}
    for ev in body["traceEvents"]:
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int) and ev["ph"] in "Mibe", ev
        p = procs.setdefault(ev["pid"], {"name": None, "tracks": {}, "events": []})
        if ev["ph"] == "M":
            if ev["name"] == "process_name":
                assert ev["tid"] == 0 and p["name"] is None
                p["name"] = ev["args"]["name"]
            else:
                assert ev["name"] == "thread_name" and ev["tid"] not in p["tracks"]
                p["tracks"][ev["tid"]] = ev["args"]["name"]
            continue
        assert ev["tid"] in p["tracks"], "an event before its track's name"
        assert isinstance(ev["ts"], float)
        p["events"].append(ev)
        if ev["ph"] == "b":
            assert ev["id"] not in open_spans
            open_spans[ev["id"]] = ev["tid"]
        elif ev["ph"] == "e":
            assert open_spans.pop(ev["id"]) == ev["tid"]  # a span ends on the track it began on
    for p in procs.values():
        assert p["name"] is not None
        ts = [e["ts"] for e in p["events"]]
        assert ts == sorted(ts)  # one process's ring is in time order
    return procs


@pytest.fixture
def ring() -> Iterator[None]:
    was = trace.ON
    trace.enable()
    trace.clear()
    yield
    trace.clear()
    if not was:
        trace.disable()


def _dma_run() -> list[int]:
    dev, rep = open_side("dpu")
    try:
        return sides.dma_order(Side("dpu", dev, rep, None, None, "", 0))  # type: ignore[arg-type]
    finally:
        rep.close()
        dev.close()


def test_the_ring_records_submits_completions_and_state_changes(ring: None, tmp_path: Path) -> None:
    order = _dma_run()
    evs = trace.events()
    kinds = [e[1] for e in evs]
    assert kinds.count("submit") == kinds.count("complete") == sides.N_TASKS
    states = [e[4] for e in evs if e[1] == "state"]
    assert states[0] == "IDLE->RUNNING" and states[-1].endswith("->IDLE")
    assert {e[3] for e in evs} == {"EmuDma"}
    # Completions are recorded in the order they were delivered (the shuffled order the callbacks saw).
    done = [e[4] for e in evs if e[1] == "complete"]
    submitted = [e[4] for e in evs if e[1] == "submit"]
    assert [submitted.index(t) for t in done] == order
    tail = trace.format_tail(5)
    assert len(tail.splitlines()) == 5 and "EmuDma@" in tail
    procs = check_chrome_trace(trace.write_chrome(tmp_path / "t.json"))
    (p,) = procs.values()
    assert list(p["tracks"].values()) == [f"EmuDma@{evs[0][2]:x}"]
    assert sum(e["ph"] == "b" for e in p["events"]) == sum(e["ph"] == "e" for e in p["events"]) == sides.N_TASKS


def test_failed_tasks_are_errors_with_their_status(ring: None) -> None:
    from doca_py.emulated import strict

    strict.configure(faults="dma_memcpy=1", seed=3)
    try:
        _dma_run()
    finally:
        strict.configure()
    errors = [e for e in trace.events() if e[1] == "error"]
    assert len(errors) == sides.N_TASKS and {e[5] for e in errors} == {int(d.ErrorCode.IO_FAILED)}
    assert "IO_FAILED" in trace.format_tail()


def test_the_ring_is_bounded_and_costs_nothing_when_off(ring: None) -> None:
    trace.enable(size=8)
    try:
        _dma_run()
        assert len(trace.events()) == 8  # the newest 8 of 34+ events
        assert trace.events()[-1][4].endswith("->IDLE")
        trace.clear()
        trace.disable()
        _dma_run()
        assert trace.events() == []
    finally:
        trace.enable(size=trace.DEFAULT_SIZE)


def test_strict_findings_are_kept_even_when_the_error_is_caught(ring: None) -> None:
    from doca_py.emulated import strict

    strict.configure(strict=True)
    try:
        dev, rep = open_side("dpu")
        with dev, rep, d.Pe() as pe, d.BufInventory(2) as inv:
            dma = d.Dma(dev)
            pe.connect_ctx(dma)
            dma.task_memcpy_set_conf(lambda t, u, c: None, lambda t, u, c: None, 1)
            dma.start()
            mm = d.Mmap()
            mm.allocate(4096)
            mm.add_dev(dev)
            mm.start()
            base = mm.get_memrange()[0]
            t = dma.task_memcpy_alloc_init(inv.buf_get_by_data(mm, base, 8), inv.buf_get_by_addr(mm, base + 64, 8))
            t.submit()
            with pytest.raises(d.DocaUsageError):
                t.free()  # in flight: a user who swallows this error still sees it in the report
            pe.progress()
            t.free()
            dma.close()
            mm.close()
    finally:
        strict.configure()
    (found,) = trace.findings()
    assert "EmuDmaTaskMemcpy" in found and "freed while in flight" in found
    assert ("strict", found) in [(e[1], e[4]) for e in trace.events()]


def test_doca_py_trace_writes_a_file_per_process_outside_pytest(tmp_path: Path) -> None:
    code = ("from tests.testing.test_trace import _dma_run; _dma_run()")
    env = {**os.environ, "DOCA_PY_TRACE": str(tmp_path / "run-{pid}.json"), "DOCA_PY_IMPL": "emulated"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    (path,) = tmp_path.glob("run-*.json")
    procs = check_chrome_trace(path)
    (pid,) = procs
    assert path.name == f"run-{pid}.json"
    assert sum(e["cat"] == "submit" for e in procs[pid]["events"] if e["ph"] == "i") == sides.N_TASKS
