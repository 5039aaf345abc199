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
from doca_py.testing import Side, assert_valid_trace
from doca_py.testing.pair import open_side
from doca_py.testing.tracecheck import check_trace, unfinished_spans

from . import sides

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="the trace of the emulated backend")


def check_chrome_trace(path: Path) -> dict[int, dict[str, Any]]:
    """Load a Chrome trace file and check its structure; per pid: its name, ctx tracks and events."""
    assert_valid_trace(path)
    body = json.loads(path.read_text())
    assert set(body) == {"traceEvents", "displayTimeUnit", "otherData"}
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


# -- every state change, every completion -------------------------------------------------------------
@pytest.mark.parametrize("ver", [(2, 6), (3, 2)], ids=["doca2.6", "doca3.2"])
def test_rdmas_starting_to_running_is_recorded_under_both_rules(ring: None, monkeypatch: pytest.MonkeyPatch,
                                                                 ver: tuple[int, int]) -> None:
    from doca_py.emulated import version

    from ..rdma.helpers import close_side, connect_pair, make_side, rig

    monkeypatch.setattr(version, "VERSION", ver)
    with rig() as (dev, pe, _):
        a, b = make_side(dev, pe), make_side(dev, pe)
        connect_pair(pe, a, b)  # 2.6: RUNNING once connected; 3.x: RUNNING on the progress after start
        close_side(a)
        close_side(b)
    states = {}
    for _, kind, cid, cname, what, _ in trace.events():
        if kind == "state":
            states.setdefault(cid, []).append(what)
    assert len(states) == 2
    for chain in states.values():
        assert chain[:2] == ["IDLE->STARTING", "STARTING->RUNNING"] and chain[-1].endswith("->IDLE"), chain
    assert_valid_trace({"traceEvents": trace.chrome()})  # the chain of each ctx has no gap


