"""``doca_pair``: two processes, each with its own emulated side; results, knobs and failures."""

from __future__ import annotations

import logging
import os
import sys
import sysconfig
import warnings
from pathlib import Path
from typing import Any

import pytest

from doca_py.testing import DocaPair, Knobs, PairError, assert_valid_trace
from doca_py.testing import pair as pair_module
from doca_py.testing.pair import KIT_TID, ROLES
from doca_py.testing.knobs import ENV_SEED

from . import sides

SHORT_GRACE = 2.0
"""``pair.GRACE`` in the tests whose side never answers within it: the bound is what they test, not its size."""

pytestmark = pytest.mark.multiprocess


def test_module_level_functions_exchange_objects_and_get_their_sides(doca_pair: DocaPair) -> None:
    (host_got, host), (dpu_got, dpu) = doca_pair.run(sides.host_ping, sides.dpu_pong, timeout=60,
                                                     args={"blob": b"\x00\xff"})
    assert host_got == ("pong", host["pci"]) and dpu_got == ("ping", host)
    assert host["role"] == "host" and dpu["role"] == "dpu"
    # The DPU's representor is the host PF: the device the host side opened.
    assert host["rep"] is None and dpu["rep"] == host["pci"] != dpu["pci"]
    assert host["token"] == dpu["token"] and host["args"] == dpu["args"] == {"blob": b"\x00\xff"}
    assert host["impl"] == dpu["impl"] == "emulated"
    assert [r.status for r in doca_pair.reports] == ["ok", "ok"]
    assert doca_pair.reports[0].pid != doca_pair.reports[1].pid


def test_both_sides_run_under_the_tests_knobs(doca_pair: DocaPair, doca_knobs: Knobs) -> None:
    (_, host), (_, dpu) = doca_pair.run(sides.host_ping, sides.dpu_pong)
    for side in (host, dpu):
        assert side["seed"] == (doca_knobs.seed, doca_knobs.seed, str(doca_knobs.seed))
        assert side["strict"] is doca_knobs.strict and side["shuffle"] is doca_knobs.shuffle


@pytest.mark.doca_versions("2.6", "3.2")
def test_sides_present_the_tests_doca_version(doca_pair: DocaPair, doca_version: str) -> None:
    import doca_py

    (_, host), (_, dpu) = doca_pair.run(sides.host_ping, sides.dpu_pong)
    assert host["version"] == dpu["version"] == doca_py.version_runtime() == f"{doca_version}.0000"


@pytest.mark.doca_faults("dma_memcpy=1")
def test_injected_faults_reach_the_sides(doca_pair: DocaPair) -> None:
    host, dpu = doca_pair.run(sides.dma_order, sides.dma_order)
    for order in (host, dpu):  # every task failed (IO_FAILED, then the stopping ctx flushes the rest)
        assert sorted(order) == sorted(-1 - i for i in range(sides.N_TASKS))


def test_the_seed_replays_each_sides_completion_order(doca_knobs: Knobs) -> None:
    runs = [DocaPair(doca_knobs.replace(seed=seed)).run(sides.dma_order, sides.dma_order)
            for seed in (11, 11, 12)]
    assert runs[0] == runs[1]  # same seed, same shuffled order on each side
    assert runs[0] != runs[2]  # 16! orders: another seed gives another
    assert sorted(runs[0][0]) == list(range(sides.N_TASKS)) and runs[0][0] != list(range(sides.N_TASKS))


def _fails(pair: DocaPair, host: Any, dpu: Any, timeout: float = 60) -> PairError:
    with pytest.raises(PairError) as info:
        pair.run(host, dpu, timeout=timeout)
    return info.value


def _kit_events(pair: DocaPair) -> dict[str, dict[str, Any]]:
    """The kit's own events of *pair*'s runs (name -> args), in order; the whole trace checked first."""
    events = pair.trace_events()
    assert_valid_trace({"traceEvents": events})
    return {e["name"]: e["args"] for e in events if e.get("tid") == KIT_TID and e["ph"] == "i"}


def _side_marks(pair: DocaPair, role: str) -> dict[str, dict[str, Any]]:
    """The kit's marks on *role*'s own timeline (its process's ``kit`` track), in order."""
    rep = pair.reports[ROLES.index(role)]
    return {e["name"]: e["args"] for e in rep.trace if e.get("cat") == "kit"}


