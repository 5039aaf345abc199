"""End to end with all five processes (three targets, the bridge, the initiator), emulated backend."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from apps.gga_offload.config import GgaOffloadConfig
from apps.initiator.config import IO_TIMEOUT_DEFAULT
from doca_py.emulated.comch.config import DEFAULT_RETRY_WINDOW
from tests import deadlines, netns
from apps.topology import (
    STRATEGIES,
    Proc,
    Test as TopologyTest,
    TwoHosts,
    build_parser,
    environment,
    make_sample,
    prepare,
    start,
    topology,
)

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]
#: The time-outs the topology gives its processes (`apps.topology.start`), which the waits below add up
#: with the work left (tests/deadlines.py): never a wall-clock guess.
CONTROL_TIMEOUT = 10.0
TARGET_IO_TIMEOUT = float(GgaOffloadConfig.model_fields["target_io_timeout"].default)
PROGRESS_INTERVAL = 1.0  # the initiator's first progress line
FIVE = 5  # processes


def _per_test() -> float:
    """``--timeout`` of apps.topology (per test, and per process start): five processes started and
    ended, two control time-outs that may elapse (tests/deadlines.py), never under the 90 s a quiet
    machine has always had."""
    return max(90.0, deadlines.bound(CONTROL_TIMEOUT, CONTROL_TIMEOUT, starts=2 * FIVE))


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    per_test = _per_test()
    return subprocess.run([sys.executable, "-m", "apps.topology", "--block-count", "32", "--throughput-operations",
                           "400", "--workdir", str(tmp_path), "--timeout", f"{per_test:.0f}", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=4 * per_test)  # 3 tests and the files


def _passed(out: subprocess.CompletedProcess[str], n: int) -> None:
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert out.stdout.count("--- PASSED") == n
    assert "Traceback" not in out.stdout + out.stderr


def test_main_job_runs_the_three_default_tests(tmp_path: Path) -> None:
    out = _run(tmp_path)
    _passed(out, 3)
    for role in ("target-data_1", "target-data_2", "target-data_p", "gga_offload", "initiator"):
        assert (tmp_path / f"{role}.log").exists()


def test_every_process_line_is_printed_as_it_comes_with_its_name(tmp_path: Path) -> None:
    """Issue 35 item 22: the lines of the five processes come as they are written, each prefixed with
    its process's name, the reports included; not an initiator log printed whole once it ended. The
    order across processes shows it: the initiator's configuration (printed at its start) comes before
    the targets' statistics (printed once the session is over), and its report after them is whole."""
    out = _run(tmp_path, "--strategy", "read_throughput_test")
    _passed(out, 1)
    lines = out.stdout.splitlines()

    def first(prefix: str, text: str) -> int:
        found = [i for i, line in enumerate(lines) if line.startswith(prefix) and text in line]
        assert found, f"no {prefix!r} line with {text!r}:\n{out.stdout[-4000:]}"
        return found[0]

    started = first("initiator    | ", "Configuration: {")
    for role in ("target-data_1", "target-data_2", "target-data_p", "gga_offload  "):
        assert started < first(f"{role}| ", "| Operation count: "), out.stdout[-4000:]
    assert first("initiator    | ", "clat percentiles") < first("--- PASSED", "")
    assert not [line for line in lines if line.startswith("    ")], "the initiator's log printed again at the end"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_execution_strategy(tmp_path: Path, strategy: str) -> None:
    _passed(_run(tmp_path, "--strategy", strategy), 1)


@pytest.mark.parametrize("matrix", ["vandermonde", "cauchy"])
@pytest.mark.parametrize("every_n", [1, 2, 7])
def test_recovery_reads_with_both_matrix_types(tmp_path: Path, matrix: str, every_n: int) -> None:
    _passed(_run(tmp_path, "--strategy", "read_write_data_validity_test", "--matrix-type", matrix,
                 "--recovery-every-n", str(every_n)), 1)


def test_multi_block_ios_on_two_cores(tmp_path: Path) -> None:
    _passed(_run(tmp_path, "--strategy", "read_only_data_validity_test", "--strategy",
                 "read_write_data_validity_test", "--blocks-per-io", "2", "--cpu", "0", "--cpu", "1"), 2)


