"""A bounded in-memory trace of the emulated task machinery, per process.

The Pe/task code calls ``submit``, ``complete`` and ``state`` behind one
``if trace.ON`` branch, so the trace costs one attribute test per event while it is off.
When on, the last ``size()`` events stay in a ring (``collections.deque`` with a
``maxlen``; ``DOCA_PY_TRACE_EVENTS`` sets the size, 4,096 by default): the failure
reports of ``doca_py.testing`` show its tail, and ``write_chrome`` renders it as a Chrome /
Perfetto trace (one process track, one thread track per ctx). A ring that overflowed says
so: its text tail and its Chrome rendering carry an "N events dropped" marker, and a task
whose submit was dropped is drawn as a span marked ``truncated`` (never an end without a
begin); a task still in flight at the end is a span marked ``unfinished``.

Outside pytest, ``DOCA_PY_TRACE=path`` turns the ring on at import and writes the trace file
at exit (``path`` may hold ``{pid}``; a directory gets ``doca-<pid>.json``). Processes that
share one file name (a program and the children it starts, which inherit the variable)
merge their events into that one file, each process on its own track, under a lock.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ON", "DEFAULT_SIZE", "ENV_EVENTS", "ENV_LOG", "Event", "Record", "KINDS", "enable", "disable", "clear",
           "size", "configured_size", "dropped", "events", "submit", "complete", "state", "finding", "findings",
           "mark", "fault", "raised", "raised_in_callbacks", "format_tail", "chrome", "write_chrome", "merge_chrome",
           "add_exit_events", "skip_exit_write"]

ON = False
"""Whether events are recorded (the hooks test it before calling)."""
DEFAULT_SIZE = 4096
"""Events the ring keeps by default."""
ENV_EVENTS = "DOCA_PY_TRACE_EVENTS"
"""The environment variable that sets the ring's size (``--doca-trace-events`` under pytest)."""
ENV_LOG = "DOCA_PY_TRACE_LOG"
"""If set, a file to which ``write_chrome`` appends the path of every trace file it writes, one a line
(a test suite checks them all at its end; child processes inherit it)."""
Event = tuple[int, int, int, type, int, Any, int]
"""One event: ``(monotonic ns, kind, ctx id, ctx class, task id, task class, status)`` (kinds: ``KINDS``; for a state change the task fields hold the previous and the new state; for a strict-mode finding or a kit mark the task class field holds its text). Ids and classes, not the objects: the ring must not keep a closed ctx alive, nor format text per event."""
KINDS = ("submit", "complete", "error", "state", "strict", "kit", "fault", "raised")
"""Event kinds, by their index in an ``Event`` (``kit``: a mark of the test kit, such as a side's start;
``fault``: a fault injected into a task; ``raised``: an exception that left ``progress()``, raised by a
callback)."""
_SUBMIT, _COMPLETE, _ERROR, _STATE, _STRICT, _KIT, _FAULT, _RAISED = range(8)
_ring: deque[Event] = deque(maxlen=DEFAULT_SIZE)
# Events appended since the ring was made or cleared: what it dropped is the difference. (Two threads
# recording at once may lose an increment: the count of dropped events is then a few short.)
_total = 0
_findings: deque[str] = deque(maxlen=64)
_raised: deque[tuple[int, str]] = deque(maxlen=64)
_now = time.monotonic_ns
_STATES = ("IDLE", "STARTING", "RUNNING", "STOPPING")
_label = ""  # the process track's name (the side of a doca_pair)


def configured_size(env: Mapping[str, str] | None = None) -> int:
    """The ring size ``DOCA_PY_TRACE_EVENTS`` asks for (``DEFAULT_SIZE`` when unset); ``ValueError`` if it
    is not a positive integer."""
    text = (os.environ if env is None else env).get(ENV_EVENTS, "").strip()
    if not text:
        return DEFAULT_SIZE
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise ValueError(f"{ENV_EVENTS}={text!r}: the trace ring's size must be a positive number of events")
    return n


def enable(size: int | None = None, label: str = "") -> None:
    """Start recording into a ring of *size* events (default: ``configured_size()``); kept events are
    dropped if the size changes."""
    global ON, _ring, _label, _total
    size = configured_size() if size is None else size
    if size <= 0:
        raise ValueError(f"the trace ring's size must be a positive number of events, not {size}")
    if _ring.maxlen != size:
        _ring = deque(maxlen=size)
        _total = 0
    if label:
        _label = label
    ON = True


def disable() -> None:
    """Stop recording (the ring keeps what it holds)."""
    global ON
    ON = False