def test_a_raising_side_fails_the_run_with_its_traceback_and_ends_the_other(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.sleep_long, sides.raise_value_error)
    host, dpu = err.reports
    assert dpu.status == "raised" and "ValueError: the dpu side exploded" in dpu.detail
    assert 'sides.py", line' in dpu.detail and "dpu side about to fail" in dpu.log
    assert "in _child" not in dpu.detail  # the side's traceback starts at its function, not in the kit
    # The host slept on: the kit ended it, and it says where it was.
    assert host.status == "ended" and "it was at" in host.detail and "time.sleep(600)" in host.detail
    text = str(err)
    # The first line (pytest's summary line) names the side and its exception.
    assert text.splitlines()[0] == "dpu side raised ValueError: the dpu side exploded"
    assert f"--doca-seed {doca_pair.knobs.seed}" in text and "ValueError: the dpu side exploded" in text
    # The kit's own track: who started, who raised, whom the kit ended and where it was.
    kit = _kit_events(doca_pair)
    names = list(kit)
    assert names[:3] == ["doca_pair run 1", "host side process started", "dpu side process started"]
    assert set(names[3:5]) == {"host side runs its function", "dpu side runs its function"}
    assert names[5:] == ["dpu side raised", "host side ended by the kit (SIGTERM)", "host side ended"]
    assert kit["dpu side raised"]["detail"] == "ValueError: the dpu side exploded"
    ended = kit["host side ended by the kit (SIGTERM)"]
    assert ended["why"] == "the other side failed" and "time.sleep(600)" in ended["where"]
    raised = _side_marks(doca_pair, "dpu")
    assert list(raised)[-2:] == ["dpu side: raise_value_error starts", "dpu side raised ValueError"]
    assert "the dpu side exploded" in raised["dpu side raised ValueError"]["detail"]


@pytest.mark.parametrize("crash, expected", [(sides.exit_3, "exit status 3"), (sides.sigkill_self, "SIGKILL"),
                                             (sides.segfault, "SIGSEGV")])
def test_a_crashing_side_fails_the_run_with_its_exit_and_log(doca_pair: DocaPair, crash: Any, expected: str) -> None:
    err = _fails(doca_pair, crash, sides.sleep_long)
    host, dpu = err.reports
    assert host.status == "crashed" and expected in host.detail, host.detail
    assert str(err).splitlines()[0].startswith("host side crashed: ") and expected in str(err).splitlines()[0]
    assert dpu.status == "ended"
    kit = _kit_events(doca_pair)  # a crashed side has no trace of its own: the kit's track says what happened
    assert expected in kit["host side crashed"]["detail"]
    assert list(kit).index("host side crashed") < list(kit).index("dpu side ended by the kit (SIGTERM)")
    # Where the DPU side was: asleep, or (on a loaded machine, when the host read "asleep" before the
    # DPU side got the CPU back) still returning from sending it (multiprocessing's frames are left out:
    # the innermost is Side.send); either way, inside its own function.
    where = kit["dpu side ended by the kit (SIGTERM)"]["where"]
    assert where.endswith("time.sleep(600)") or ("side.py" in where and "in send" in where), where
    if crash is sides.exit_3:
        assert "leaving with os._exit(3)" in host.log
    if crash is sides.segfault:  # faulthandler writes the Python stack into the side's log
        assert "Segmentation fault" in host.log and "in segfault" in host.log, host.log



