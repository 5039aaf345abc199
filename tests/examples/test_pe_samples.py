"""The progress-engine sample ports (``samples/doca_common/pe_*``) run as processes.

Each sample copies DMA buffer pairs (source ``k`` filled with the byte ``k``) and, after its run, logs
which destinations hold their source's bytes (``Copied: …`` / ``Not copied: …``, read from the memory,
not from the callbacks). The tests check those against what the sample must do: every copy made, or, for
the samples that stop or fail midway, exactly the copies of the tasks that completed with success, plus the
pattern's own evidence (the stop in the middle, the task that failed and why, the resubmissions).
Environment and helpers as in ``test_examples.py``: strict mode, shuffled completions, the test kit's knobs.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .test_examples import EXAMPLES, ROOT, TIMEOUT, env, run_one  # noqa: F401  (env: the fixture)

pytestmark = pytest.mark.multiprocess

NUM_TASKS = 16
ALL = list(range(1, NUM_TASKS + 1))
PE_SAMPLES = ["pe_async_stop.py", "pe_event.py", "pe_multi_context.py", "pe_polling.py", "pe_reactive.py",
              "pe_single_task_comp_cb.py", "pe_task_error.py", "pe_task_resubmit.py", "pe_task_try_submit.py"]


def _values(out: str, label: str) -> list[int]:
    """The values of the port's ``Copied:`` or ``Not copied:`` line."""
    text = next(line.split(f"{label}: ", 1)[1] for line in out.splitlines() if f"] INFO: {label}: " in line)
    return [] if text == "none" else [int(v) for v in text.split(",")]


def _messages(out: str, logger: str) -> list[str]:
    """What *logger* logged, in order, without the ``[LOGGER] LEVEL: `` prefix."""
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(f"[{logger}] ")]


def _clean(out: str) -> None:
    assert "Memcpy failed" not in out, out  # no destination differs from its source
    assert "cleanup:" not in out, out  # every release in the clean-up succeeded


@pytest.mark.parametrize("script", ["pe_polling.py", "pe_event.py", "pe_reactive.py", "pe_single_task_comp_cb.py",
                                    "pe_task_try_submit.py"])
def test_pe_sample_copies_every_buffer(env: dict[str, str], script: str) -> None:
    out = run_one(env, script)
    assert _values(out, "Copied") == ALL and _values(out, "Not copied") == [], out
    assert "Task failed" not in out, out
    _clean(out)


def test_pe_event_returns_once_all_tasks_completed(env: dict[str, str]) -> None:
    lines = _messages(run_one(env, "pe_event.py"), "PE_EVENT::SAMPLE")
    assert lines.index("Registering PE event") < lines.index("Creating DMA")  # the epoll is set up first
    assert lines.index("Running until all tasks are complete") < lines.index("All tasks completed")


def test_pe_reactive_runs_in_the_callbacks(env: dict[str, str]) -> None:
    out = run_one(env, "pe_reactive.py")
    lines = _messages(out, "PE_REACTIVE::SAMPLE")
    # The RUNNING callback submits, the last completion stops, the IDLE callback destroys and ends the loop.
    steps = ["Polling until all tasks are completed", "DMA context is running. Submitting tasks",
             "All tasks have completed. Stopping context", "DMA context has been stopped. Destroying context"]
    assert [line for line in lines if line in steps] == steps, out
    assert _values(out, "Copied") == ALL


def test_pe_multi_context_copies_on_every_ctx(env: dict[str, str]) -> None:
    out = run_one(env, "pe_multi_context.py")
    assert _values(out, "Copied") == ALL * 4 and _values(out, "Not copied") == [], out  # 16 tasks on 4 ctxs
    _clean(out)


