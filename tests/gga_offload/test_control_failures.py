"""The gga service's control phase never waits on one peer while another fails (issue 12):
three ``apps.storage_target`` processes, ``apps.gga_offload`` and a test initiator in this
process (:mod:`tests.gga_offload.harness`).

* a target lost while the service waits for its initiator (to connect, or for the next
  request) is logged at once;
* an initiator that leaves while a request is relayed to the targets ends the service at once,
  not after ``--control-timeout``;
* a target that dies or stalls during a relayed request gets the initiator an error response
  naming it before the service ends.
"""

from __future__ import annotations

import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode

from apps.storage.wire.control import ControlMessage, ErrorPayload, MessageType as M

from tests import deadlines

from .harness import DEADLINE, DPU, HOST, Deployment, Proc, TestInitiator, make_sbc_files, plain_content

pytestmark = pytest.mark.multiprocess

B = 1024
BLOCKS = 8
LONG_TIMEOUT = 30.0
"""``--control-timeout`` (on a quiet machine, `_long_timeout` under load) of the tests that must end
well before it."""


def _long_timeout() -> int:
    return deadlines.product_timeout(LONG_TIMEOUT)


def _prompt() -> float:
    """The wait for a loss to be noticed: the service checks every 50-100 ms, so a process's worth of
    this machine's work (tests/deadlines.py), far below `_long_timeout` (LONG_TIMEOUT more)."""
    return deadlines.bound(starts=1)
ROLES = ("data_1", "data_2", "data_p")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_sbc_files(tmp_path_factory.mktemp("sbc"), plain_content(BLOCKS, B), B, "vandermonde")


@pytest.fixture
def deploy(files: tuple[Path, Path, Path]) -> Iterator[Callable[..., Deployment]]:
    made: list[Deployment] = []

    def make(control_timeout: int | None = None) -> Deployment:
        dep = Deployment(files, control_timeout=_long_timeout() if control_timeout is None else control_timeout,
                         extra=("-l", "debug"))
        made.append(dep)
        return dep

    yield make
    for dep in made:
        for t in dep.targets:
            t.signal(signal.SIGCONT)
        dep.kill()


def _line(dep: Deployment, *needles: str, within: float | None = None) -> str:
    return dep.svc.wait_for(lambda s: all(n in s for n in needles), " and ".join(repr(n) for n in needles),
                            _prompt() if within is None else within)


def _waiting_for_initiator(dep: Deployment) -> None:
    _line(dep, "waiting for an initiator on comch", within=DEADLINE)


def _relay_in_progress(dep: Deployment, ini: TestInitiator, stalled: int) -> None:
    """Stop target *stalled*, send a query and wait until the service relays it."""
    dep.targets[stalled].signal(signal.SIGSTOP)
    ini.channel.send(ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0, None))
    end = time.monotonic() + DEADLINE
    while not any("received query_storage_request" in line for line in dep.svc.stdout.splitlines()):
        assert time.monotonic() < end and dep.svc.p.poll() is None, dep.svc.output
        ini.transport.pump(0.05)  # the initiator's side keeps progressing, as a real one does


def _ended(dep: Deployment, within: float | None = None) -> str:
    assert dep.svc.wait(_prompt() if within is None else within) == 1, dep.svc.output
    assert "Traceback" not in dep.svc.output, dep.svc.output
    return dep.svc.stderr


@pytest.mark.parametrize("victim", [0, 2])
def test_a_target_killed_while_waiting_for_the_initiator_to_connect_is_logged_at_once(
        deploy: Callable[..., Deployment], victim: int) -> None:
    dep = deploy()
    _waiting_for_initiator(dep)
    t0 = time.monotonic()
    dep.targets[victim].kill()
    line = _line(dep, f"storage target {ROLES[victim]} ", "closed its control connection",
                 "while waiting for an initiator to connect")
    assert "ERROR" in line, line
    assert f"EXCEPTION: storage target {ROLES[victim]} " in _ended(dep)
    assert time.monotonic() - t0 < dep.control_timeout  # not after --control-timeout


def test_a_target_killed_between_two_requests_is_logged_at_once(deploy: Callable[..., Deployment]) -> None:
    dep = deploy()
    ini = TestInitiator(dep.name)
    try:
        ini.query()
        t0 = time.monotonic()
        dep.targets[1].kill()
        _line(dep, "storage target data_2 ", "closed its control connection",
              "while waiting for the initiator's next request")
        assert "EXCEPTION: storage target data_2 " in _ended(dep)
        assert time.monotonic() - t0 < dep.control_timeout  # not after --control-timeout
    finally:
        ini.close()