def test_a_side_whose_control_pipe_closes_while_it_runs_on_is_killed_not_waited_for(
        doca_pair: DocaPair, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kit took a closed control pipe for a dead side and waited for its process without a bound (a hang
    for as long as the side ran on); it waits ``GRACE`` seconds, then kills it and says so."""
    monkeypatch.setattr(pair_module, "GRACE", SHORT_GRACE)  # what is waited for never comes: wait less for it
    GRACE = SHORT_GRACE

    err = _fails(doca_pair, sides.closes_its_control_pipe_and_runs_on, sides.raise_value_error)
    host, dpu = err.reports
    assert host.status == "crashed", host.detail
    assert host.detail == (f"its control pipe to the kit closed without a result, but the process did not end "
                           f"within {GRACE} s; the kit killed it (SIGKILL)"), host.detail
    kit = _kit_events(doca_pair)
    assert "host side killed by the kit (SIGKILL)" in kit and "host side crashed" in kit


def test_a_side_whose_exit_is_never_reported_does_not_keep_the_run_waiting(
        doca_pair: DocaPair, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm side's exit is reported by the zygote it was forked from; with the zygote stopped, the kit waited
    for the report without a bound after SIGKILL (for ever). It waits ``GRACE`` seconds and says what it
    waited for. (The zygote is resumed after a minute should the kit wait anyway, and at the end.)"""
    import signal
    import threading

    from doca_py.testing import warm

    monkeypatch.setattr(pair_module, "GRACE", SHORT_GRACE)  # what is waited for never comes: wait less for it
    GRACE = SHORT_GRACE
    doca_pair.run(sides.returns_early, sides.returns_early)  # the zygote runs
    zygote = warm.server_pid()
    assert zygote is not None
    resume = threading.Timer(60, os.kill, (zygote, signal.SIGCONT))
    resume.start()
    try:
        err = _fails(doca_pair, sides.stops_its_zygote_then_sleeps, sides.ready_then_raise)
    finally:
        resume.cancel()
        os.kill(zygote, signal.SIGCONT)
    host, dpu = err.reports
    assert dpu.status == "raised" and host.status == "ended", (host.status, host.detail)
    unreported = f"its exit was not reported within {GRACE} s of SIGKILL (pid {host.pid}, parent {zygote} (state T)"
    assert unreported in host.detail, host.detail
    assert "host side exit not reported" in _kit_events(doca_pair)
    assert doca_pair.run(sides.returns_early, sides.returns_early) == ("done", "done")  # the zygote serves again

def test_a_run_past_its_timeout_ends_both_sides_and_says_where_they_were(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.sleep_long, sides.sleep_long, timeout=1)
    assert str(err).splitlines()[0] == "both sides timed out after 1 s"
    for rep in err.reports:
        assert rep.status == "timed out" and rep.detail.startswith("timed out after 1 s; it was at")
        assert "time.sleep(600)" in rep.detail
    kit = _kit_events(doca_pair)
    timeout = kit["time-out: timed out after 1 s"]
    for role in ("host", "dpu"):  # where each side was when the time ran out
        assert timeout[role]["status"] == "timed out" and timeout[role]["where"].endswith("time.sleep(600)")
        assert "ended by the kit (SIGTERM)" in list(_side_marks(doca_pair, role))[-1]
        assert list(kit).index("time-out: timed out after 1 s") < list(kit).index(f"{role} side ended by the kit (SIGTERM)")


def test_a_result_that_cannot_be_pickled_fails_its_side(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.unpicklable, sides.returns_early)
    assert err.reports[0].status == "raised" and "cannot be sent back" in err.reports[0].detail
    assert err.reports[1].status == "ok"


def test_recv_times_out_and_notices_a_peer_that_left(doca_pair: DocaPair) -> None:
    msg, got = doca_pair.run(sides.recv_times_out, sides.wait_then_return)
    assert msg == "host side: nothing from the dpu side within 0.2 s" and got == "go on"
    early, gone = doca_pair.run(sides.returns_early, sides.recv_after_peer_left)
    assert early == "done" and gone == "dpu side: the host side has ended"


def test_closures_need_the_fork_start_method(doca_pair: DocaPair) -> None:
    secret = "captured"

    def host(side: Any) -> str:
        return f"{secret} on the {side.role}"

    with pytest.raises(TypeError, match="closure or a lambda.*module level.*fork"):
        doca_pair.run(host, sides.returns_early)
    with warnings.catch_warnings():  # Python 3.12+ warns when a threaded process (the emulator's) forks
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        assert doca_pair.run(host, lambda side: side.role, start_method="fork") == ("captured on the host", "dpu")


def test_the_pair_works_without_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SEED, "4242")
    pair = DocaPair()  # knobs from the environment and the kit's defaults
    assert pair.knobs.seed == 4242 and pair.knobs.strict
    (_, host), _ = pair.run(sides.host_ping, sides.dpu_pong)
    assert host["seed"] == (4242, 4242, "4242")


def test_warm_sides_start_clean_whatever_the_previous_run_left_behind(doca_pair: DocaPair,
                                                                      doca_knobs: Knobs) -> None:
    from doca_py.testing import warm

    doca_pair.leak_check = False  # leave_state_behind leaks on purpose
    fresh, _ = doca_pair.run(sides.state_of_a_side, sides.returns_early)
    before, _ = doca_pair.run(sides.leave_state_behind, sides.returns_early)
    after, _ = doca_pair.run(sides.state_of_a_side, sides.returns_early)
    # A running ctx on its Pe, an export, flipped knobs, an environment variable, a module global:
    # none of it reaches the next side, which starts as the first one did.
    for state in (before, after):
        assert {k: v for k, v in state.items() if k != "ppid"} == {k: v for k, v in fresh.items() if k != "ppid"}
    assert fresh["alive"] == [] and fresh["left_behind"] == [] and fresh["env"] is None
    assert fresh["knobs"] == (doca_knobs.seed, doca_knobs.strict, doca_knobs.shuffle, {}, "3.2.0000")
    # Every side is a child of the session's zygote, not of the test process.
    assert fresh["ppid"] == before["ppid"] == after["ppid"] == warm.server_pid() != os.getpid()