def test_pe_async_stop_stops_after_half_of_the_tasks(env: dict[str, str]) -> None:
    out = run_one(env, "pe_async_stop.py")
    lines = _messages(out, "PE_ASYNC_STOP::SAMPLE")
    stop = lines.index("Stopping DMA in the middle")  # doca_ctx_stop said DOCA_ERROR_IN_PROGRESS
    completed = [i for i, line in enumerate(lines) if re.fullmatch(r"Task 0x[0-9a-f]+ completed successfully", line)]
    flushed = [line for line in lines if line.startswith("Task flushed with status")]
    assert len([i for i in completed if i < stop]) == NUM_TASKS // 2, out
    # The tasks in flight at the stop are flushed, or delivered with success if the engine had finished them.
    assert len(completed) + len(flushed) == NUM_TASKS, out
    assert set(flushed) <= {"Task flushed with status Input/output operation failed"}, out
    transitions = [line.split(" state changed ")[1] for line in lines if " state changed " in line]
    assert transitions[-2:] == ["from running to stopping", "from stopping to idle"], out
    assert "Failed to stop DMA" not in out and "Task failed" not in out, out
    copied = _values(out, "Copied")
    assert len(copied) == len(completed) and sorted(copied + _values(out, "Not copied")) == ALL, out
    _clean(out)


def test_pe_task_error_reports_the_failed_task(env: dict[str, str]) -> None:
    out = run_one(env, "pe_task_error.py")
    lines = _messages(out, "PE_TASK_ERROR::SAMPLE")
    # The third task's source has no data: the engine fails it, and the ctx stops by itself.
    assert "Task failed with status Invalid input (expected value = 3)" in lines, out
    failed = [line for line in lines if line.startswith("Task failed with status")]
    others = set(failed) - {"Task failed with status Invalid input (expected value = 3)"}
    assert all(line.startswith("Task failed with status Input/output operation failed (") for line in others), out
    completed = [int(m.group(1)) for line in lines if (m := re.fullmatch(r"Task completed \(expected value = (\d+)\)",
                                                                        line))]
    assert len(completed) + len(failed) == 255, out
    assert "CTX moved to stopping state unexpectedly" in lines, out
    transitions = [line.split(" state changed ")[1] for line in lines if " state changed " in line]
    assert transitions[-2:] == ["from running to stopping", "from stopping to idle"], out
    # Exactly the tasks that completed with success copied their buffer.
    assert _values(out, "Copied") == sorted(completed), out
    assert 3 in _values(out, "Not copied"), out
    _clean(out)


def test_pe_task_resubmit_reuses_four_tasks(env: dict[str, str]) -> None:
    out = run_one(env, "pe_task_resubmit.py")
    lines = _messages(out, "PE_TASK_RESUBMIT::SAMPLE")
    allocated: dict[str, int] = {}
    for line in lines:
        if m := re.fullmatch(r"Task (0x[0-9a-f]+) allocated with buffers index (\d+)", line):
            allocated[m.group(1)] = int(m.group(2))
    assert sorted(allocated.values()) == [0, 1, 2, 3], out
    resubmits = [(m.group(1), int(m.group(2))) for line in lines
                 if (m := re.fullmatch(r"Task (0x[0-9a-f]+) resubmitting with buffers index (\d+)", line))]
    # 12 resubmissions take the pairs 4..15 in order, each of one of the 4 allocated tasks.
    assert [index for _, index in resubmits] == list(range(4, 16)), out
    assert {task for task, _ in resubmits} <= set(allocated), out
    assert _values(out, "Copied") == ALL and "Task failed" not in out and "Failed to submit" not in out, out
    _clean(out)


@pytest.mark.parametrize("script", PE_SAMPLES)
def test_pe_sample_takes_no_argument(env: dict[str, str], script: str) -> None:
    """Like the C samples: no parameter; ``-h`` prints the usage, anything else is refused."""
    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=ROOT, env=env, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)

    helped = call("-h")
    assert helped.returncode == 0 and f"usage: {script} [-h]" in helped.stdout, helped.stdout + helped.stderr
    refused = call("-p", "03:00.0")
    assert refused.returncode == 2 and "unrecognized arguments: -p 03:00.0" in refused.stderr, refused.stderr