def test_a_bad_block_size_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "apps.topology", "--block-size", "100", "--workdir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--block-size" in out.stderr
    assert not list(tmp_path.glob("*.sbc"))


def test_sample_is_deterministic_and_sized() -> None:
    a, b = make_sample(10_000), make_sample(10_000)
    assert a == b and len(a) == 10_000 and a[:100] != a[100:200]
    assert build_parser().parse_args([]).block_size == 4096


# -- faults, with the processes driven from the test ------------------------------------------------

READY = "data path ready"


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[list[Proc], Proc, Proc]]:
    """The five processes in a long read throughput test, with the data path running."""
    args = build_parser().parse_args(["--block-count", "32", "--workdir", str(tmp_path)])
    env = environment()
    plain, files = prepare(args, tmp_path, env)
    test = TopologyTest("long read", "read_throughput_test", 10_000_000)
    with topology(tmp_path, env) as topo:
        targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=READY)
        initiator.wait_marker(READY, deadlines.bound(CONTROL_TIMEOUT, starts=FIVE))
        yield targets, bridge, initiator


def _exits(proc: Proc, within: float) -> int:
    rc = proc.popen.wait(within)  # a hang bound (tests/deadlines.py), not a timing check
    if proc._pump is not None:
        proc._pump.join(deadlines.bound(starts=1))
    assert not any("Traceback" in line for line in proc.lines), proc.tail(40)
    return rc


@contextmanager
def _validity_run(tmp_path: Path, strategy: str, operations: int, bridge_args: tuple[str, ...] = (),
                  initiator_args: tuple[str, ...] = (), env_extra: dict[str, str] | None = None) \
        -> Iterator[tuple[list[Proc], Proc, Proc]]:
    """The five processes in a long validity test, once the initiator reports progress (mid-run)."""
    args = build_parser().parse_args(["--block-count", "32", "--workdir", str(tmp_path)])
    env = {**environment(), **(env_extra or {})}
    plain, files = prepare(args, tmp_path, env)
    test = TopologyTest("degraded", strategy, operations, bridge_args=bridge_args, initiator_args=initiator_args)
    with topology(tmp_path, env) as topo:
        targets, bridge, initiator = start(topo, test, args, files, plain, initiator_marker=PROGRESS)
        initiator.wait_marker(PROGRESS, deadlines.bound(CONTROL_TIMEOUT, PROGRESS_INTERVAL, starts=FIVE))
        yield targets, bridge, initiator


PROGRESS = "progress: "
VALIDITY_OPS = 20_000
"""Transactions of the degraded validity runs: enough to outlast the first progress line (1 s) on a
fast machine (10,000 IO/s here), so the fault lands mid-run."""
ROLES = ("data_1", "data_2", "data_p")


def _degraded(bridge: Proc, role: str, reads: bool = True) -> None:
    text = "\n".join(bridge.lines)
    assert f"storage target {role} " in text and "entering degraded mode" in text, bridge.tail(40)
    degraded = [int(line.split()[-1]) for line in bridge.lines if line.startswith("| Degraded read count: ")]
    assert degraded and (degraded[0] > 0) == reads, bridge.tail(40)


@pytest.mark.parametrize("role", ROLES)
def test_a_dying_target_degrades_reads_and_the_validity_test_passes(tmp_path: Path, role: str) -> None:
    """A target SIGKILLed in the middle of a read-only validity test: the bridge serves every
    read from the two others (EC recovery, or plain reads for data_p), byte exact; the run ends
    normally. (Before degraded mode, this ended the bridge and the initiator with status 1.)"""
    with _validity_run(tmp_path, "read_only_data_validity_test", VALIDITY_OPS) as (targets, bridge, initiator):
        targets[ROLES.index(role)].popen.kill()
        assert _exits(initiator, _run_left(initiator)) == 0, initiator.tail(40) + "\n" + bridge.tail(40)
        assert _exits(bridge, _after_the_initiator()) == 0, bridge.tail(40)
        _degraded(bridge, role)