@pytest.mark.parametrize("method", ["warm", "spawn"])
def test_warm_sides_see_the_environment_of_the_run_not_the_zygotes(doca_pair: DocaPair, method: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    doca_pair.run(sides.returns_early, sides.returns_early)  # the zygote runs, with the environment of now
    monkeypatch.setenv("DOCA_PY_TEST_LEFT_BEHIND", "set later")
    monkeypatch.setenv("DOCA_PY_COMCH_SHM", "1")  # read by the emulator at import: the zygote read it unset
    monkeypatch.setenv("DOCA_PY_EMU_VERSION", "2.6")
    monkeypatch.setenv("DOCA_PY_LOG_LEVEL", "debug")
    doca_pair.side_env["dpu"] = {"DOCA_PY_RDMA_HOST_ID": "another host"}  # read at import too
    state, (shm, host_id) = doca_pair.run(sides.state_of_a_side, sides.comch_shm_on, start_method=method)
    from doca_py.emulated.rdma.config import _hash_id

    # A warm side sees what a spawned one sees.
    assert state["env"] == "set later" and shm is True and host_id == _hash_id("another host")
    assert state["knobs"][-1] == "2.6.0000" and state["log_level"] == logging.DEBUG


@pytest.mark.parametrize("method", ["warm", "spawn", "forkserver"])
def test_every_start_method_runs_the_sides(doca_knobs: Knobs, method: str) -> None:
    (host_got, host), (dpu_got, dpu) = DocaPair(doca_knobs, start_method=method).run(sides.host_ping,
                                                                                     sides.dpu_pong)
    assert host_got == ("pong", host["pci"]) and dpu_got == ("ping", host)
    with pytest.raises(ValueError, match="start_method 'thread' is not one of warm, spawn, forkserver, fork"):
        DocaPair(doca_knobs, start_method="thread")


def test_a_side_stuck_in_c_code_shows_every_threads_stack(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.stuck_in_c, sides.raise_value_error)
    host = err.reports[0]
    assert host.status == "ended" and "did not say where it was" in host.detail, host.detail
    # faulthandler's dump, taken at C level when the kit asked the side to end: both threads.
    assert "in stuck_in_c" in host.detail and "in helper_thread" in host.detail, host.detail


def test_strict_mode_fails_a_side_that_returns_with_doca_objects_open(doca_pair: DocaPair) -> None:
    err = _fails(doca_pair, sides.leaks_a_pe_and_a_mmap, sides.returns_early)
    host = err.reports[0]
    assert host.status == "raised" and str(err).splitlines()[0].startswith(
        "host side raised DocaLeakError: the host function returned with DOCA objects still open")
    assert "Pe" in host.detail and "Mmap" in host.detail and "unclosed BufInventory" in host.detail, host.detail
    doca_pair.leak_check = False
    assert doca_pair.run(sides.leaks_a_pe_and_a_mmap, sides.returns_early) == ("leaked", "done")
    doca_pair.leak_check = True
    doca_pair.knobs = doca_pair.knobs.replace(strict=False)  # the check is part of strict mode
    assert doca_pair.run(sides.leaks_a_pe_and_a_mmap, sides.returns_early) == ("leaked", "done")


def test_unpicklable_args_are_one_clean_error_naming_the_test(doca_pair: DocaPair) -> None:
    with pytest.raises(TypeError, match=r"doca_pair \(tests/testing/test_pair.py::test_unpicklable_args_are_one_"
                                        r"clean_error_naming_the_test\): args=.*cannot be sent to the sides"):
        doca_pair.run(sides.returns_early, sides.returns_early, args=lambda: None)


def test_the_sides_log_at_the_given_level(doca_pair: DocaPair) -> None:
    assert doca_pair.run(sides.log_levels, sides.log_levels) == (logging.INFO, logging.INFO)
    doca_pair.log_level = "debug"
    assert doca_pair.run(sides.log_levels, sides.log_levels) == (logging.DEBUG, logging.DEBUG)
    doca_pair.log_level = "loud"
    with pytest.raises(ValueError, match="log_level 'loud' is not a logging level"):
        doca_pair.run(sides.log_levels, sides.log_levels)


IMPORTS = """
import json, sys
from doca_py.testing import DocaPair, Knobs
from tests.testing import sides

if __name__ == "__main__":
    print("IMPORTED", json.dumps({m: DocaPair(Knobs(seed=1)).run(sides.imported_emulators, sides.imported_emulators,
                                                                 start_method=m) for m in sys.argv[1:]}))
"""


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")) and sys.version_info[:2] == (3, 13),
                    reason="free-threaded 3.13: import doca_py imports every emulator module (doca_py/_backend)")