def test_every_ctx_state_change_goes_through_the_one_recording_path() -> None:
    """Only ``EmuCtx._set_state`` (and ``__init__``) assigns a ctx's ``state``: a change made anywhere
    else would escape the trace (RDMA's STARTING->RUNNING did)."""
    import ast

    emulated = ROOT / "doca_py" / "emulated"
    allowed = {("ctx.py", "__init__"), ("ctx.py", "_set_state")}
    found = []
    for path in sorted(emulated.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
                for t in targets:
                    for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(el, ast.Attribute) and el.attr == "state" and \
                                (path.relative_to(emulated).as_posix(), fn.name) not in allowed:
                            found.append(f"{path.relative_to(ROOT)}:{node.lineno} in {fn.name}: "
                                         f"{ast.unparse(el)} = ...")
    # RDMA connections have their own state (not a ctx's): the one other owner of a `state` attribute.
    assert [f for f in found if not f.startswith("doca_py/emulated/rdma/connection.py")
            and "conn.state" not in f and "c.state" not in f.split(": ")[1]] == [], found


def test_comch_send_completions_are_recorded(ring: None) -> None:
    from ..comch.helpers import pair

    with pair() as p:
        for i in range(8):
            p.client.ctx.task_send_alloc_init(p.cconn, bytes([i]) * 32).submit()
        p.pump(lambda: len(p.server.msgs) == 8 and len(p.client.sent) == 8)
        for i in range(4):
            p.server.ctx.task_send_alloc_init(p.sconn, bytes([i]) * 16).submit()
        p.pump(lambda: len(p.client.msgs) == 4 and len(p.server.sent) == 4)
        assert {k for k, _, _ in p.client.sent + p.server.sent} == {"ok"}
    evs = trace.events()
    sends = [e for e in evs if "Send" in e[4].split("@")[0]]
    assert sum(e[1] == "submit" for e in sends) == sum(e[1] == "complete" for e in sends) == 12
    body = {"traceEvents": trace.chrome()}
    assert_valid_trace(body)
    assert unfinished_spans(body) == []


# -- the ring's size and what it dropped ----------------------------------------------------------------
def test_the_ring_size_comes_from_the_environment(ring: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(trace.ENV_EVENTS, "12")
    try:
        trace.enable()
        assert trace.size() == 12
        for bad in ("0", "-3", "many"):
            monkeypatch.setenv(trace.ENV_EVENTS, bad)
            with pytest.raises(ValueError, match="DOCA_PY_TRACE_EVENTS.*positive number of events"):
                trace.enable()
        monkeypatch.delenv(trace.ENV_EVENTS)
        trace.enable()
        assert trace.size() == trace.DEFAULT_SIZE
    finally:
        trace.enable(size=trace.DEFAULT_SIZE)


def test_a_ring_that_overflowed_says_so_and_leaves_no_orphan_end(ring: None) -> None:
    trace.enable(size=10)  # 16 submits, 16 completions and 4 state changes: the start is dropped
    try:
        _dma_run()
        assert trace.dropped() > 0 and len(trace.events()) == 10
        assert trace.events()[0][1] == "complete"  # the ring starts with completions of dropped submits
        tail = trace.format_tail(40)
        assert tail.splitlines()[0] == (f"({trace.dropped()} earlier events dropped (the ring keeps the last 10; "
                                        f"DOCA_PY_TRACE_EVENTS or --doca-trace-events keeps more))")
        assert "dropped" not in trace.format_tail(3)  # the lines shown do not reach the ring's start
        body = {"traceEvents": trace.chrome()}
        assert_valid_trace(body)
        (marker,) = [e for e in body["traceEvents"] if e.get("cat") == "trace"]
        assert marker["name"] == f"{trace.dropped()} events dropped" and marker["ts"] == trace.events()[0][0] / 1e3
        truncated = [e for e in body["traceEvents"] if e["ph"] == "b" and "truncated" in e.get("args", {})]
        ends = [e for e in body["traceEvents"] if e["ph"] == "e"]
        completions = [e for e in trace.events() if e[1] == "complete"]
        assert len(truncated) == len(completions) == len(ends) > 0
        trace.clear()
        assert trace.dropped() == 0
    finally:
        trace.enable(size=trace.DEFAULT_SIZE)


def test_a_task_in_flight_at_the_end_is_a_span_marked_unfinished(ring: None) -> None:
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
        body = {"traceEvents": trace.chrome()}  # taken while the task is in flight (a side ended by the kit)
        pe.progress()
        t.free()
        dma.close()
        mm.close()
    assert_valid_trace(body)
    (name,) = unfinished_spans(body)
    assert "EmuDmaTaskMemcpy@" in name


# -- the checker ------------------------------------------------------------------------------------------
def _ev(ph: str, ts: float = 1.0, tid: int = 1, **kw: Any) -> dict[str, Any]:
    return {"ph": ph, "ts": ts, "pid": 7, "tid": tid, "name": kw.pop("name", "x"), **kw}


_HEAD = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "p"}},
         {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "EmuDma@1"}}]


@pytest.mark.parametrize("events, problem", [
    ([_ev("b", 1, cat="task", id="7:t@1")], "never ends"),
    ([_ev("e", 1, cat="task", id="7:t@1")], "never began (an orphan end)"),
    ([_ev("b", 1, cat="task", id="a"), _ev("b", 2, cat="task", id="a"), _ev("e", 3, cat="task", id="a")],
     "begins again"),
    ([_ev("i", 2), _ev("i", 1)], "goes back"),
    ([_ev("i", 1, tid=2)], "before its track is named"),
    ([_ev("i", 1, cat="state", args={"from": "IDLE", "to": "STARTING"}),
      _ev("i", 2, cat="state", args={"from": "RUNNING", "to": "STOPPING"})], "a state change is missing"),
    ([_ev("i", 1, cat="state", args={"from": "STARTING", "to": "RUNNING"})], "a ctx starts IDLE"),
    ([_ev("i")] + [_HEAD[0]], "named twice"),
    ([{"ph": "i", "pid": 7, "tid": 1, "name": "x"}], "no numeric timestamp"),
    ([{"ph": "i", "pid": "7", "tid": 1, "ts": 1.0}], "integer pid and tid"),
])
def test_the_checker_finds_each_broken_rule(events: list[dict[str, Any]], problem: str) -> None:
    problems = check_trace({"traceEvents": _HEAD + events})
    assert any(problem in p for p in problems), problems
    with pytest.raises(AssertionError, match="not a valid doca_py trace"):
        assert_valid_trace({"traceEvents": _HEAD + events})


