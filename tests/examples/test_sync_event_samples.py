"""The sync event ports (``samples/doca_common/sync_event_local_pci`` and ``sync_event_remote_pci``) as
processes: the local side exports its event over comch, the remote side imports it; each signals the other.

Each port is both C builds: with ``-r`` the DPU one (a comch server), without it the host one (a client),
so the tests run both placements of the event. The DPU side starts first; the host's client keeps trying
to reach the server while it is STARTING, as a DOCA comch client does, so no readiness line is needed.
The assertions check the values each side saw: the remote side's wait for 1 returned and it then set 2
(or, with ``--atomic``, the two adds fetched 0 and 1 from the one event), and the local side's wait for 2
returned. Runs on the path this test run tests (emulated, or native over libdoca), strict and shuffled.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from .test_examples import EXAMPLES, ROOT, TIMEOUT, env, run, samples  # noqa: F401 - env is a fixture

pytestmark = pytest.mark.multiprocess

DPU = ["-d", "03:00.0", "-r", "3b:00.0"]
HOST = ["-d", "3b:00.0"]


def _lines(out: str) -> list[str]:
    """The sample's own log lines, without their prefix."""
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("[SYNC_EVENT::SAMPLE]")]


def _exchange(env: dict[str, str], local_on_dpu: bool, *mode: str) -> tuple[list[str], list[str]]:
    """Run the pair, the DPU side first; return (local's lines, remote's lines)."""
    local_args, remote_args = (DPU, HOST) if local_on_dpu else (HOST, DPU)
    with samples() as started:
        first = ("sync_event_local_pci.py", local_args) if local_on_dpu else ("sync_event_remote_pci.py", remote_args)
        second = ("sync_event_remote_pci.py", remote_args) if local_on_dpu else ("sync_event_local_pci.py", local_args)
        a = run(started, env, first[0], *first[1], *mode)
        b = run(started, env, second[0], *second[1], *mode)
        out_a, out_b = a.finish(), b.finish()
    return (_lines(out_a), _lines(out_b)) if local_on_dpu else (_lines(out_b), _lines(out_a))


def _in_order(lines: list[str], *expected: str) -> None:
    """*expected* are lines of *lines*, in this order."""
    at = [lines.index(e) for e in expected]
    assert at == sorted(at), lines


@pytest.mark.parametrize("local_on_dpu", [True, False], ids=["local-on-dpu", "local-on-host"])
@pytest.mark.parametrize("mode", [[], ["--async", "--async-num-tasks", "2"]], ids=["sync", "async"])
def test_sync_event_set(env: dict[str, str], local_on_dpu: bool, mode: list[str]) -> None:
    local, remote = _exchange(env, local_on_dpu, *mode)
    _in_order(local, "Exported DOCA Sync Event has been sent to remote side successfully", "Set the sync event to 1",
              "Waiting for sync event to be signaled from remote side (value 2)", "Done")
    _in_order(remote, "Received blob from remote side",
              "Waiting for sync event to be signaled from remote side (value 1)", "Set the sync event to 2", "Done")


@pytest.mark.parametrize("local_on_dpu", [True, False], ids=["local-on-dpu", "local-on-host"])
@pytest.mark.parametrize("mode", [[], ["--async", "--async-num-tasks", "2"]], ids=["sync", "async"])
def test_sync_event_atomic(env: dict[str, str], local_on_dpu: bool, mode: list[str]) -> None:
    """``--atomic``: the local add fetches 0 from the new event, the remote one the local side's 1 — both
    sides add to the same 64-bit value across processes."""
    local, remote = _exchange(env, local_on_dpu, "--atomic", *mode)
    _in_order(local, "Added 1 to the sync event, which held 0",
              "Waiting for sync event to be signaled from remote side (value 2)", "Done")
    _in_order(remote, "Waiting for sync event to be signaled from remote side (value 1)",
              "Added 1 to the sync event, which held 1", "Done")


def _run_alone(env: dict[str, str], script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=ROOT, env=env, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("script", ["sync_event_local_pci.py", "sync_event_remote_pci.py"])
def test_sync_event_needs_a_device_address(env: dict[str, str], script: str) -> None:
    """``-d/--pci-addr`` is mandatory, as in C; ``-h`` lists the C flags."""
    proc = _run_alone(env, script)
    assert proc.returncode == 2 and "--pci-addr" in proc.stderr, proc.stderr
    helped = _run_alone(env, script, "-h")
    assert helped.returncode == 0
    for flag in ("--pci-addr", "--rep-pci", "--async", "--async-num-tasks", "--atomic"):
        assert flag in helped.stdout, helped.stdout


def test_sync_event_async_num_tasks_range(env: dict[str, str]) -> None:
    """``sync_event_config_validate``: a negative task count is refused in asynchronous mode, before comch."""
    proc = _run_alone(env, "sync_event_local_pci.py", *HOST, "--async", "--async-num-tasks", "-1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Please specify num async tasks in the range" in out and "DOCA_ERROR_INVALID_VALUE" in out, out
    assert "Traceback" not in out, out