def clear() -> None:
    """Forget every event and finding."""
    global _total
    _ring.clear()
    _findings.clear()
    _raised.clear()
    _total = 0


def size() -> int:
    """How many events the ring keeps."""
    return _ring.maxlen or 0


def dropped() -> int:
    """How many events the ring dropped (the oldest) since it was made or cleared."""
    return max(_total - len(_ring), 0)


Record = tuple[int, str, int, str, str, int]
"""A readable event: ``(monotonic ns, kind, ctx id, ctx class name, what, status)``; *what* is ``"<task class>@<task id>"``, ``"<STATE>-><STATE>"`` or the text of a strict-mode finding or a kit mark."""


def _record(ev: Event) -> Record:
    ts, kind, cid, ctype, a, b, status = ev
    if kind == _STATE:
        what = f"{_STATES[a]}->{_STATES[b]}"
    elif kind >= _STRICT:
        what = b
        return ts, KINDS[kind], cid, KINDS[kind], what, status
    else:
        what = f"{b.__name__}@{a:x}"
    return ts, KINDS[kind], cid, ctype.__name__, what, status


def events() -> list[Record]:
    """The events in the ring, oldest first, as ``Record`` tuples."""
    return [_record(ev) for ev in list(_ring)]


def submit(task: Any) -> None:
    """Hook: *task* was submitted."""
    global _total
    ctx = task.ctx
    _ring.append((_now(), _SUBMIT, id(ctx), type(ctx), id(task), type(task), 0))
    _total += 1


def complete(task: Any) -> None:
    """Hook: *task*'s completion is delivered (its status is final)."""
    global _total
    ctx = task.ctx
    st = task.status
    _ring.append((_now(), _ERROR if st else _COMPLETE, id(ctx), type(ctx), id(task), type(task), st))
    _total += 1


def state(ctx: Any, prev: int, new: int) -> None:
    """Hook: *ctx* moved from state *prev* to *new*."""
    global _total
    _ring.append((_now(), _STATE, id(ctx), type(ctx), prev, new, 0))
    _total += 1


def finding(text: str) -> None:
    """Hook: strict mode found a misuse (recorded even when the caller catches the error)."""
    global _total
    _findings.append(text)
    if ON:
        _ring.append((_now(), _STRICT, 0, type(None), 0, text, 0))
        _total += 1


def mark(text: str) -> None:
    """Record a mark of the test kit (a side starts, returns, is ended …) on the process's ``kit`` track,
    if the trace is on. The first line of *text* names it; further lines are details (a stack)."""
    global _total
    if ON:
        _ring.append((_now(), _KIT, 0, type(None), 0, text, 0))
        _total += 1


def fault(text: str) -> None:
    """Hook: fault injection failed a task (*text* names the task, its kind and the status)."""
    global _total
    if ON:
        _ring.append((_now(), _FAULT, 0, type(None), 0, text, 0))
        _total += 1


def raised(exc: BaseException) -> None:
    """Hook: *exc* leaves ``progress()`` (a callback raised it): kept with its traceback, if the trace is on,
    even when the application catches it later."""
    global _total
    if not ON:
        return
    import traceback

    where = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = f"{type(exc).__name__} raised by a callback inside progress(): {_one_line(exc)}\n{where}"
    now = _now()
    _raised.append((now, text))
    _ring.append((now, _RAISED, 0, type(None), 0, text, 0))
    _total += 1


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else "(no message)"


def raised_in_callbacks() -> list[tuple[int, str]]:
    """The exceptions that left ``progress()`` in this process while the trace was on, oldest first:
    ``(monotonic ns, text)``, the text's first line naming it, the rest its traceback."""
    return list(_raised)


def findings() -> list[str]:
    """The strict-mode findings of this process, oldest first."""
    return list(_findings)


def _status_name(status: int) -> str:
    from ..errors import ErrorCode

    try:
        return ErrorCode(status).name
    except ValueError:
        return str(status)


def _dropped_text(n: int, ring: int) -> str:
    return (f"{n} earlier events dropped (the ring keeps the last {ring}; {ENV_EVENTS} or "
            f"--doca-trace-events keeps more)")


def format_tail(n: int = 40, evs: list[Record] | None = None, dropped_events: int | None = None) -> str:
    """The last *n* events as text lines (times relative to the first one shown); a first line says how
    many events the ring dropped when the lines shown reach back to its start."""
    if evs is None:
        evs = events()
        lost = dropped() if dropped_events is None else dropped_events
    else:
        lost = dropped_events or 0
    tail = evs[-n:]
    if not tail:
        return "(no events recorded)"
    t0 = tail[0][0]
    lines = [f"({_dropped_text(lost, size())})"] if lost and len(tail) == len(evs) else []
    for ts, kind, cid, cname, what, status in tail:
        extra = f" {_status_name(status)}" if kind == "error" else ""
        who = f"{cname}@{cid:x}" if cid else cname
        lines.append(f"+{(ts - t0) / 1e6:9.3f} ms  {who}  {kind:<8} {what.splitlines()[0] if what else ''}{extra}")
    return "\n".join(lines)


