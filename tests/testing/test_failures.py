"""What a failed ``doca_pair`` run says (issue 35, the test kit): the side that failed first, exceptions
raised by callbacks, leaks held by reference cycles, where an ended side was."""

from __future__ import annotations

import re
from typing import Any

import pytest

from doca_py.testing import DocaPair, Knobs, PairError

from . import sides

pytestmark = pytest.mark.multiprocess


def _fails(pair: DocaPair, host: object, dpu: object, args: object = None) -> PairError:
    with pytest.raises(PairError) as info:
        pair.run(host, dpu, timeout=60, args=args)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize("how, first", [
    ("strict", r"host side: strict mode: <doca_buf .*>: dec_refcount to 0 .* in flight; .*"),
    ("fault", r"host side: fault injected into task EmuDma#0/0#0 \(dma_memcpy\): IO_FAILED"),
    ("callback", r"host side: ValueError raised by a callback inside progress\(\): the completion callback failed"),
])
def test_the_headline_names_the_side_whose_failure_came_first_not_the_one_that_ended_first(
        doca_knobs: Knobs, how: str, first: str) -> None:
    """The host fails (a strict-mode finding, an injected fault, an exception raised by its callback), handles
    it, tells the DPU and waits in its clean-up; the DPU raises on the news and its function ends first."""
    pair = DocaPair(doca_knobs.replace(faults="dma_memcpy=1" if how == "fault" else "", strict=True))
    err = _fails(pair, sides.host_fails_then_waits, sides.dpu_raises_when_told, args=how)
    host, dpu = err.reports
    # The kit ended the host, or the host found the DPU gone first (PeerGone): either way it did not fail first
    # by the clock of its function's end.
    assert host.status in ("ended", "raised") and dpu.status == "raised"
    head, followed = str(err).splitlines()[:2]
    assert re.fullmatch(first, head), head
    assert re.fullmatch(r"the dpu side's failure followed, \d+\.\d ms later: dpu side raised RuntimeError: receive "
                        r"failed: CONNECTION_RESET", followed), followed
    assert "=== host side" in str(err).split("=== dpu side")[0]  # the first side's report comes first


def test_an_exception_a_callback_raised_is_in_the_sides_report_and_trace_with_its_traceback(
        doca_knobs: Knobs) -> None:
    pair = DocaPair(doca_knobs)
    err = _fails(pair, sides.host_fails_then_waits, sides.dpu_raises_when_told, args="callback")
    host = err.reports[0]
    # The application caught it and hung in its clean-up: the report still shows the exception and where.
    (text,) = host.raised_in_callbacks
    assert text.startswith("ValueError raised by a callback inside progress(): the completion callback failed")
    assert "in on_copied" in text and 'raise ValueError("the completion callback failed")' in text, text
    section = str(err).split("--- host side: exceptions raised by callbacks inside progress() ---\n", 1)[1]
    assert section.startswith("ValueError raised by a callback") and "in on_copied" in section
    (event,) = [e for e in host.trace if e.get("cat") == "raised"]
    assert event["name"].startswith("ValueError raised by a callback") and "in on_copied" in event["args"]["detail"]
    assert "ValueError raised by a callback" in host.tail  # the text tail of its last events too


def test_the_test_process_reports_the_exceptions_its_callbacks_raised(doca_knobs: Knobs, doca_dev: object,
                                                                       doca_pe: object) -> None:
    import doca_py as d
    from doca_py.emulated import trace

    dma = d.Dma(doca_dev)  # type: ignore[arg-type]
    doca_pe.connect_ctx(dma)  # type: ignore[attr-defined]

    def on_copied(task: object, user_data: object, ctx_user_data: object) -> None:
        raise KeyError("from the test's own callback")

    dma.task_memcpy_set_conf(on_copied, on_copied, 1)
    dma.start()
    with d.BufInventory(2) as inv, d.Mmap() as mm:
        mm.allocate(128)
        mm.add_dev(doca_dev)  # type: ignore[arg-type]
        mm.start()
        base = mm.get_memrange()[0]
        src, dst = inv.buf_get_by_data(mm, base, 8), inv.buf_get_by_addr(mm, base + 64, 8)
        task = dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        with pytest.raises(KeyError):
            while True:
                doca_pe.progress()  # type: ignore[attr-defined]
        task.free()
        src.dec_refcount()
        dst.dec_refcount()
    dma.close()
    ((_, text),) = trace.raised_in_callbacks()
    assert text.startswith("KeyError raised by a callback inside progress(): ") and "from the test's own" in text
    assert "in on_copied" in text