def test_a_forked_or_spawned_side_imports_only_what_it_uses(tmp_path: Path) -> None:
    """A side re-reads the settings of the emulator modules already imported; it imported the comch and RDMA
    emulators to re-read theirs, seconds per side under pytest's assertion rewriter without a bytecode cache
    (issue 35: ``fork`` 0.2 s → 3–7 s)."""
    import json
    import subprocess

    script = tmp_path / "imports.py"
    script.write_text(IMPORTS)
    env = {**os.environ, "DOCA_PY_IMPL": "emulated", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", str(script), "fork", "spawn"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (line,) = [ln for ln in out.stdout.splitlines() if ln.startswith("IMPORTED ")]
    assert json.loads(line.split(" ", 1)[1]) == {"fork": [[], []], "spawn": [[], []]}



def test_a_zygote_that_does_not_answer_a_launch_is_killed_not_waited_for(doca_pair: DocaPair,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """multiprocessing waits for the zygote's answer to a launch (the side's pid) without a bound: a stopped
    zygote kept ``run`` waiting for ever. The kit kills a zygote that does not answer within ``LAUNCH_WAIT``
    seconds; the next run starts a new one. (The zygote is resumed after a minute should the kit wait anyway.)"""
    import signal
    import threading

    from doca_py.testing import warm

    doca_pair.run(sides.returns_early, sides.returns_early)  # the zygote runs
    zygote = warm.server_pid()
    assert zygote is not None
    monkeypatch.setattr(warm, "LAUNCH_WAIT", 1.0, raising=False)
    os.kill(zygote, signal.SIGSTOP)
    resume = threading.Timer(60, os.kill, (zygote, signal.SIGCONT))
    resume.start()
    try:
        with pytest.raises(RuntimeError, match=rf"the zygote \(pid {zygote}\) did not start a side within 1.0 s: "
                                               rf"the kit killed it"):
            doca_pair.run(sides.returns_early, sides.returns_early)
    finally:
        resume.cancel()
        try:
            os.kill(zygote, signal.SIGCONT)
        except ProcessLookupError:
            pass
    monkeypatch.undo()  # the new zygote's start-up (its imports) is part of the next launch: the usual bound
    assert doca_pair.run(sides.state_of_a_side, sides.returns_early)[0]["ppid"] == warm.server_pid() != zygote

STOP = """
import os, time
from doca_py.testing import warm

if __name__ == "__main__":
    warm.STOP_WAIT = 1.0
    warm.start()
    child = os.fork()
    if child == 0:  # holds the zygote's 'alive' pipe (inherited), as a side's own child would
        time.sleep(30)
        os._exit(0)
    try:
        warm.stop()
    except TimeoutError as exc:
        print("RAISED", exc)
    else:
        print("RETURNED")
    os.kill(child, 9)
    os.waitpid(child, 0)
    print("HOLDER", child)
"""


def test_stopping_the_zygote_is_bounded_and_names_what_kept_it_running(tmp_path: Path) -> None:
    """The zygote ends once no process holds its 'alive' pipe; the session's end waited for that without a bound
    (multiprocessing's own stop), so a process that outlived its run kept the session from ending. ``stop``
    waits ``STOP_WAIT`` seconds, kills the zygote and names the process that held the pipe."""
    import subprocess

    script = tmp_path / "stop.py"
    script.write_text(STOP)
    env = {**os.environ, "DOCA_PY_IMPL": "emulated", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (holder,) = [int(ln.split()[1]) for ln in out.stdout.splitlines() if ln.startswith("HOLDER ")]
    (raised,) = [ln for ln in out.stdout.splitlines() if ln.startswith(("RAISED ", "RETURNED"))]
    assert raised.startswith("RAISED doca_py.testing: the zygote (pid ") and "did not end within 1.0 s" in raised, raised
    assert f"pid {holder} (" in raised.split("held its 'alive' pipe: ", 1)[1], raised