def chrome(evs: list[Record] | None = None, pid: int | None = None, label: str = "",
           dropped_events: int | None = None) -> list[dict[str, Any]]:
    """The events as Chrome trace events: a process track (*pid*), a thread track per ctx (and one for
    strict-mode findings, one for the kit's marks).

    Submit, completion and state change are instants; each task from submit to completion
    is also an async span (``b``/``e``), so overlapping tasks of one ctx show side by side.
    A ring that dropped events (*dropped_events*, default ``dropped()`` for this process's
    ring) starts with an "N events dropped" instant on a ``trace`` track; a task whose submit
    was dropped is a span from that instant with ``args.truncated``; a task still in flight
    at the last event is a span ended there with ``args.unfinished``. Every span ends, and
    every track's events are in time order.
    """
    pid = os.getpid() if pid is None else pid
    label = label or _label or f"doca_py {pid}"
    if evs is None:
        evs = events()
        lost = dropped() if dropped_events is None else dropped_events
    else:
        lost = dropped_events or 0
    out: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}}]
    if not evs:
        return out
    t0 = evs[0][0] / 1000.0
    # Completions whose submit is not in the ring (dropped): their span begins at the ring's start.
    seen: set[tuple[int, str]] = set()
    orphans: dict[int, list[str]] = {}
    for _, kind, cid, _, what, _ in evs:
        if kind == "submit":
            seen.add((cid, what))
        elif kind in ("complete", "error") and (cid, what) not in seen:
            seen.add((cid, what))
            orphans.setdefault(cid, []).append(what)
    tids: dict[int | str, int] = {}

    def track(key: int | str, name: str) -> int:
        tid = tids[key] = len(tids) + 1
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        return tid

    if lost:
        tid = track("trace", "trace")
        out.append({"ph": "i", "s": "p", "name": f"{lost} events dropped", "cat": "trace", "ts": t0, "pid": pid,
                    "tid": tid, "args": {"dropped": lost, "what": _dropped_text(lost, size())}})
    open_spans: dict[str, tuple[str, int]] = {}
    for ts, kind, cid, cname, what, status in evs:
        key: int | str = cid or cname
        tid = tids.get(key)  # type: ignore[assignment]
        if tid is None:
            tid = track(key, f"{cname}@{cid:x}" if cid else cname)
            for w in orphans.get(cid, ()) if cid else ():
                sid = f"{pid}:{w}"
                open_spans[sid] = (w, tid)
                out.append({"ph": "b", "name": w.split("@")[0], "cat": "task", "id": sid, "ts": t0, "pid": pid,
                            "tid": tid, "args": {"truncated": "submitted before the first event the ring kept"}})
        us = ts / 1000.0
        if kind in ("kit", "fault", "raised"):
            name, _, detail = what.partition("\n")
            out.append({"ph": "i", "s": "t", "name": name, "cat": kind, "ts": us, "pid": pid, "tid": tid,
                        "args": {"what": name, **({"detail": detail} if detail else {})}})
            continue
        args: dict[str, Any] = {"what": what}
        if kind == "error":
            args["status"] = _status_name(status)
        elif kind == "state":
            args["from"], _, args["to"] = what.partition("->")
        out.append({"ph": "i", "s": "t", "name": f"{kind} {what.split('@')[0]}", "cat": kind, "ts": us,
                    "pid": pid, "tid": tid, "args": args})
        if kind == "submit":
            sid = f"{pid}:{what}"
            old = open_spans.pop(sid, None)
            if old is not None:  # its id was reused: that task object is gone without a recorded completion
                out.append({"ph": "e", "name": old[0].split("@")[0], "cat": "task", "id": sid, "ts": us, "pid": pid,
                            "tid": old[1], "args": {"what": old[0], "unfinished": "no completion recorded"}})
            open_spans[sid] = (what, tid)
            out.append({"ph": "b", "name": what.split("@")[0], "cat": "task", "id": sid, "ts": us,
                        "pid": pid, "tid": tid})
        elif kind in ("complete", "error"):
            sid = f"{pid}:{what}"
            if open_spans.pop(sid, None) is not None:
                out.append({"ph": "e", "name": what.split("@")[0], "cat": "task", "id": sid, "ts": us,
                            "pid": pid, "tid": tid, "args": args})
    last = evs[-1][0] / 1000.0
    for sid, (what, tid) in open_spans.items():
        out.append({"ph": "e", "name": what.split("@")[0], "cat": "task", "id": sid, "ts": last, "pid": pid,
                    "tid": tid, "args": {"what": what, "unfinished": "still in flight at the last event"}})
    return out