def _run_left(initiator: Proc, target_io_timeout: float = TARGET_IO_TIMEOUT) -> float:
    """The rest of a run after a target failed: the bridge's deadline for the target's requests (and
    for the stop it relays), then the transactions left at the run's own rate, then the ending."""
    return deadlines.bound(target_io_timeout, target_io_timeout, starts=2, work=deadlines.work_left(initiator.lines))


def _after_the_initiator() -> float:
    """The bridge's ending once its initiator has ended: the shutdown it answered, its teardown."""
    return deadlines.bound(CONTROL_TIMEOUT, starts=2)


def _stall_until_the_run_ends(victim: Proc, bridge: Proc, initiator: Proc, target_io_timeout: float) -> None:
    """SIGSTOP *victim*; the initiator and the bridge must both end with status 0; SIGCONT."""
    victim.popen.send_signal(signal.SIGSTOP)
    try:
        assert _exits(initiator, _run_left(initiator, target_io_timeout)) == 0, \
            initiator.tail(40) + "\n" + bridge.tail(40)
        assert _exits(bridge, _after_the_initiator()) == 0, bridge.tail(40)
    finally:
        victim.popen.send_signal(signal.SIGCONT)


@pytest.mark.parametrize("role", ROLES)
def test_a_stalled_target_degrades_reads_after_the_io_deadline(tmp_path: Path, role: str) -> None:
    """A target SIGSTOPped mid-run: its requests are written off after --target-io-timeout and the
    reads are served from the two others; the validity test passes.

    The time-out is short, so the stall is found soon, and long enough that a loaded machine does not
    make a healthy target miss it (tests/deadlines.py); the initiator's ``--io-timeout`` keeps its
    default's margin over it (8 s against 5), so a read served degraded is not counted as timed out,
    and so do the emulated RDMA transport's retry window and the bridge's ``--control-timeout`` (the
    stop relay waits for the shorter of the two time-outs), so the IO deadline finds the stall."""
    io_timeout = deadlines.product_timeout(1)
    margin = deadlines.product_timeout(IO_TIMEOUT_DEFAULT - TARGET_IO_TIMEOUT)
    window = io_timeout + margin
    bridge_args = ("--target-io-timeout", str(io_timeout), "--control-timeout", str(max(window, int(CONTROL_TIMEOUT))))
    with _validity_run(tmp_path, "read_only_data_validity_test", VALIDITY_OPS, bridge_args,
                       ("--io-timeout", str(io_timeout + margin)),
                       {"DOCA_PY_RDMA_RETRY_WINDOW": str(window)}) as (targets, bridge, initiator):
        _stall_until_the_run_ends(targets[ROLES.index(role)], bridge, initiator, float(window))
        if role == "data_p":
            # Plain reads never wait for data_p: it is found stalled when the stop is relayed, within
            # --target-io-timeout, before the initiator's own wait for the answer runs out.
            _degraded(bridge, role, reads=False)
            assert any(f"did not answer a stop_storage_request within {io_timeout} s" in line
                       for line in bridge.lines), bridge.tail(40)
        else:
            _degraded(bridge, role)
            assert any(f"did not answer an IO request within {io_timeout} s" in line for line in bridge.lines), \
                bridge.tail(40)


def test_a_stalled_parity_target_under_default_flags_ends_a_read_run_normally(tmp_path: Path) -> None:
    """data_p SIGSTOPped during a read throughput test, every deadline at its default: plain reads
    never wait for data_p, so the stall shows only when stop is relayed. The bridge takes data_p out
    at its --target-io-timeout and answers within the initiator's wait for stop_storage_response
    (which used to run out first: "no stop_storage_response from the service within 5 s", status 1)."""
    with _validity_run(tmp_path, "read_throughput_test", VALIDITY_OPS) as (targets, bridge, initiator):
        _stall_until_the_run_ends(targets[ROLES.index("data_p")], bridge, initiator, TARGET_IO_TIMEOUT)
        _degraded(bridge, "data_p", reads=False)
        assert any("did not answer a stop_storage_request within 5 s" in line for line in bridge.lines), \
            bridge.tail(40)


