"""Check a Chrome / Perfetto trace file of doca_py: is it the whole run, and consistent?

``check_trace`` lists what is wrong with a trace (``[]``: nothing); ``assert_valid_trace``
raises with that list. The rules are what ``doca_py.emulated.trace`` and the test kit
promise of every file they write:

* the file is ``{"traceEvents": [...], ...}``, each event with a phase, an integer pid and tid,
  and (but for metadata) a numeric timestamp;
* each process is named once; each thread track is named once, before its first event;
* the timestamps of each track (pid, tid) never go back;
* async spans (``b``/``e``) are balanced: every span ends, on the track it began on, and
  nothing ends that did not begin (a task still in flight when the trace was taken ends with
  ``args.unfinished``; one whose start was dropped begins with ``args.truncated``);
* a ctx's state changes chain (each starts where the previous one ended, the first one from
  ``IDLE`` unless the process's ring dropped events): a state change that bypassed the trace
  breaks the chain.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["check_trace", "assert_valid_trace", "load_trace", "unfinished_spans"]

_PHASES = frozenset("MibeIXBEnC")


def load_trace(trace: str | os.PathLike[str] | Mapping[str, Any]) -> Any:
    """The parsed trace: *trace* itself if it is a mapping, else the JSON of the file it names."""
    if isinstance(trace, Mapping):
        return trace
    return json.loads(Path(trace).read_text())


def check_trace(trace: str | os.PathLike[str] | Mapping[str, Any]) -> list[str]:
    """What is wrong with *trace* (a file or its parsed body), one line per problem; ``[]`` if nothing."""
    try:
        body = load_trace(trace)
    except (OSError, ValueError) as exc:
        return [f"not a readable JSON file: {exc}"]
    if not isinstance(body, Mapping) or not isinstance(body.get("traceEvents"), list):
        return ['not a Chrome trace: expected {"traceEvents": [...]}']
    problems: list[str] = []
    procs: set[int] = set()
    tracks: set[tuple[int, int]] = set()
    last_ts: dict[tuple[int, int], float] = {}
    spans: dict[tuple[str, str], tuple[int, int, str]] = {}
    states: dict[tuple[int, int], str] = {}
    dropped: set[int] = set()
    for i, ev in enumerate(body["traceEvents"]):
        where = f"event {i}"
        if not isinstance(ev, Mapping):
            problems.append(f"{where}: not an object")
            continue
        ph, pid, tid = ev.get("ph"), ev.get("pid"), ev.get("tid")
        if ph not in _PHASES or not isinstance(pid, int) or not isinstance(tid, int):
            problems.append(f"{where}: needs a phase and an integer pid and tid: {dict(ev)}")
            continue
        key = (pid, tid)
        where = f"event {i} ({ev.get('name')!r}, pid {pid}, tid {tid})"
        if ph == "M":
            if ev.get("name") == "process_name":
                if pid in procs:
                    problems.append(f"{where}: process {pid} is named twice")
                procs.add(pid)
            elif ev.get("name") == "thread_name":
                if key in tracks:
                    problems.append(f"{where}: track {key} is named twice")
                tracks.add(key)
            continue
        ts = ev.get("ts")
        if isinstance(ts, bool) or not isinstance(ts, (int, float)):
            problems.append(f"{where}: no numeric timestamp")
            continue
        if key not in tracks:
            problems.append(f"{where}: an event before its track is named")
            tracks.add(key)
        if ts < last_ts.get(key, ts):
            problems.append(f"{where}: timestamp {ts} goes back (the track was at {last_ts[key]})")
        last_ts[key] = max(ts, last_ts.get(key, ts))
        raw = ev.get("args")
        args: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        cat = str(ev.get("cat", ""))
        if cat == "trace" and "dropped" in args:
            dropped.add(pid)
        if ph in "be":
            sid = (cat, str(ev.get("id")))
            if ph == "b":
                if sid in spans:
                    problems.append(f"{where}: span {sid[1]} begins again before it ended")
                spans[sid] = (pid, tid, where)
            else:
                began = spans.pop(sid, None)
                if began is None:
                    problems.append(f"{where}: span {sid[1]} ends but never began (an orphan end)")
                elif began[:2] != key:
                    problems.append(f"{where}: span {sid[1]} ends on another track than {began[2]}")
        elif cat == "state" and "from" in args:
            prev = states.get(key)
            expected = prev if prev is not None else ("IDLE" if pid not in dropped else None)
            # From IDLE is always possible: a ctx created where a destroyed one was gets its id.
            if expected is not None and args["from"] != expected and args["from"] != "IDLE":
                problems.append(f"{where}: state change {args['from']}->{args.get('to')} after "
                                f"{'the change to ' + expected if prev else 'no change (a ctx starts IDLE)'}: "
                                f"a state change is missing from the trace")
            states[key] = str(args.get("to"))
    for (_, name), (_, _, at) in spans.items():
        problems.append(f"{at}: span {name} never ends (neither ended nor marked unfinished)")
    return problems


def assert_valid_trace(trace: str | os.PathLike[str] | Mapping[str, Any]) -> None:
    """Raise ``AssertionError`` listing what is wrong with *trace*, if anything."""
    problems = check_trace(trace)
    if problems:
        name = "trace" if isinstance(trace, Mapping) else str(trace)
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise AssertionError(f"{name} is not a valid doca_py trace:\n  " + "\n  ".join(shown))


def unfinished_spans(trace: str | os.PathLike[str] | Mapping[str, Any]) -> list[str]:
    """The spans *trace* ends as ``unfinished`` (tasks still in flight when it was taken), as
    ``"<pid>: <what>"``."""
    body = load_trace(trace)
    return [f"{ev['pid']}: {ev.get('args', {}).get('what', ev.get('name'))}" for ev in body["traceEvents"]
            if ev.get("ph") == "e" and isinstance(ev.get("args"), Mapping) and "unfinished" in ev["args"]]