_RUN_ENV = "DOCA_PY_TRACE_RUN"
_run = os.environ.get(_RUN_ENV, "").strip() or secrets.token_hex(8)


def _run_id() -> str:
    """This run's id (in the file's ``otherData``): a process under ``DOCA_PY_TRACE`` hands its own to the
    processes it starts, so that they merge into one file; a file of another run is replaced."""
    return _run


def _log_written(p: Path) -> None:
    log = os.environ.get(ENV_LOG)
    if log:
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            return  # the list is a test suite's aid: the trace file itself is written
        try:
            os.write(fd, f"{p.resolve()}\n".encode())  # one write in append mode: lines of two processes never mix
        finally:
            os.close(fd)


def write_chrome(path: str | os.PathLike[str], trace_events: list[dict[str, Any]] | None = None) -> Path:
    """Write a Chrome / Perfetto trace file (``{"traceEvents": [...]}``) of this process's ring,
    or of *trace_events*; returns the path written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    body = {"traceEvents": chrome() if trace_events is None else trace_events, "displayTimeUnit": "ms",
            "otherData": {"doca_py_run": _run_id()}}
    tmp = p.with_name(p.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body))
    tmp.replace(p)
    _log_written(p)
    return p


def merge_chrome(path: str | os.PathLike[str], trace_events: list[dict[str, Any]] | None = None) -> Path:
    """Write this process's events (or *trace_events*) into the trace file *path* shared by the
    processes of one run: under a lock on its directory, the events other processes of the run
    wrote there are kept (a file of an earlier run is replaced); returns the path written."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no lock
        fcntl = None  # type: ignore[assignment]
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    mine = chrome() if trace_events is None else trace_events
    pids = {ev.get("pid") for ev in mine}
    fd = os.open(p.parent, os.O_RDONLY)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the directory, not the file: the file is replaced by a rename
        try:
            body = json.loads(p.read_text())
            same_run = body.get("otherData", {}).get("doca_py_run") == _run_id()
            theirs = [ev for ev in body["traceEvents"] if ev.get("pid") not in pids] if same_run else []
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            theirs = []  # none yet, or not a trace of this run
        return write_chrome(p, theirs + mine)
    finally:
        os.close(fd)  # releases the lock


def _env_path(spec: str, pid: int | None = None) -> Path:
    pid = os.getpid() if pid is None else pid
    p = Path(spec.replace("{pid}", str(pid)))
    return p / f"doca-{pid}.json" if p.is_dir() or spec.endswith("/") else p


_exit_events: list[Callable[[], list[dict[str, Any]]]] = []
_skip_exit = False


def add_exit_events(provider: Callable[[], list[dict[str, Any]]]) -> None:
    """Under ``DOCA_PY_TRACE``, add the Chrome events *provider* returns at exit to what this process
    writes: the test kit's ``DocaPair`` adds its own track and the events its sides sent it (processes that
    end without running ``atexit``, or are ended by it). Events of another pid go, with ``{pid}`` in the
    variable, into that pid's file."""
    _exit_events.append(provider)


def skip_exit_write() -> None:
    """This process writes no trace file at exit: another one writes its events (a ``doca_pair`` side's
    parent)."""
    global _skip_exit
    _skip_exit = True


def _write_at_exit(spec: str, pid: int) -> None:
    if os.getpid() != pid or _skip_exit:  # a forked child that inherited the registration
        return
    events = chrome()
    for provider in _exit_events:
        events += provider()
    if "{pid}" in spec or _env_path(spec).name == f"doca-{pid}.json":  # one file per process
        by_pid: dict[int, list[dict[str, Any]]] = {}
        for ev in events:
            by_pid.setdefault(ev["pid"], []).append(ev)
        for other, evs in by_pid.items():
            write_chrome(_env_path(spec, other), evs)
    else:  # one name for every process of the run: merge, or two processes overwrite each other
        merge_chrome(_env_path(spec), events)


_spec = os.environ.get("DOCA_PY_TRACE", "").strip()
if _spec:
    os.environ[_RUN_ENV] = _run  # before this process starts others: they write into the same run
    enable()
    atexit.register(_write_at_exit, _spec, os.getpid())
