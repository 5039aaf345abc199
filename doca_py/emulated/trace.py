"""A bounded in-memory trace of the emulated task machinery, per process.

The Pe/task code calls ``submit``, ``complete`` and ``state`` behind one
``if trace.ON`` branch, so the trace costs one attribute test per event while it is off.
When on, the last ``DEFAULT_SIZE`` events stay in a ring (``collections.deque`` with a
``maxlen``): the failure reports of ``doca_py.testing`` show its tail, and
``write_chrome`` renders it as a Chrome / Perfetto trace (one process track, one thread
track per ctx).

Outside pytest, ``DOCA_PY_TRACE=path`` turns the ring on at import and writes the trace file
at exit (``path`` may hold ``{pid}``; a directory gets ``doca-<pid>.json``).
"""

from __future__ import annotations

import atexit
import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

__all__ = ["ON", "DEFAULT_SIZE", "Event", "Record", "KINDS", "enable", "disable", "clear", "events", "submit", "complete", "state",
           "finding", "findings", "format_tail", "chrome", "write_chrome"]

ON = False
"""Whether events are recorded (the hooks test it before calling)."""
DEFAULT_SIZE = 4096
"""Events the ring keeps by default."""
Event = tuple[int, int, int, type, int, Any, int]
"""One event: ``(monotonic ns, kind, ctx id, ctx class, task id, task class, status)`` (kinds: ``KINDS``; for a state change the task fields hold the previous and the new state). Ids and classes, not the objects: the ring must not keep a closed ctx alive, nor format text per event."""
KINDS = ("submit", "complete", "error", "state", "strict")
"""Event kinds, by their index in an ``Event``."""
_SUBMIT, _COMPLETE, _ERROR, _STATE, _STRICT = range(5)
_ring: deque[Event] = deque(maxlen=DEFAULT_SIZE)
_findings: deque[str] = deque(maxlen=64)
_now = time.monotonic_ns
_STATES = ("IDLE", "STARTING", "RUNNING", "STOPPING")
_label = ""  # the process track's name (the side of a doca_pair)


def enable(size: int = DEFAULT_SIZE, label: str = "") -> None:
    """Start recording into a ring of *size* events (kept events are dropped if the size changes)."""
    global ON, _ring, _label
    if _ring.maxlen != size:
        _ring = deque(maxlen=size)
    if label:
        _label = label
    ON = True


def disable() -> None:
    """Stop recording (the ring keeps what it holds)."""
    global ON
    ON = False


def clear() -> None:
    """Forget every event and finding."""
    _ring.clear()
    _findings.clear()


Record = tuple[int, str, int, str, str, int]
"""A readable event: ``(monotonic ns, kind, ctx id, ctx class name, what, status)``; *what* is ``"<task class>@<task id>"``, ``"<STATE>-><STATE>"`` or the text of a strict-mode finding."""


def _record(ev: Event) -> Record:
    ts, kind, cid, ctype, a, b, status = ev
    if kind == _STATE:
        what = f"{_STATES[a]}->{_STATES[b]}"
    elif kind == _STRICT:
        what = b
    else:
        what = f"{b.__name__}@{a:x}"
    return ts, KINDS[kind], cid, "strict" if kind == _STRICT else ctype.__name__, what, status


def events() -> list[Record]:
    """The events in the ring, oldest first, as ``Record`` tuples."""
    return [_record(ev) for ev in list(_ring)]


def submit(task: Any) -> None:
    """Hook: *task* was submitted."""
    ctx = task.ctx
    _ring.append((_now(), _SUBMIT, id(ctx), type(ctx), id(task), type(task), 0))


def complete(task: Any) -> None:
    """Hook: *task*'s completion is delivered (its status is final)."""
    ctx = task.ctx
    st = task.status
    _ring.append((_now(), _ERROR if st else _COMPLETE, id(ctx), type(ctx), id(task), type(task), st))


