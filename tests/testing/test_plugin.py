"""The pytest plugin, in fresh pytest processes (``pytester``): what an application's test suite sees.

Each session runs in a subprocess with the kit loaded through its entry point, from a directory
holding only the test files written here, without the project's conftest or environment.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from doca_py.testing.knobs import ENV_FAULTS, ENV_SEED, ENV_SHUFFLE, ENV_STRICT, ENV_VERSION
from doca_py.testing.pair import GRACE, STARTUP

from .. import deadlines

from .test_trace import check_chrome_trace

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.multiprocess

UNTOUCHED = '''
import os, sys, sysconfig, threading

# Free-threaded 3.13: import doca_py imports every library module of the backend (immortal code once a
# thread starts, doca_py/_backend); elsewhere the kit leaves the emulator unimported. Nowhere does it start one.
FT313 = bool(sysconfig.get_config_var("Py_GIL_DISABLED")) and sys.version_info[:2] == (3, 13)

def test_untouched():
    assert not [k for k in os.environ if k.startswith("DOCA_PY_") and k not in ("DOCA_PY_IMPL", "DOCA_PY_TRACE_LOG",
                                                                          "DOCA_PY_LIBDOCA_CACHE")]
    assert FT313 or not [m for m in sys.modules if m.startswith("doca_py.emulated")]
    assert not [t.name for t in threading.enumerate() if t.name.startswith("doca_py")]
'''

KNOBS = '''
import json, os
import doca_py

def test_knobs(doca_knobs, doca_dev, doca_pe, doca_dev_factory):
    from doca_py.emulated import strict
    host = doca_dev_factory(side="host")
    assert doca_dev.as_devinfo().get_pci_addr_str() != host.as_devinfo().get_pci_addr_str()
    assert doca_dev.rep_create_list()[0].get_pci_addr_str() == host.as_devinfo().get_pci_addr_str()
    print("KNOBS", json.dumps({"seed": strict.SEED, "strict": strict.STRICT, "shuffle": strict.SHUFFLE,
                               "faults": sorted(strict.FAULTS), "version": doca_py.version_runtime(),
                               "env": os.environ["DOCA_PY_EMU_SEED"], "knobs_seed": doca_knobs.seed}))
'''


# The suite's libdoca build cache, found at import: a test's pytester has pointed HOME at its own directory by
# the time ``clean`` runs, where every session of every test built libdoca again (a minute under load).
_LIBDOCA_CACHE = os.environ.get("DOCA_PY_LIBDOCA_CACHE") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "doca_py" / "libdoca")


def _session_bound() -> float:
    """How long one pytest session of these tests may run: a hang bound. The time-outs its doca_pair runs may
    spend (a side's start-up, the run's own 60 s, the kit's ending of both sides), and the processes it starts
    (itself, its zygote, the sides, xdist workers, compilers building libdoca) at this machine's cost."""
    return deadlines.bound(STARTUP, 60, 2 * GRACE, starts=60)


@pytest.fixture(autouse=True)
def _sessions_are_bounded(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester waits for a session without a bound: a session that hung kept the suite waiting for ever.
    Past `_session_bound`, pytester kills it and the test fails, saying so."""
    if "pytester" not in request.fixturenames:
        return
    pytester: pytest.Pytester = request.getfixturevalue("pytester")
    unbounded = pytester.runpytest_subprocess

    def bounded(*args: str | os.PathLike[str], timeout: float | None = None) -> pytest.RunResult:
        return unbounded(*args, timeout=_session_bound() if timeout is None else timeout)

    monkeypatch.setattr(pytester, "runpytest_subprocess", bounded)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No knob in the environment: a user's shell."""
    # every doca_py variable a caller may have exported (tasks.py's DOCA_PY_TEST_PYTHONS too), but the
    # trace log the suite itself sets
    for name in [k for k in os.environ if k.startswith("DOCA_PY_") and k != "DOCA_PY_TRACE_LOG"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCA_PY_IMPL", "emulated")
    monkeypatch.setenv("DOCA_PY_LIBDOCA_CACHE", _LIBDOCA_CACHE)  # pytester's HOME is a new directory: share the builds
    return monkeypatch


def _knobs(result: pytest.RunResult) -> dict[str, object]:
    (line,) = [ln for ln in result.outlines if "KNOBS " in ln]
    return json.loads(line.split("KNOBS ", 1)[1].rstrip(". "))  # type: ignore[no-any-return]


def _plain(result: pytest.RunResult) -> str:
    """The output without pytest's ``E   `` prefixes and indentation."""
    return "\n".join(re.sub(r"^(E\s+|\s+)", "", ln) for ln in result.outlines)


def _header_seed(result: pytest.RunResult) -> int:
    (line,) = [ln for ln in result.outlines if ln.startswith("doca_py test kit:")]
    m = re.search(r"seed (\d+),", line)
    assert m is not None and f"(replay: pytest --doca-seed {m.group(1)}" in line, line
    return int(m.group(1))


def test_a_session_that_uses_nothing_of_the_kit_is_untouched(pytester: pytest.Pytester,
                                                              clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_plain=UNTOUCHED)
    ran = pytester.runpytest_subprocess("-p", "no:xdist")
    ran.assert_outcomes(passed=1)
    _header_seed(ran)  # its one header line
    off = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:doca_py")
    off.assert_outcomes(passed=1)
    assert not [ln for ln in off.outlines if "doca_py" in ln]
    refused = pytester.runpytest_subprocess("-p", "no:doca_py", "--doca-seed", "1")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "unrecognized arguments: --doca-seed" in refused.errlines[-1] or \
        any("--doca-seed" in ln for ln in refused.errlines)


def test_defaults_strict_and_shuffled_with_the_header_seed(pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_a_plain=UNTOUCHED, test_b_kit=KNOBS)
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-s")
    ran.assert_outcomes(passed=2)  # the plain test ran first, untouched
    seed = _header_seed(ran)
    assert _knobs(ran) == {"seed": seed, "strict": True, "shuffle": True, "faults": [], "version": "3.2.0000",
                           "env": str(seed), "knobs_seed": seed}


def test_environment_variables_work_and_options_win(pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_kit=KNOBS)
    clean.setenv(ENV_SEED, "5")
    clean.setenv(ENV_STRICT, "0")
    clean.setenv(ENV_VERSION, "3.0")
    from_env = pytester.runpytest_subprocess("-p", "no:xdist", "-s")
    from_env.assert_outcomes(passed=1)
    assert _header_seed(from_env) == 5
    assert _knobs(from_env) == {"seed": 5, "strict": False, "shuffle": True, "faults": [], "version": "3.0.0000",
                                "env": "5", "knobs_seed": 5}
    opts = pytester.runpytest_subprocess("-p", "no:xdist", "-s", "--doca-seed", "7", "--doca-version", "2.6",
                                         "--doca-strict", "--doca-faults", "dma_memcpy=0.5,ec_create=0.1")
    opts.assert_outcomes(passed=1)
    assert _header_seed(opts) == 7
    assert _knobs(opts) == {"seed": 7, "strict": True, "shuffle": True, "faults": ["dma_memcpy", "ec_create"],
                            "version": "2.6.0000", "env": "7", "knobs_seed": 7}
    bad = pytester.runpytest_subprocess("--doca-faults", "dma_memcpy=2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and any("not in [0, 1]" in ln for ln in bad.errlines)
    bad = pytester.runpytest_subprocess("--doca-version", "2.7")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


MARKERS = '''
import pytest
import doca_py
from doca_py.emulated import strict

@pytest.mark.doca_versions("2.6", "3.0", "3.2")
def test_versions(doca_version):
    assert doca_py.version_runtime() == doca_version + ".0000"

def test_version_of_the_session(doca_version):
    assert doca_version == "3.2" and doca_py.version_runtime() == "3.2.0000"

@pytest.mark.doca_faults("dma_memcpy=1:NOT_PERMITTED")
def test_faults():
    assert strict.FAULTS == {"dma_memcpy": (1.0, int(doca_py.ErrorCode.NOT_PERMITTED))}

def test_no_faults_after(doca_knobs):
    assert strict.FAULTS == {} and doca_knobs.faults == ""
'''


def test_markers_run_per_version_and_inject_faults(pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_marks=MARKERS)
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-v", "-p", "no:randomly")
    ran.assert_outcomes(passed=6)
    for v in ("2.6", "3.0", "3.2"):
        ran.stdout.fnmatch_lines([f"*test_marks.py::test_versions?doca{v}? PASSED*"])


APP = '''
import doca_py as d
from doca_py.emulated import strict
from doca_py.testing import PeerGone

N = 16

def host(side):
    done = []
    with d.Pe() as pe, d.BufInventory(2 * N) as inv:
        dma = d.Dma(side.dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: done.append(u), lambda t, u, c: done.append(-1), N)
        dma.start()
        mm = d.Mmap()
        mm.allocate(2 * N * 64)
        mm.add_dev(side.dev)
        mm.start()
        base = mm.get_memrange()[0]
        tasks = [dma.task_memcpy_alloc_init(inv.buf_get_by_data(mm, base + i * 64, 8),
                                            inv.buf_get_by_addr(mm, base + (N + i) * 64, 8), user_data=i)
                 for i in range(N)]
        for t in tasks:
            t.submit()
        while len(done) < N:
            pe.progress()
        for t in tasks:
            t.free()
        dma.close()
        mm.close()
    side.send(done)
    return done

def dpu(side):
    order = side.recv(30)
    try:  # the host side ends first, so its report is whole when this side fails (the kit ends a running side)
        side.recv(30)
    except PeerGone:
        pass
    print("the dpu side checks the order", flush=True)
    assert order == sorted(order), f"the DPU got the copies out of order: {order}"

def test_app(doca_pair):
    doca_pair.run(host, dpu, timeout=60)
'''


def test_a_failing_side_reports_traceback_log_events_and_a_replay_that_reproduces_it(
        pytester: pytest.Pytester, clean: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytester.makepyfile(test_app=APP)
    first = pytester.runpytest_subprocess("-p", "no:xdist")
    first.assert_outcomes(failed=1)
    seed = _header_seed(first)
    out = _plain(first)
    order = re.search(r"AssertionError: the DPU got the copies out of order: (\[[-\d, ]+\])", out)
    assert order is not None, out
    assert "=== dpu side (pid" in out and "): raised ===" in out and 'test_app.py", line' in out
    assert "the dpu side checks the order" in out  # the side's log
    assert "=== host side (pid" in out and "): ok ===" in out
    assert out.count("submit   EmuDmaTaskMemcpy@") >= 16 and "IDLE->RUNNING" in out  # the host's events
    assert "strict-mode findings ---\nnone" in out
    (replay,) = re.findall(r"replay with: (cd .*)", out)
    assert shlex.split(replay) == ["cd", str(pytester.path), "&&", "pytest", "--doca-seed", str(seed),
                                   "test_app.py::test_app"]
    # The replay, run as printed from another directory: same seed, same shuffled order, same failure;
    # with a trace of all three processes.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    traces = tmp_path / "traces"
    command = replay.replace(" && pytest ", f" && {shlex.quote(sys.executable)} -m pytest -p no:xdist "
                                            f"--doca-trace={traces} ", 1)
    again = subprocess.run(command, shell=True, cwd=elsewhere, capture_output=True, text=True, timeout=300)
    again_out = "\n".join(re.sub(r"^(E\s+|\s+)", "", ln) for ln in again.stdout.splitlines())
    assert again.returncode == pytest.ExitCode.TESTS_FAILED, again_out + again.stderr
    assert f"the DPU got the copies out of order: {order.group(1)}" in again_out
    (path,) = traces.glob("*.json")
    assert path.name == "test_app.py_test_app.json"
    procs = check_chrome_trace(path)
    names = sorted(p["name"].split(" (")[0] for p in procs.values())
    assert names == ["dpu side", "host side", "test process"]
    (host,) = [p for p in procs.values() if p["name"].startswith("host side")]
    assert list(host["tracks"].values()) == ["kit", *[n for n in host["tracks"].values() if n.startswith("EmuDma@")]]
    assert [e["name"] for e in host["events"] if e["cat"] == "kit"] == ["host side: host starts",
                                                                         "host side: host returned"]
    (test,) = [p for p in procs.values() if p["name"].startswith("test process")]
    assert "doca_pair" in test["tracks"].values()  # the kit's track: sides started, the dpu side raised
    assert "dpu side raised" in [e["name"] for e in test["events"]]
    assert sum(e["ph"] == "b" for e in host["events"]) == 16


XDIST = '''
import os
from doca_py.emulated import strict

def test_one(doca_knobs, tmp_path_factory):
    (tmp_path_factory.getbasetemp().parent.parent / f"seed-{os.getpid()}").write_text(f"{strict.SEED} {os.environ['DOCA_PY_EMU_SEED']}")

def test_two(doca_knobs, tmp_path_factory):
    test_one(doca_knobs, tmp_path_factory)
'''


def test_xdist_workers_share_the_controllers_random_seed(pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_x=XDIST)
    ran = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    ran.assert_outcomes(passed=2)
    seed = _header_seed(ran)
    seeds = {p.read_text() for p in pytester.path.glob("**/seed-*")}
    assert seeds == {f"{seed} {seed}"}


WARM = '''
import os, pytest
from doca_py.testing import warm

LEFT = []

def count(side):
    import doca_py as d
    from doca_py.testing.pair import open_objects
    before = len(open_objects((side.dev, side.rep))) + len(LEFT)
    LEFT.append(d.Pe())  # left open on purpose: the next test's sides must not see it
    return os.getppid(), side.args, before

@pytest.mark.parametrize("n", range(6))
def test_warm(doca_pair, n, tmp_path_factory):
    host, dpu = doca_pair.run(count, count, args=n)
    assert host == dpu == (warm.server_pid(), n, 0)
    (tmp_path_factory.getbasetemp().parent.parent / f"zygote-{os.getpid()}-{n}").write_text(str(host[0]))
'''


def test_each_xdist_worker_has_its_zygote_and_the_session_ends_it(pytester: pytest.Pytester,
                                                                   clean: pytest.MonkeyPatch) -> None:
    import os

    pytester.makepyfile(test_w=WARM)
    ran = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", "--doca-no-leak-check")
    ran.assert_outcomes(passed=6)
    by_worker: dict[str, set[str]] = {}
    for p in pytester.path.glob("**/zygote-*"):
        by_worker.setdefault(p.name.split("-")[1], set()).add(p.read_text())
    assert len(by_worker) == 2 and all(len(z) == 1 for z in by_worker.values()), by_worker
    zygotes = {int(z) for zs in by_worker.values() for z in zs}
    assert len(zygotes) == 2
    for pid in zygotes:  # ended (and reaped) with the session
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


FAILS = '''
import logging

def host(side):
    side.log.debug("host debug record")
    side.send("logged")
    return side.recv(30)

def dpu(side):
    side.recv(30)  # the host's record is written before this side fails and the kit ends the host
    raise ValueError("the dpu side exploded")

def test_pair(doca_pair):
    doca_pair.run(host, dpu, timeout=60)
'''


def test_the_summary_names_side_exception_and_trace_file_without_the_kits_source(
        pytester: pytest.Pytester, clean: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytester.makepyfile(test_fails=FAILS)
    clean.setenv("CI", "1")  # pytest does not cut the summary line to the terminal's width
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-rf", f"--doca-trace={tmp_path}", "--log-level=DEBUG")
    ran.assert_outcomes(failed=1)
    # The summary line: the side and its exception first, one line (on CI pytest prints the whole message).
    (summary,) = [ln for ln in ran.outlines if ln.startswith("FAILED test_fails.py::test_pair")]
    assert summary == "FAILED test_fails.py::test_pair - dpu side raised ValueError: the dpu side exploded"
    assert ran.outlines[ran.outlines.index(summary) + 1].startswith("=")  # pytest's last line, not the report
    out = _plain(ran)
    assert f"trace: {tmp_path / 'test_fails.py_test_pair.json'} (open it in ui.perfetto.dev)" in out
    assert (tmp_path / "test_fails.py_test_pair.json").exists()
    assert "host debug record" in out  # the sides log at pytest's --log-level
    # The kit's own source is not in the traceback: the test's line, then the error.
    assert "def run(" not in out and "__tracebackhide__" not in out and "_check_method" not in out
    assert "doca_pair.run(host, dpu, timeout=60)" in out


def test_at_80_columns_the_summary_line_starts_with_the_side_and_its_exception(
        pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_fails=FAILS)
    for name in ("CI", "BUILD_NUMBER"):  # not on CI: pytest cuts the line to the terminal's width
        clean.delenv(name, raising=False)
    clean.setenv("COLUMNS", "80")
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-rf")
    ran.assert_outcomes(failed=1)
    (summary,) = [ln for ln in ran.outlines if ln.startswith("FAILED test_fails.py::test_pair")]
    assert len(summary) <= 80 and summary.startswith("FAILED test_fails.py::test_pair - dpu side raised ValueError"), \
        summary


def test_doca_seed_last_replays_the_last_failing_seed(pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_fails=FAILS)
    none_yet = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-seed=last")
    assert none_yet.ret == pytest.ExitCode.USAGE_ERROR
    assert any("no failing kit test has stored its seed" in ln for ln in none_yet.errlines)
    first = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-seed", "4711")
    first.assert_outcomes(failed=1)
    again = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-seed=last")
    again.assert_outcomes(failed=1)
    assert _header_seed(again) == 4711


INI_KNOBS = KNOBS + '''
def test_trace_dir(pytestconfig):
    from doca_py.testing.plugin import _STATE
    state = pytestconfig.stash[_STATE]
    print("TRACE", state.trace_dir, state.leak_check)
'''


def test_ini_settings_for_every_option_below_variables_and_options(pytester: pytest.Pytester,
                                                                   clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_kit=INI_KNOBS)
    pytester.makeini("[pytest]\ndoca_seed = 21\ndoca_version = 2.6\ndoca_strict = false\n"
                     "doca_faults = dma_memcpy=0.5\ndoca_trace = traces\ndoca_leak_check = false\n")
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-s")
    ran.assert_outcomes(passed=2)
    assert _header_seed(ran) == 21
    assert _knobs(ran) == {"seed": 21, "strict": False, "shuffle": True, "faults": ["dma_memcpy"],
                           "version": "2.6.0000", "env": "21", "knobs_seed": 21}
    assert any("TRACE traces False" in ln for ln in ran.outlines)
    clean.setenv(ENV_SEED, "22")  # a variable wins over the ini setting, an option over both
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-s", "--doca-version", "3.0", "--doca-leak-check")
    assert _knobs(ran)["seed"] == 22 and _knobs(ran)["version"] == "3.0.0000"
    assert any("TRACE traces True" in ln for ln in ran.outlines)
    pytester.makeini("[pytest]\ndoca_faults = dma_memcpy=7\n")
    bad = pytester.runpytest_subprocess("-p", "no:xdist")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and any("doca_faults" in ln for ln in bad.errlines)


VERSIONED = '''
import pytest

@pytest.mark.doca_versions("2.6", "3.2")
def test_supports_two(doca_version):
    pass

@pytest.mark.doca_versions("3.0")
def test_supports_one(doca_version):
    pass
'''


def test_doca_version_picks_from_what_a_test_supports_or_skips_it(pytester: pytest.Pytester,
                                                                   clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_v=VERSIONED)
    every = pytester.runpytest_subprocess("-p", "no:xdist", "-v", "-p", "no:randomly")
    every.assert_outcomes(passed=3)  # no version picked: each listed version
    picked = pytester.runpytest_subprocess("-p", "no:xdist", "-v", "-rs", "-p", "no:randomly",
                                           "--doca-version", "2.6")
    picked.assert_outcomes(passed=1, skipped=1)  # the CI matrix job of 2.6 runs each test once at most
    picked.stdout.fnmatch_lines(["*test_supports_two?doca2.6? PASSED*", "*test_supports_one?doca2.6? SKIPPED*",
                                 "SKIPPED*the test supports DOCA 3.0; the session runs DOCA 2.6 (--doca-version)"])


def test_a_bad_version_marker_fails_that_test_with_one_line_and_the_session_runs_the_others(
        pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.doca_versions("2.7")
def test_x(doca_version):
    pass

@pytest.mark.doca_versions()
def test_y(doca_version):
    pass

def test_z(doca_knobs):
    pass
''')
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:randomly", "-rE")
    text = "\n".join(ran.outlines + ran.errlines)
    ran.assert_outcomes(passed=1, errors=2)  # not a collection error that stops the session
    assert "usage error: test_bad.py::test_x: @pytest.mark.doca_versions: DOCA version '2.7': the emulator presents " \
           "one of 2.6, 3.0, 3.2" in text, text
    assert "usage error: test_bad.py::test_y: @pytest.mark.doca_versions needs at least one version" in text, text
    assert "Traceback" not in text and "pytest_generate_tests" not in text, text


def test_help_lists_every_fault_kind_with_its_default_error(pytester: pytest.Pytester,
                                                              clean: pytest.MonkeyPatch) -> None:
    from doca_py.emulated.strict import KINDS
    from doca_py.errors import ErrorCode
    from doca_py.testing.knobs import FAULT_KINDS

    assert FAULT_KINDS == {k: ErrorCode(c).name for k, c in KINDS.items()}  # the table is the emulator's
    text = " ".join(" ".join(pytester.runpytest_subprocess("--help").outlines).split())
    for kind, error in FAULT_KINDS.items():
        assert f"{kind} ({error})" in text
    for name in ("doca_seed", "doca_version", "doca_strict", "doca_faults", "doca_trace", "doca_leak_check"):
        assert f"{name} (string):" in text or f"{name} (string)" in text, name
    guide = (Path(__file__).parents[2] / "docs" / "testing.md").read_text()
    for kind, error in FAULT_KINDS.items():
        assert f"| `{kind}` | `DOCA_ERROR_{error}` |" in guide


LEAKY = '''
import doca_py

def test_leaks(doca_knobs):
    test_leaks.pe = doca_py.Pe()

def test_closes(doca_pe):
    pass
'''


def test_a_test_that_ends_with_doca_objects_open_fails_in_strict_mode(pytester: pytest.Pytester,
                                                                      clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_leaky=LEAKY)
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:randomly")
    ran.assert_outcomes(passed=2, errors=1)
    out = _plain(ran)
    assert "DocaLeakError: test_leaky.py::test_leaks ended with DOCA objects still open" in out
    assert "<Pe" in out
    off = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:randomly", "--doca-no-leak-check")
    off.assert_outcomes(passed=2)
    lax = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:randomly", "--doca-no-strict")
    lax.assert_outcomes(passed=2)


def test_the_trace_ring_size_is_an_option_and_a_setting(pytester: pytest.Pytester, clean: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    pytester.makepyfile(test_app=APP.replace("    assert order == sorted(order)", "    return order  #"))
    for how, args in (("option", ["--doca-trace-events=8"]), ("ini", [])):
        if how == "ini":
            pytester.makeini("[pytest]\ndoca_trace_events = 8\n")
        traces = tmp_path / how
        ran = pytester.runpytest_subprocess("-p", "no:xdist", *args, f"--doca-trace={traces}")
        ran.assert_outcomes(passed=1)
        (path,) = traces.glob("*.json")
        procs = check_chrome_trace(path)
        (host,) = [p for p in procs.values() if p["name"].startswith("host side")]
        (marker,) = [e for e in host["events"] if e["cat"] == "trace"]
        kept = [e for e in host["events"] if e["ph"] == "i" and e["cat"] != "trace"]
        assert len(kept) == 8 and marker["name"] == f"{marker['args']['dropped']} events dropped"
    bad = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-trace-events=0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--doca-trace-events*'0'*positive number of events*"])
    clean.setenv("DOCA_PY_TRACE_EVENTS", "lots")  # the environment's value, checked when no setting wins over it
    pytester.makeini("[pytest]\n")
    bad = pytester.runpytest_subprocess("-p", "no:xdist")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*DOCA_PY_TRACE_EVENTS='lots'*positive number of events*"])


LEAKY_HIDDEN = '''
import doca_py

KEEP = []

def test_cycle(doca_knobs):
    cycle = {}
    cycle["self"] = cycle
    cycle["mmap"] = doca_py.Mmap()

def test_on_the_device(doca_dev):
    m = doca_py.Mmap()
    m.allocate(4096)
    m.add_dev(doca_dev)  # left open: closing the fixture's device closes it
    KEEP.append(m)

def test_on_the_pe(doca_dev, doca_pe):
    dma = doca_py.Dma(doca_dev)
    doca_pe.connect_ctx(dma)  # left open on the fixture's Pe and device
    KEEP.append(dma)

def test_dropped(doca_dev):
    doca_py.Dma(doca_dev)  # garbage collected without close(): a ctx does not warn ResourceWarning
'''


def test_the_leak_check_finds_what_a_cycle_a_drop_or_the_kits_fixtures_would_close_silently(
        pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_hidden=LEAKY_HIDDEN)
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:randomly")
    ran.assert_outcomes(passed=4, errors=4)
    out = _plain(ran)
    for test in ("test_cycle", "test_on_the_device", "test_on_the_pe", "test_dropped"):
        assert f"DocaLeakError: test_hidden.py::{test} ended with DOCA objects still open" in out, test
    cycle, device, pe, dropped = (out.split(f"test_hidden.py::{t} ended")[1].split("DocaLeakError")[0]
                                  for t in ("test_cycle", "test_on_the_device", "test_on_the_pe", "test_dropped"))
    assert "<Mmap: open, reachable only through a reference cycle (garbage collected without close())>" in cycle
    kit = "(made on a device or Pe of the kit's fixtures, which closed it with them)"
    assert "<Mmap open" in device and kit in device, device
    assert pe.count("<Dma open") == 1 and kit in pe, pe
    assert "unclosed Dma (garbage collected without close())" in dropped, dropped


RANDOM = '''
import random

def test_random(doca_knobs):
    print("RANDOM", doca_knobs.seed, random.random())
'''


def test_python_random_starts_each_kit_test_from_the_seed(pytester: pytest.Pytester,
                                                           clean: pytest.MonkeyPatch) -> None:
    import random

    pytester.makepyfile(test_r=RANDOM)
    ran = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:randomly", "-s", "--doca-seed", "77")
    ran.assert_outcomes(passed=1)
    (line,) = [ln for ln in ran.outlines if "RANDOM " in ln]
    assert line.split("RANDOM ", 1)[1].split() == ["77", str(random.Random(77).random())]


def test_doca_seed_last_restores_every_knob_of_the_failing_run(pytester: pytest.Pytester,
                                                                clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_fails=FAILS)
    clean.setenv(ENV_SHUFFLE, "0")
    first = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-seed", "4711", "--doca-version", "2.6",
                                          "--doca-no-strict", "--doca-faults", "dma_memcpy=0.5", "--doca-impl", "native")
    first.assert_outcomes(failed=1)
    knobs = "seed 4711, DOCA 2.6, strict off, shuffle off, faults dma_memcpy=0.5, sides native"
    assert f"doca_py test kit: {knobs} " in "\n".join(first.outlines)
    (replay,) = re.findall(r"replay with: (cd .*)", _plain(first))
    assert shlex.split(replay)[3:] == ["DOCA_PY_EMU_SHUFFLE=0", "pytest", "--doca-seed", "4711", "--doca-version",
                                       "2.6", "--doca-no-strict", "--doca-faults", "dma_memcpy=0.5", "--doca-impl",
                                       "native", "test_fails.py::test_pair"]
    clean.delenv(ENV_SHUFFLE)
    again = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-seed=last")
    again.assert_outcomes(failed=1)
    header = "\n".join(again.outlines)
    assert f"doca_py test kit: {knobs} " in header, header
    assert "doca_py test kit, --doca-seed=last: the knobs of test_fails.py::test_pair" in header
    assert "doca_py test kit, native sides: libdoca over the emulator, DOCA 2.6 (" in header
    # This session's options win over what is restored.
    mine = pytester.runpytest_subprocess("--doca-seed=last", "--doca-version", "3.0", "-n", "1")  # workers too
    mine.assert_outcomes(failed=1)
    restored = "seed 4711, DOCA 3.0, strict off, shuffle off, faults dma_memcpy=0.5, sides native"
    assert f"doca_py test kit: {restored} " in "\n".join(mine.outlines)
    assert f"doca_pair: knobs: {restored} (native sides: libdoca over the emulator, DOCA 3.0" in _plain(mine)


NATIVE = '''
import doca_py

def host(side):
    return doca_py.impl, doca_py.version_runtime()

def test_native(doca_pair):
    assert doca_pair.run(host, host) == (("native", "3.0.0000"), ("native", "3.0.0000"))
'''


def test_doca_impl_native_runs_the_sides_over_libdoca_and_says_so_in_the_header(
        pytester: pytest.Pytester, clean: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_native=NATIVE)
    for args, ini in ((["--doca-impl", "native"], ""), ([], "[pytest]\ndoca_impl = native\n")):
        pytester.makeini(ini or "[pytest]\n")
        ran = pytester.runpytest_subprocess("-p", "no:xdist", "--doca-version", "3.0", *args)
        ran.assert_outcomes(passed=1)
        header = [ln for ln in ran.outlines if ln.startswith("doca_py test kit")]
        assert header[0].startswith("doca_py test kit: seed ") and ", sides native (replay: " in header[0], header
        assert re.fullmatch(r"doca_py test kit, native sides: libdoca over the emulator, DOCA 3\.0 \(.*/lib\)",
                            header[1]), header
    pytester.makeini("[pytest]\ndoca_impl = real\n")
    bad = pytester.runpytest_subprocess("-p", "no:xdist")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert any("the sides' path 'real': one of emulated, native" in ln for ln in bad.errlines), bad.errlines