def test_the_leak_check_finds_objects_held_only_by_a_reference_cycle(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.leaks_in_a_cycle, sides.returns_early)
    host = err.reports[0]
    assert str(err).splitlines()[0].startswith("host side raised DocaLeakError: the host function returned with "
                                               "DOCA objects still open")
    assert "<Mmap: open, reachable only through a reference cycle" in host.detail, host.detail
    assert "<EmuDma" in host.detail or "<Dma: open, reachable only through a reference cycle" in host.detail, \
        host.detail


def test_where_an_ended_side_was_leaves_out_multiprocessing_and_the_kits_frames(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.sleep_long, sides.raise_value_error)
    host = err.reports[0]
    where = host.detail.split("it was at:\n", 1)[1]
    assert where.lstrip().startswith('File "') and "sides.py" in where.splitlines()[0], where
    assert "multiprocessing" not in where and "_child" not in where and "child.py" not in where, where
    assert where.rstrip().endswith("time.sleep(600)")


def test_python_random_is_seeded_from_the_seed_in_each_side(doca_knobs: Knobs) -> None:
    import random

    first = DocaPair(doca_knobs.replace(seed=5)).run(sides.python_random, sides.python_random)
    again = DocaPair(doca_knobs.replace(seed=5)).run(sides.python_random, sides.python_random)
    other = DocaPair(doca_knobs.replace(seed=6)).run(sides.python_random, sides.python_random)
    assert first == again and first != other
    assert first[0] == [r.random() for r in [random.Random("5/host")] for _ in range(3)]  # the seed and its role
    assert first[1] == [r.random() for r in [random.Random("5/dpu")] for _ in range(3)]


def _report(role: str, status: str, detail: str = "", events: tuple[tuple[float, str, str], ...] = ()) -> Any:
    from doca_py.testing import SideReport

    trace = [{"ph": "i", "ts": ts, "cat": cat, "name": name, "args": {"what": name}} for ts, cat, name in events]
    return SideReport(role, status=status, detail=detail, trace=trace)


def test_the_headline_rules() -> None:
    from doca_py.testing.report import first_failure, headline

    def lines(*reports: Any) -> list[str]:
        found = first_failure(list(reports))
        assert found is not None
        return headline(*found, list(reports))

    # A side that hung after an injected fault, the other timed out too: the fault, then the time-out.
    assert lines(_report("host", "timed out", "timed out after 60 s; it was at:\n...",
                         ((10.0, "fault", "fault injected into task EmuDma#0/0#0 (dma_memcpy): IO_FAILED"),)),
                 _report("dpu", "timed out", "timed out after 60 s; it was at:\n...")) == [
        "host side: fault injected into task EmuDma#0/0#0 (dma_memcpy): IO_FAILED",
        "then the host side timed out after 60 s"]
    # A side that raised after an earlier finding: its exception first, the finding next; a PeerGone is no
    # failure of its own.
    raised = _report("dpu", "raised", "Traceback (most recent call last):\n  ...\nValueError: boom",
                     ((5.0, "strict", "<Pe>: a rule"), (9.0, "kit", "dpu side raised ValueError")))
    gone = _report("host", "raised", "Traceback (most recent call last):\n  ...\n"
                   "doca_py.testing.PeerGone: host side: the dpu side has ended",
                   ((12.0, "kit", "host side raised PeerGone"),))
    assert lines(gone, raised) == ["dpu side raised ValueError: boom", "its first failure: strict mode: <Pe>: a rule"]
    # However a side ended (ok, or ended by the kit a moment before it would have returned: timing), its
    # failure counts: an injected fault that came first is named, what the other side raised follows.
    later = _report("dpu", "raised", "Traceback (most recent call last):\n  ...\nValueError: boom",
                    ((3000.0, "kit", "dpu side raised ValueError"),))
    for status in ("ok", "ended"):
        faulted = _report("host", status, events=((1000.0, "fault", "fault injected into task X (dma_memcpy): "
                                                                      "IO_FAILED"),))
        assert lines(faulted, later) == ["host side: fault injected into task X (dma_memcpy): IO_FAILED",
                                         "the dpu side's failure followed, 2.0 ms later: dpu side raised ValueError: boom"]
    # The side whose function ended first is not the side that failed first.
    ended = _report("host", "ended", "it was at:\n...", ((2000.0, "raised", "KeyError raised by a callback inside "
                                                                             "progress(): 'x'"),))
    late = _report("dpu", "raised", "Traceback (most recent call last):\nRuntimeError: late",
                   ((7000.0, "kit", "dpu side raised RuntimeError"),))
    assert lines(ended, late) == ["host side: KeyError raised by a callback inside progress(): 'x'",
                                  "the dpu side's failure followed, 5.0 ms later: dpu side raised RuntimeError: late"]