def state(ctx: Any, prev: int, new: int) -> None:
    """Hook: *ctx* moved from state *prev* to *new*."""
    _ring.append((_now(), _STATE, id(ctx), type(ctx), prev, new, 0))


def finding(text: str) -> None:
    """Hook: strict mode found a misuse (recorded even when the caller catches the error)."""
    _findings.append(text)
    if ON:
        _ring.append((_now(), _STRICT, 0, type(None), 0, text, 0))


def findings() -> list[str]:
    """The strict-mode findings of this process, oldest first."""
    return list(_findings)


def _status_name(status: int) -> str:
    from ..errors import ErrorCode

    try:
        return ErrorCode(status).name
    except ValueError:
        return str(status)


def format_tail(n: int = 40, evs: list[Record] | None = None) -> str:
    """The last *n* events as text lines (times relative to the first one shown)."""
    tail = (events() if evs is None else evs)[-n:]
    if not tail:
        return "(no events recorded)"
    t0 = tail[0][0]
    lines = []
    for ts, kind, cid, cname, what, status in tail:
        extra = f" {_status_name(status)}" if kind == "error" else ""
        lines.append(f"+{(ts - t0) / 1e6:9.3f} ms  {cname}@{cid:x}  {kind:<8} {what}{extra}")
    return "\n".join(lines)


def chrome(evs: list[Record] | None = None, pid: int | None = None, label: str = "") -> list[dict[str, Any]]:
    """The events as Chrome trace events: a process track (*pid*), a thread track per ctx.

    Submit, completion and state change are instants; each task from submit to completion
    is also an async span (``b``/``e``), so overlapping tasks of one ctx show side by side.
    """
    pid = os.getpid() if pid is None else pid
    label = label or _label or f"doca_py {pid}"
    evs = events() if evs is None else evs
    out: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}}]
    tids: dict[int, int] = {}
    for ts, kind, cid, cname, what, status in evs:
        tid = tids.get(cid)
        if tid is None:
            tid = tids[cid] = len(tids) + 1
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                        "args": {"name": f"{cname}@{cid:x}" if cid else cname}})
        us = ts / 1000.0
        args: dict[str, Any] = {"what": what}
        if kind == "error":
            args["status"] = _status_name(status)
        out.append({"ph": "i", "s": "t", "name": f"{kind} {what.split('@')[0]}", "cat": kind, "ts": us,
                    "pid": pid, "tid": tid, "args": args})
        if kind == "submit":
            out.append({"ph": "b", "name": what.split("@")[0], "cat": "task", "id": f"{pid}:{what}", "ts": us,
                        "pid": pid, "tid": tid})
        elif kind in ("complete", "error"):
            out.append({"ph": "e", "name": what.split("@")[0], "cat": "task", "id": f"{pid}:{what}", "ts": us,
                        "pid": pid, "tid": tid, "args": args})
    return out


def write_chrome(path: str | os.PathLike[str], trace_events: list[dict[str, Any]] | None = None) -> Path:
    """Write a Chrome / Perfetto trace file (``{"traceEvents": [...]}``) of this process's ring,
    or of *trace_events*; returns the path written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    body = {"traceEvents": chrome() if trace_events is None else trace_events, "displayTimeUnit": "ms"}
    tmp = p.with_name(p.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body))
    tmp.replace(p)
    return p


def _env_path(spec: str) -> Path:
    p = Path(spec.replace("{pid}", str(os.getpid())))
    return p / f"doca-{os.getpid()}.json" if p.is_dir() or spec.endswith("/") else p


def _write_at_exit(spec: str, pid: int) -> None:
    if os.getpid() == pid:  # not in a forked child that inherited the registration
        write_chrome(_env_path(spec))


_spec = os.environ.get("DOCA_PY_TRACE", "").strip()
if _spec:
    enable()
    atexit.register(_write_at_exit, _spec, os.getpid())