def test_writes_after_a_target_died_are_refused(tmp_path: Path) -> None:
    """A read-write validity test with a target SIGKILLed mid-run: the next write is answered with
    an error, which the initiator reports (status 1); no hang, no wrong byte, no crash."""
    with _validity_run(tmp_path, "read_write_data_validity_test", 100_000) as (targets, bridge, initiator):
        targets[2].popen.kill()
        assert _exits(initiator, _run_left(initiator)) == 1, initiator.tail(40)
        text = "\n".join(initiator.lines)
        assert "data validation failed" not in text, initiator.tail(40)
        assert "failed: DOCA_ERROR_NOT_PERMITTED" in text or "failed: DOCA_ERROR_CONNECTION_RESET" in text, \
            initiator.tail(40)
        assert _exits(bridge, _after_the_initiator()) == 0, bridge.tail(40)
        assert any("storage target data_p " in line and "entering degraded mode" in line for line in bridge.lines)


def test_a_dying_bridge_is_reported_and_nobody_hangs(running: tuple[list[Proc], Proc, Proc]) -> None:
    targets, bridge, initiator = running
    bridge.popen.kill()
    # the initiator notices a dead peer within the comch retry window; the targets at once (TCP)
    assert _exits(initiator, deadlines.bound(DEFAULT_RETRY_WINDOW, starts=2)) != 0
    for t in targets:
        _exits(t, deadlines.bound(starts=2))


def test_ctrl_c_in_the_data_path_stops_every_process_promptly(running: tuple[list[Proc], Proc, Proc]) -> None:
    targets, bridge, initiator = running
    everyone = [initiator, bridge, *targets]
    for p in everyone:
        p.popen.send_signal(signal.SIGINT)
    for p in everyone:
        _exits(p, deadlines.bound(starts=2))  # each takes well under 2 s on a quiet machine


def test_targets_on_another_host_in_a_network_namespace(tmp_path: Path) -> None:
    why = netns.unavailable()
    if why is not None:
        pytest.skip(why)
    with netns.veth_namespace("t") as (ns, net):
        args = build_parser().parse_args(["--block-count", "16", "--workdir", str(tmp_path)])
        env = environment()
        plain, files = prepare(args, tmp_path, env)
        hosts = TwoHosts(("ip", "netns", "exec", ns), f"{net}.2", f"{net}.1")
        with topology(tmp_path, env) as topo:
            test = TopologyTest("rw", "read_write_data_validity_test", 0, recovery_every_n=2)
            targets, bridge, initiator = start(topo, test, args, files, plain, hosts=hosts)
            # the topology's own per-test bound (--timeout), as `python -m apps.topology` gives it
            assert _exits(initiator, args.timeout) == 0, initiator.tail(40) + "\n" + bridge.tail(40)


# -- the emulator's CI knobs: strict mode (default), shuffled completions, injected faults -------
def _seed() -> str:
    import os

    return os.environ.get("DOCA_PY_EMU_SEED", "1")


def test_retryable_faults_and_shuffling_keep_every_test_passing(tmp_path: Path) -> None:
    # AGAIN on producer sends is what DOCA returns when the peer has not reposted: both
    # apps must keep the task and retry, so every test still passes byte for byte.
    out = _run(tmp_path, "--shuffle", "--inject-faults", "comch_producer_send=0.1", "--seed", _seed())
    _passed(out, 3)
    assert "DOCA_PY_EMU_SHUFFLE=1" in out.stdout and "comch_producer_send=0.1" in out.stdout


def test_hard_faults_fail_ios_with_an_error_never_a_hang_a_wrong_byte_or_a_crash(tmp_path: Path) -> None:
    out = _run(tmp_path, "--shuffle", "--inject-faults",
               "decompress_lz4_stream=0.02,ec_recover=0.02,comch_producer_send=0.05", "--seed", _seed())
    text = out.stdout + out.stderr
    assert out.returncode in (0, 1), text[-4000:]
    assert "Traceback" not in text and "data validation failed" not in text, text[-4000:]
    assert out.stdout.count("--- PASSED") + out.stdout.count("--- FAILED") == 3
    for block in out.stdout.split("=== ")[1:]:
        if "--- FAILED" in block:  # a failed test failed an IO with DOCA's error, reported by the initiator
            assert "failed: DOCA_ERROR_IO_FAILED" in block, block[-3000:]
