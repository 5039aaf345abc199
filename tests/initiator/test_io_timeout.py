"""``--io-timeout`` of ``python -m apps.initiator`` against the fake bridge
(``tests/initiator/fake_bridge.py``): a service that stops answering IOs ends the run with the IOs
that timed out, in bounded time; with the deadline off, nothing changes for a healthy service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import deadlines

from .test_integration import (DEADLINE, PHASES, Bridge, _initiator_argv, plain, bridge_factory,  # noqa: F401
                               run_initiator)

pytestmark = [pytest.mark.multiprocess, pytest.mark.usefixtures("backend")]


def test_ios_without_a_response_time_out_and_the_session_still_ends(plain: Path, bridge_factory: object,
                                                                    tmp_path: Path) -> None:
    """The service answers 30 IOs, then none (but still its control requests): after
    ``--io-timeout`` the run fails naming the IOs; stop and shutdown are still performed, in bounded time.
    The time-out is short, and long enough that a loaded machine does not time out the first 30."""
    io_timeout, control = deadlines.product_timeout(1), deadlines.product_timeout(10)
    bridge: Bridge = bridge_factory(plain, "--stall-after-ios", "30")  # type: ignore[operator]
    res = run_initiator(tmp_path, _initiator_argv(bridge, "read_throughput_test", "--run-limit-operation-count",
                                                  "100000", "--io-timeout", str(io_timeout),
                                                  "--control-timeout", str(control)),
                        within=max(DEADLINE, deadlines.bound(io_timeout, control, starts=2)))
    assert res.rc == 1, res.err
    assert f"IO(s) timed out: no response from the service within {io_timeout} s (--io-timeout): read of storage " \
        "offset " in res.err, res.err
    assert f"IO(s) timed out after {io_timeout} s (--io-timeout)" in res.err
    assert "| Test failed!!" in res.err and "Traceback" not in res.err
    assert "the service does not answer" not in res.err  # it answered stop: not unresponsive
    assert bridge.rest()[-3:] == ["got stop_storage_request", "got shutdown_request", "bye"]


def test_io_timeout_zero_is_no_deadline(plain: Path, bridge_factory: object, tmp_path: Path) -> None:
    bridge: Bridge = bridge_factory(plain)  # type: ignore[operator]
    res = run_initiator(tmp_path, _initiator_argv(bridge, "read_only_data_validity_test", "--storage-plain-content",
                                                  str(plain), "--io-timeout", "0"))
    assert res.rc == 0, res.err
    assert bridge.rest() == PHASES


@pytest.mark.parametrize("value", ["-1", "3601", "x"])
def test_bad_io_timeout_is_refused(value: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    from .test_integration import ROOT, _env

    out = subprocess.run([sys.executable, "-m", "apps.initiator", "-d", "3b:00.0", "--cpu", "0",
                          "--execution-strategy", "read_throughput_test", "--io-timeout", value],
                         cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--io-timeout" in out.stderr, out.stderr


def test_a_stopped_service_is_not_one_that_closed_the_connection(plain: Path, bridge_factory: object,
                                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service stops (SIGSTOP) after 30 IOs. Whether the initiator still has a send in flight then is
    timing (the service may or may not have posted its receives again before it stopped): with one, the
    transport drops the connection once it goes unanswered for a retry window; without, the IOs time out
    after --io-timeout. Either way the run says what happened (never "closed the control connection")
    and each worker names the IOs that never got their response."""
    # short, so the stop is found soon; long enough that a loaded machine does not make the service
    # look stopped before it is (tests/deadlines.py)
    window, io_timeout, control = deadlines.product_timeout(1), deadlines.product_timeout(3), \
        deadlines.product_timeout(10)
    monkeypatch.setenv("DOCA_PY_COMCH_RETRY_WINDOW", str(window))
    bridge: Bridge = bridge_factory(plain, "--stop-after-ios", "30")  # type: ignore[operator]
    try:
        res = run_initiator(tmp_path, _initiator_argv(bridge, "read_throughput_test", "--run-limit-operation-count",
                                                      "100000", "--io-timeout", str(io_timeout),
                                                      "--control-timeout", str(control)),
                            within=max(DEADLINE, deadlines.bound(window, io_timeout, control, starts=2)))
    finally:
        bridge.proc.kill()
    assert res.rc == 1, res.err
    assert "closed the control connection" not in res.err, res.err
    why = (r"(the service did not answer within the comch retry window \(the connection was dropped\)"
           rf"|no response from the service within {io_timeout} s \(--io-timeout\))")
    for worker in (0, 1):  # each names its IOs, whichever sign of the stop it saw first
        assert re.search(rf"worker {worker} \(cpu {worker}\): \d+ IO\(s\) timed out: {why}: read of storage "
                         r"offset \d+ \(transaction \d+\)", res.err), res.err
    assert "Traceback" not in res.err