def test_the_checker_accepts_marked_spans_and_a_chain_after_dropped_events(tmp_path: Path) -> None:
    good = _HEAD + [
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 2, "args": {"name": "trace"}},
        _ev("i", 1, tid=2, cat="trace", args={"dropped": 5}),
        _ev("b", 1, cat="task", id="a", args={"truncated": "..."}),
        _ev("i", 2, cat="state", args={"from": "RUNNING", "to": "STOPPING"}),  # its earlier changes were dropped
        _ev("e", 3, cat="task", id="a"),
        _ev("b", 3, cat="task", id="a"),
        _ev("e", 4, cat="task", id="a", args={"unfinished": "..."}),
    ]
    assert check_trace({"traceEvents": good}) == []
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": good}))
    assert check_trace(tmp_path / "t.json") == [] and unfinished_spans(tmp_path / "t.json") == ["7: x"]
    (tmp_path / "bad.json").write_text("{not json")
    assert check_trace(tmp_path / "bad.json")[0].startswith("not a readable JSON file")
    assert check_trace({"events": []}) == ['not a Chrome trace: expected {"traceEvents": [...]}']


MERGE = """
import subprocess, sys
from tests.testing.test_trace import _dma_run
kids = [subprocess.Popen([sys.executable, "-c", "from tests.testing.test_trace import _dma_run; _dma_run()"])
        for _ in range(2)]
_dma_run()
assert [k.wait(120) for k in kids] == [0, 0]
"""


