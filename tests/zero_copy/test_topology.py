"""End to end with all processes (the real initiator, the zero-copy bridge, one target) through
``apps.topology --bridge zero-copy``: every initiator strategy, a SIGKILLed target, Ctrl-C in
the data path, and the target on another (network-namespace) host."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from doca_py.emulated.comch.config import DEFAULT_RETRY_WINDOW
from tests import deadlines, netns
from apps.topology import Proc, Test as TopologyTest, TwoHosts, build_parser, environment, prepare, start, topology

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]
READY = "data path ready"
CONTROL_TIMEOUT = 10.0  # what apps.topology.start gives every process; the waits add it up (tests/deadlines.py)


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # apps.topology's --timeout, per test and per process start: three processes started and ended, two
    # control time-outs that may elapse (tests/deadlines.py), never under the 60 s of a quiet machine
    per_test = max(60.0, deadlines.bound(CONTROL_TIMEOUT, CONTROL_TIMEOUT, starts=6))
    return subprocess.run([sys.executable, "-m", "apps.topology", "--bridge", "zero-copy", "--block-count", "16",
                           "--throughput-operations", "300", "--workdir", str(tmp_path), "--timeout",
                           f"{per_test:.0f}", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=4 * per_test)


@pytest.mark.parametrize("strategies", [("read_only_data_validity_test", "read_write_data_validity_test"),
                                        ("read_throughput_test", "write_throughput_test")],
                         ids=["validity", "throughput"])
def test_each_execution_strategy(tmp_path: Path, strategies: tuple[str, ...]) -> None:
    args = [a for s in strategies for a in ("--strategy", s)]
    if strategies[0] == "read_only_data_validity_test":
        args += ["--blocks-per-io", "2"]  # one IO moves two blocks straight into host memory
    out = _run(tmp_path, *args)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert out.stdout.count("--- PASSED") == len(strategies), out.stdout[-4000:]
    assert "Traceback" not in out.stdout + out.stderr
    assert "recovery" not in out.stdout.lower()
    # one target, the zero-copy bridge, no .sbc files
    assert (tmp_path / "target.log").exists() and (tmp_path / "zero_copy.log").exists()
    assert not list(tmp_path.glob("*.sbc")) and not (tmp_path / "gga_offload.log").exists()
    bridge = (tmp_path / "zero_copy.log").read_text()
    assert "| Operation count: " in bridge and "re-exported" in bridge


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[list[Proc], Proc, Proc]]:
    """The three processes in a long read throughput test, with the bridge's data path running."""
    args = build_parser().parse_args(["--bridge", "zero-copy", "--block-count", "32", "--workdir", str(tmp_path)])
    env = environment()
    plain, files = prepare(args, tmp_path, env)
    test = TopologyTest("long read", "read_throughput_test", 10_000_000)
    with topology(tmp_path, env) as topo:  # stops (SIGINT, then SIGKILL) every process on the way out
        targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=READY)
        assert len(targets) == 1
        initiator.wait_marker(READY, deadlines.bound(CONTROL_TIMEOUT, starts=3))  # it sends start next
        _wait_line(bridge, "data path started", deadlines.bound(CONTROL_TIMEOUT, starts=1))
        yield targets, bridge, initiator


def _wait_line(proc: Proc, text: str, within: float) -> None:
    """Wait (bounded) until *proc* printed a line containing *text*."""
    deadline = time.monotonic() + within
    while not any(text in line for line in proc.lines):
        if time.monotonic() >= deadline:
            raise AssertionError(f"{proc.name} did not print {text!r} within {within} s\n{proc.tail()}")
        try:
            proc.popen.wait(0.02)  # returns early if it exits
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"{proc.name} exited before printing {text!r}\n{proc.tail()}")


def _exits(proc: Proc, within: float) -> int:
    rc = proc.popen.wait(within)  # a hang bound, not a timing check
    if proc._pump is not None:
        proc._pump.join(deadlines.bound(starts=1))
    assert not any("Traceback" in line for line in proc.lines), proc.tail(40)
    return rc


def test_a_killed_target_is_reported_and_nobody_hangs(running: tuple[list[Proc], Proc, Proc]) -> None:
    (target,), bridge, initiator = running
    target.popen.kill()
    assert _exits(bridge, deadlines.bound(starts=2)) == 1  # the target's TCP connection closes at once
    assert _exits(initiator, deadlines.bound(DEFAULT_RETRY_WINDOW, starts=2)) != 0
    assert any("EXCEPTION: storage target 127.0.0.1:" in line and "closed its control connection" in line
               for line in bridge.lines), bridge.tail()
    assert any(line.startswith("| Core: ") for line in bridge.lines), bridge.tail()


def test_ctrl_c_in_the_data_path_stops_every_process(running: tuple[list[Proc], Proc, Proc]) -> None:
    (target,), bridge, initiator = running
    t0 = time.monotonic()
    bridge.popen.send_signal(signal.SIGINT)     # the bridge first: its own Ctrl-C path, mid data path
    assert _exits(bridge, deadlines.bound(starts=2)) == 1
    print(f"bridge: SIGINT to exit {time.monotonic() - t0:.2f} s")
    assert any("Aborted: User requested abort" in line for line in bridge.lines), bridge.tail()
    assert any(line.startswith("| Core: ") for line in bridge.lines), bridge.tail()  # statistics still printed
    for p in (initiator, target):
        p.popen.send_signal(signal.SIGINT)
    for p in (initiator, target):
        _exits(p, deadlines.bound(starts=2))


def test_target_on_another_host_in_a_network_namespace(tmp_path: Path) -> None:
    """The target's one-sided RDMA then travels over TCP to the bridge's io_data context, which
    resolves the re-exported blob (its own export, covering the initiator's) itself."""
    why = netns.unavailable()
    if why is not None:
        pytest.skip(why)
    with netns.veth_namespace("z") as (ns, net):
        args = build_parser().parse_args(["--bridge", "zero-copy", "--block-count", "16", "--workdir",
                                          str(tmp_path)])
        env = environment()
        plain, files = prepare(args, tmp_path, env)
        hosts = TwoHosts(("ip", "netns", "exec", ns), f"{net}.2", f"{net}.1")
        with topology(tmp_path, env) as topo:
            test = TopologyTest("rw", "read_write_data_validity_test", 0)
            _targets, bridge, initiator = start(topo, test, args, files, plain, hosts=hosts)
            assert _exits(initiator, args.timeout) == 0, initiator.tail(40) + "\n" + bridge.tail(40)
