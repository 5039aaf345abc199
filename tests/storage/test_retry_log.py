"""Retries towards a peer that is not up are logged with their reason, rate-limited."""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Iterator

import pytest

from apps.storage.channels.control_channel import connect_tcp
from apps.common.errors import StorageAppError
from apps.common.runtime.retry_log import RETRY_LOG_INTERVAL, RetryLog, errno_reason
from tests.gga_offload.harness import DPU, HOST, Proc

log = logging.getLogger("apps.test_retry_log")


def test_first_failure_then_one_line_per_interval_with_the_attempts_not_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    retries = RetryLog(log, "storage target data_1 (127.0.0.1:9)", 0.125, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger=log.name):
        for _ in range(200):  # 25 s of attempts every 0.125 s (exact in binary)
            retries.failed("ECONNREFUSED (Connection refused)")
            now[0] += 0.125
        retries.succeeded()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines[0] == ("INFO", "storage target data_1 (127.0.0.1:9) is not reachable: ECONNREFUSED (Connection "
                                "refused); retrying every 0.125 s")
    repeats = lines[1:-1]
    assert len(repeats) == int(25 // RETRY_LOG_INTERVAL)  # one per interval, not one per attempt
    level, text = repeats[0]
    assert level == "WARNING" and "still not reachable after 81 attempts in 10 s: ECONNREFUSED" in text
    assert "(79 attempt(s) not logged since the last message)" in text
    assert lines[-1] == ("INFO", "storage target data_1 (127.0.0.1:9) reached after 200 failed attempt(s) in 25.0 s")


def test_errno_reason() -> None:
    import errno

    assert errno_reason(errno.ECONNREFUSED) == "ECONNREFUSED (Connection refused)"
    assert errno_reason(None) == "timed out"


@pytest.fixture
def closed_port() -> Iterator[socket.socket]:
    """A bound socket that does not listen yet: connections to its port are refused until it does."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    yield s
    s.close()


def test_connect_tcp_logs_each_refusal_reason(closed_port: socket.socket, caplog: pytest.LogCaptureFixture) -> None:
    port = closed_port.getsockname()[1]
    retries = RetryLog(log, "the peer", 0.01)
    with caplog.at_level(logging.INFO, logger=log.name), pytest.raises(StorageAppError):
        connect_tcp("127.0.0.1", port, timeout=0.2, retry_interval=0.01, retries=retries)
    assert retries.attempts >= 1
    assert caplog.records[0].getMessage() == "the peer is not reachable: ECONNREFUSED (Connection refused); " \
                                             "retrying every 0.01 s"


@pytest.mark.multiprocess
@pytest.mark.parametrize("bridge", ["apps.gga_offload", "apps.zero_copy"])
def test_a_bridge_logs_why_it_retries_its_target_and_when_it_got_through(bridge: str,
                                                                         closed_port: socket.socket) -> None:
    port = closed_port.getsockname()[1]
    target = f"127.0.0.1:{port}"
    if bridge == "apps.gga_offload":
        args = ["--data-1-storage", target, "--data-2-storage", target, "--data-p-storage", target]
        name = f"storage target data_1 ({target})"
    else:
        args = ["--storage-server", target]
        name = f"storage target {target}"
    proc = Proc(bridge, "-d", DPU, "-r", HOST, "--cpu", "0", "--command-channel-name",
                f"retry_log_{bridge}_{port}", *args)
    try:
        line = proc.wait_for(lambda s: f"{name} is not reachable" in s, "the first retry line")
        bound = " for up to 60 s from the start (--target-connect-timeout)" if bridge == "apps.gga_offload" else ""
        assert "[INFO]" in line and line.endswith(f"ECONNREFUSED (Connection refused); retrying every 0.1 s{bound}"), \
            line
        closed_port.listen(8)  # the target is up now
        line = proc.wait_for(lambda s: f"{name} reached after " in s, "the line saying the target was reached")
        assert "[INFO]" in line and "failed attempt(s)" in line, line
    finally:
        proc.signal(signal.SIGINT)
        proc.wait()