def test_an_initiator_leaving_during_a_relay_ends_the_service_at_once(deploy: Callable[..., Deployment]) -> None:
    dep = deploy()
    ini = TestInitiator(dep.name)
    try:
        _relay_in_progress(dep, ini, stalled=0)
        t0 = time.monotonic()
    finally:
        ini.close()
    err = _ended(dep)
    elapsed = time.monotonic() - t0
    assert "EXCEPTION: the initiator closed the comch connection" in err, dep.svc.output
    assert elapsed < dep.control_timeout, elapsed  # not after --control-timeout


@pytest.mark.parametrize("victim", [1, 2])
def test_a_target_dying_during_a_relay_gets_the_initiator_an_error_naming_it(
        deploy: Callable[..., Deployment], victim: int) -> None:
    dep = deploy()
    ini = TestInitiator(dep.name)
    try:
        _relay_in_progress(dep, ini, stalled=victim)
        dep.targets[victim].kill()
        resp = ini.channel.receive(_prompt())  # answered before the service closes the connection
        assert resp.type is M.ERROR_RESPONSE and isinstance(resp.payload, ErrorPayload), resp
        assert resp.payload.code == ErrorCode.CONNECTION_RESET
        assert f"storage target {ROLES[victim]} " in resp.payload.message, resp.payload.message
        assert "closed its control connection" in resp.payload.message
        assert f"EXCEPTION: storage target {ROLES[victim]} " in _ended(dep)
    finally:
        ini.close()


def test_a_target_stalling_during_a_relay_gets_the_initiator_a_timeout_naming_it(
        deploy: Callable[..., Deployment]) -> None:
    timeout = deadlines.product_timeout(1)  # short: data_p stalls; the others answer within it, loaded or not
    dep = deploy(control_timeout=timeout)
    ini = TestInitiator(dep.name)
    ini.deadline = dep.deadline
    try:
        dep.targets[2].signal(signal.SIGSTOP)
        resp = ini.exchange(M.QUERY_STORAGE_REQUEST)
        assert resp.type is M.ERROR_RESPONSE and isinstance(resp.payload, ErrorPayload), resp
        assert resp.payload.code == ErrorCode.TIME_OUT
        assert f"Timed out after {timeout} s waiting for the query_storage_response of data_p " \
            in resp.payload.message, resp.payload.message
        _ended(dep)
    finally:
        ini.close()


def test_unreachable_targets_end_the_service_at_the_connect_deadline() -> None:
    """Issue 35 item 20: the service used to retry an unreachable target for ever. data_1 accepts (a listening
    socket), data_2 refuses every attempt: after ``--target-connect-timeout`` the service ends with status 1,
    saying which target, how many attempts failed and why, and which targets it had reached."""
    up, down = socket.socket(), socket.socket()
    try:
        up.bind(("127.0.0.1", 0))
        up.listen(4)
        down.bind(("127.0.0.1", 0))  # bound, not listening: refused
        a, b = (f"127.0.0.1:{s.getsockname()[1]}" for s in (up, down))
        svc = Proc("apps.gga_offload", "-d", DPU, "-r", HOST, "--cpu", "0", "--command-channel-name",
                   f"connect-deadline-{b.split(':')[1]}", "--data-1-storage", a, "--data-2-storage", b,
                   "--data-p-storage", b, "--target-connect-timeout", "1")
        try:
            assert svc.wait(DEADLINE) == 1, svc.output
        finally:
            svc.kill()
    finally:
        up.close()
        down.close()
    assert f"storage target data_2 ({b}) is not reachable: ECONNREFUSED (Connection refused); retrying every " \
           f"0.1 s for up to 1 s from the start (--target-connect-timeout)" in svc.output, svc.output
    last = svc.stderr.strip().splitlines()[-1]
    m = re.fullmatch(rf"EXCEPTION: storage target data_2 \({b}\) was not reachable within 1 s "
                     rf"\(--target-connect-timeout\): (\d+) attempt\(s\) failed, the last with ECONNREFUSED "
                     rf"\(Connection refused\); targets reached: data_1 \({a}\)", last)
    assert m is not None and int(m.group(1)) >= 1, last
    assert "Traceback" not in svc.output