def test_doca_py_trace_without_pid_merges_the_processes_of_a_run_into_one_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    env = {**os.environ, "DOCA_PY_TRACE": str(path), "DOCA_PY_IMPL": "emulated"}
    env.pop("DOCA_PY_TRACE_RUN", None)
    runs = []
    for _ in range(2):  # the second run replaces the first one's file: it does not merge into it
        out = subprocess.run([sys.executable, "-c", MERGE], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        procs = check_chrome_trace(path)
        assert len(procs) == 3  # the program and its two children, each on its own process track
        for p in procs.values():
            assert sum(e["cat"] == "submit" for e in p["events"] if e["ph"] == "i") == sides.N_TASKS
        runs.append(set(procs))
        assert json.loads(path.read_text())["otherData"]["doca_py_run"]
    assert not runs[0] & runs[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no lock file, no temporary left


@pytest.mark.skipif(not os.environ.get("DOCA_PY_TEST_WRITE_BAD_TRACE"), reason="run by the test below only")
def test_writes_a_trace_with_an_orphan_end(tmp_path: Path) -> None:
    trace.write_chrome(tmp_path / "bad.json", [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
        {"ph": "e", "name": "x", "cat": "task", "id": "1:x", "ts": 1.0, "pid": 1, "tid": 1}])


def test_the_suite_checks_every_trace_file_it_writes(tmp_path: Path) -> None:
    """tests/conftest.py checks, at the end of the session, every file ``write_chrome`` wrote (it lists them
    in ``DOCA_PY_TRACE_LOG``): an invalid one fails the session."""
    env = {k: v for k, v in os.environ.items() if k != trace.ENV_LOG}
    env["DOCA_PY_TEST_WRITE_BAD_TRACE"] = "1"
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                          f"--basetemp={tmp_path / 'tmp'}", "tests/testing/test_trace.py::test_writes_a_trace_with_an_orphan_end"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "1 passed" in out.stdout and out.returncode == pytest.ExitCode.TESTS_FAILED, out.stdout + out.stderr
    assert "doca_py traces: 1 trace files written by this session checked, 1 invalid" in out.stdout
    assert "span 1:x ends but never began (an orphan end)" in out.stdout


def test_write_chrome_lists_the_files_it_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(trace.ENV_LOG, str(tmp_path / "written.log"))
    a = trace.write_chrome(tmp_path / "a.json", [])
    b = trace.write_chrome(tmp_path / "sub" / "b.json", [])
    assert (tmp_path / "written.log").read_text().splitlines() == [str(a.resolve()), str(b.resolve())]


def test_a_task_id_reused_without_a_completion_ends_its_old_span_unfinished() -> None:
    # A task object that vanished in flight (its ctx leaked, never stopped), whose address a new task took.
    evs = [(1000, "submit", 5, "EmuDma", "T@a", 0), (2000, "submit", 6, "EmuDma", "T@a", 0),
           (3000, "complete", 6, "EmuDma", "T@a", 0)]
    body = {"traceEvents": trace.chrome(evs, pid=9, label="p")}
    assert_valid_trace(body)
    assert unfinished_spans(body) == ["9: T@a"]


def test_the_checker_lets_a_new_ctx_take_a_destroyed_ones_id() -> None:
    chain = [("IDLE", "RUNNING"), ("RUNNING", "STOPPING"), ("IDLE", "RUNNING")]  # the first one leaked RUNNING
    events = [_ev("i", i, cat="state", args={"from": a, "to": b}) for i, (a, b) in enumerate(chain)]
    assert check_trace({"traceEvents": _HEAD + events}) == []


PAIR = """
import os
import sys
from doca_py.testing import DocaPair, Knobs
from tests.testing import sides

if __name__ == "__main__":
    pair = DocaPair(Knobs(seed=3))
    pair.run(sides.dma_order, sides.returns_early, start_method=sys.argv[1])
    print("PIDS", os.getpid(), *[r.pid for r in pair.reports])
"""


@pytest.mark.multiprocess
@pytest.mark.parametrize("method", ["warm", "fork", "spawn"])
@pytest.mark.parametrize("per_pid", [True, False], ids=["run-{pid}", "run"])
def test_doca_py_trace_outside_pytest_holds_both_sides_of_a_doca_pair(tmp_path: Path, method: str,
                                                                      per_pid: bool) -> None:
    """Outside pytest, ``DOCA_PY_TRACE`` gives a ``DocaPair`` program the kit's track and both sides, whatever
    the start method: a side forked from the zygote or the program runs no ``atexit``, a spawned one wrote the
    same file as its sibling."""
    script = tmp_path / "pair_program.py"
    script.write_text(PAIR)
    spec = tmp_path / "traces" / ("run-{pid}.json" if per_pid else "run.json")
    env = {**os.environ, "DOCA_PY_TRACE": str(spec), "DOCA_PY_IMPL": "emulated", "PYTHONPATH": str(ROOT)}
    env.pop("DOCA_PY_TRACE_RUN", None)
    out = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", str(script), method], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    files = sorted(spec.parent.glob("*.json"))
    procs: dict[int, dict[str, Any]] = {}
    for path in files:
        found = check_chrome_trace(path)
        if per_pid:
            (pid,) = found
            assert path.name == f"run-{pid}.json"
        procs.update(found)
    assert len(files) == (3 if per_pid else 1), (files, out.stdout)
    names = sorted("doca_py" if p["name"].startswith("doca_py ") else p["name"].split(" (")[0]
                   for p in procs.values())
    assert names == ["doca_py", "dpu side", "host side"], (names, out.stdout)  # the program and both sides
    (host,) = [p for p in procs.values() if p["name"].startswith("host side")]
    assert sum(e["cat"] == "submit" for e in host["events"] if e["ph"] == "i") == sides.N_TASKS
    (program,) = [p for p in procs.values() if p["name"].startswith("doca_py")]
    assert "doca_pair" in program["tracks"].values()  # the kit's track: sides started, each side's result
    assert "host side ok" in [e["name"] for e in program["events"]]
