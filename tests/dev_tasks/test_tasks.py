"""tasks.py's test command: its arguments, reading pytest's JUnit reports, the per-run and
per-test summaries of ``--repeat``, and finding the Pythons to test on."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import tasks
from tasks import Outcome, Python, Run

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="2" failures="2" skipped="1" tests="7">
<testcase classname="tests.core.test_a" name="test_ok" file="tests/core/test_a.py" line="1" time="0.1"/>
<testcase classname="tests.core.test_a" name="test_skip" file="tests/core/test_a.py" line="3" time="0">
  <skipped type="pytest.skip" message="no">tests/core/test_a.py:4: no</skipped></testcase>
<testcase classname="tests.core.test_a.TestC" name="test_p[a.b::c]" file="tests/core/test_a.py" line="8" time="0">
  <failure message="assert 0">E assert 0</failure></testcase>
<testcase classname="tests.core.test_a" name="test_teardown" file="tests/core/test_a.py" line="12" time="0"/>
<testcase classname="tests.core.test_a" name="test_teardown" file="tests/core/test_a.py" line="12" time="0">
  <error message="failed on teardown">RuntimeError</error></testcase>
<testcase classname="tests.core.test_a" name="test_ok2" file="tests/core/test_a.py" line="14" time="0"/>
<testcase classname="" name="tests.core.test_broken" time="0"><error message="collection failure">E</error></testcase>
</testsuite></testsuites>
"""


# -- arguments --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "expected"), [
    ([], (0, [])),
    (["tests/core", "-x"], (0, ["tests/core", "-x"])),
    (["--repeat", "3", "-x"], (3, ["-x"])),
    (["--repeat=2", "--", "tests/core", "--repeat", "-k", "a"], (2, ["tests/core", "--repeat", "-k", "a"])),
    (["-k", "x", "--repeat", "10"], (10, ["-k", "x"])),
])
def test_repeat_is_taken_and_the_rest_goes_to_pytest(args: list[str], expected: tuple[int, list[str]]) -> None:
    assert tasks.parse_test_args(args) == expected


@pytest.mark.parametrize("args", [["--repeat"], ["--repeat=0"], ["--repeat", "two"], ["--repeat", "-x"]])
def test_a_bad_repeat_count_is_a_usage_error(args: list[str]) -> None:
    with pytest.raises(tasks.UsageError, match="--repeat needs a number of runs"):
        tasks.parse_test_args(args)


@pytest.mark.parametrize(("args", "expected"), [
    ([], (None, [])),
    (["--arch", "arm64", "tests/core"], ("arm64", ["tests/core"])),
    (["-x", "--arch=arm64", "--", "--arch", "x"], ("arm64", ["-x", "--", "--arch", "x"])),
])
def test_arch_is_taken_before_the_rest(args: list[str], expected: tuple[str | None, list[str]]) -> None:
    assert tasks.split_arch(args) == expected


@pytest.mark.parametrize("args", [["--arch"], ["--arch", "riscv64"], ["--arch="]])
def test_an_unknown_arch_is_a_usage_error(args: list[str]) -> None:
    with pytest.raises(tasks.UsageError, match="--arch takes one of arm64"):
        tasks.split_arch(args)


def test_arch_runs_its_script_with_the_pytest_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 3)

    monkeypatch.setattr(tasks.subprocess, "run", fake_run)
    assert tasks.test(["--arch", "arm64", "--", "tests/native", "-x"]) == 3
    assert ran == [[sys.executable, str(tasks.ROOT / "tools" / "arm64.py"), "tests/native", "-x"]]
    with pytest.raises(tasks.UsageError, match="not with --arch"):
        tasks.test(["--arch", "arm64", "--repeat", "2"])


def test_main_reports_a_usage_error(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "ensure_venv", lambda: None)
    assert tasks.main(["test", "--repeat", "0"]) == 2
    assert "tasks.py test: --repeat needs a number of runs (1 or more), got '0'" in capsys.readouterr().err


# -- reports ---------------------------------------------------------------------------------------


def test_a_report_gives_counts_and_node_ids(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(JUNIT)
    out = tasks.read_junit(report)
    # A teardown error after a pass is one failed test; a collection error names its module.
    assert out == Outcome(passed=2, skipped=1, failed=["tests/core/test_a.py::TestC::test_p[a.b::c]",
                                                       "tests/core/test_a.py::test_teardown",
                                                       "tests.core.test_broken"])
    assert out.counts() == "3 failed, 2 passed, 1 skipped"


def test_a_missing_or_broken_report_is_a_problem_not_a_pass(tmp_path: Path) -> None:
    assert tasks.read_junit(tmp_path / "none.xml") == Outcome(problem="no report")
    broken = tmp_path / "broken.xml"
    broken.write_text(JUNIT[: len(JUNIT) // 2])
    out = tasks.read_junit(broken)
    assert out.problem.startswith("unreadable report") and out.failed == [] and out.passed == 0
    assert Run("run 1/2", "7", 2, out).line().startswith("run 1/2: FAILED (0 passed, 0 skipped, unreadable report")


def test_node_ids_are_pytests_own(tmp_path: Path) -> None:
    """The ids read back from a real pytest report select the same tests when given to pytest."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "test_m.py").write_text(
        "import pytest\n"
        "def test_fails():\n    assert 0\n"
        "class TestK:\n    @pytest.mark.parametrize('x', ['a::b', 'c.d'])\n    def test_p(self, x):\n        assert 0\n"
        "def test_passes():\n    pass\n")
    report = tmp_path / "r.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--rootdir", str(tmp_path)]
    run = subprocess.run([*cmd, f"--junitxml={report}", "-o", "junit_family=xunit1", "pkg"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout
    out = tasks.read_junit(report)
    assert out.passed == 1 and out.failed == [
        "pkg/test_m.py::test_fails", "pkg/test_m.py::TestK::test_p[a::b]", "pkg/test_m.py::TestK::test_p[c.d]"]
    again = subprocess.run([*cmd, "--collect-only", *out.failed], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and "3 tests collected" in again.stdout, again.stdout


# -- summaries -------------------------------------------------------------------------------------


def test_the_repeat_summary_lists_each_run_and_each_failing_test_with_its_seeds() -> None:
    runs = [
        Run("run 1/3", "11", 1, Outcome(5, 1, ["tests/a.py::test_x", "tests/b.py::test_y"])),
        Run("run 2/3", "22", 0, Outcome(7, 1)),
        Run("run 3/3", "33", 1, Outcome(6, 1, ["tests/a.py::test_x"])),
    ]
    runs[0].python = ".venv-3.12/bin/python"
    assert tasks.summary("3 runs", runs) == [
        "3 runs: 1 of 3 passed",
        "  run 1/3: FAILED (2 failed, 5 passed, 1 skipped; exit status 1; DOCA_PY_EMU_SEED=11)",
        "  run 2/3: 7 passed, 1 skipped",
        "  run 3/3: FAILED (1 failed, 6 passed, 1 skipped; exit status 1; DOCA_PY_EMU_SEED=33)",
        "failing tests, with the DOCA_PY_EMU_SEED of each run that failed them:",
        "  tests/a.py::test_x  11 (run 1/3), 33 (run 3/3)",
        "  tests/b.py::test_y  11 (run 1/3)",
        "replay one: DOCA_PY_EMU_SEED=11 .venv-3.12/bin/python -m pytest -p no:xdist 'tests/a.py::test_x'",
    ]


def test_a_run_that_failed_without_a_failing_test_still_fails() -> None:
    # Interrupted, no tests collected, a crashed worker: the exit status decides.
    runs = [Run("python 3.12.1", "5", 0, Outcome(9, 0)), Run("python 3.13.0", "6", 5, Outcome(problem="no report"))]
    assert tasks.summary("test suite per Python", runs) == [
        "test suite per Python: 1 of 2 passed",
        "  python 3.12.1: 9 passed, 0 skipped",
        "  python 3.13.0: FAILED (0 passed, 0 skipped, no report; exit status 5; DOCA_PY_EMU_SEED=6)",
    ]


def test_only_a_free_threaded_313_carries_the_busy_machine_caveat_and_a_failed_run_repeats_it() -> None:
    ft313, ft314 = Python("/a", (3, 13, 5), True), Python("/b", (3, 14, 0), True)
    assert "sched_yield" in ft313.caveat and "python3.14t" in ft313.caveat
    assert ft314.caveat == "" and Python("/c", (3, 13, 5)).caveat == ""
    runs = [Run(ft313.label, "7", 1, Outcome(3, 0, ["tests/a.py::test_x"]), caveat=ft313.caveat),
            Run(ft313.label, "8", 0, Outcome(4, 0), caveat=ft313.caveat)]
    lines = tasks.summary("test suite per Python", runs)
    assert lines[1].startswith("  python 3.13.5 free-threaded, GIL off: FAILED")
    assert lines[2] == "    note: " + ft313.caveat
    assert lines[3] == "  python 3.13.5 free-threaded, GIL off: 4 passed, 0 skipped"  # passed: no note
    assert not any(line.startswith("    note") for line in lines[3:])


class _Repeating(random.Random):
    # The values are set after construction: 3.10's Random.__new__ takes a constructor argument
    # as the seed (and cannot hash a list).
    values: list[int]

    @classmethod
    def of(cls, values: list[int]) -> _Repeating:
        rng = cls()
        rng.values = values
        return rng

    def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        return self.values.pop(0)


def test_seeds_are_distinct() -> None:
    assert tasks.distinct_seeds(3, _Repeating.of([5, 5, 7, 5, 9])) == ["5", "7", "9"]
    assert len(set(tasks.distinct_seeds(50))) == 50


# -- the Pythons -----------------------------------------------------------------------------------


def _interpreter(path: Path, answer: str, status: int = 0) -> Path:
    """A stand-in interpreter: prints *answer* as tasks.probe's one-liner would (whatever it is asked)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stream = ">&2" if status else ""
    path.write_text(f"#!/bin/sh\necho '{answer}' {stream}\nexit {status}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path: Path) -> tuple[Path, list[str]]:
    """A pyenv root and a PATH with the cases discovery must handle."""
    pyenv = tmp_path / "pyenv"
    v = pyenv / "versions"
    _interpreter(v / "3.12.1" / "bin" / "python3.12", "CPython 3 12 1")
    _interpreter(v / "3.12.4" / "bin" / "python3.12", "CPython 3 12 4")
    _interpreter(v / "3.13.0" / "bin" / "python3.13", "CPython 3 13 0")
    _interpreter(v / "3.10.2" / "bin" / "python3.10", "CPython 3 10 2")  # the oldest supported
    _interpreter(v / "3.9.18" / "bin" / "python3.9", "CPython 3 9 18")  # too old: not even asked
    _interpreter(v / "3.14.0" / "bin" / "python3.14", "Fatal Python error: broken", status=1)
    _interpreter(v / "3.13.0" / "bin" / "python3.13-config", "not an interpreter")
    # pyenv's shims: skipped as a directory, even when on PATH.
    _interpreter(pyenv / "shims" / "python3.15", "pyenv: python3.15: command not found", status=127)
    usr = tmp_path / "usr" / "bin"
    _interpreter(usr / "python3.11", "CPython 3 11 7")  # .venv's version
    _interpreter(usr / "python3.16", "PyPy 3 16 0")
    (usr / "python3.17").write_text("#!/bin/sh\necho CPython 3 17 0\n")  # not executable
    (usr / "python3.12").symlink_to(v / "3.12.1" / "bin" / "python3.12")  # the same file once
    return pyenv, [str(pyenv / "shims"), str(usr), str(tmp_path / "missing"), ""]


def test_candidates_are_found_by_path(machine: tuple[Path, list[str]]) -> None:
    pyenv, path = machine
    found = [str(Path(c).relative_to(pyenv.parent)) for c in tasks.candidates(pyenv, path)]
    assert found == ["pyenv/versions/3.10.2/bin/python3.10", "pyenv/versions/3.12.1/bin/python3.12", "pyenv/versions/3.12.4/bin/python3.12",
                     "pyenv/versions/3.13.0/bin/python3.13", "pyenv/versions/3.14.0/bin/python3.14",
                     "usr/bin/python3.11", "usr/bin/python3.16"]


def test_one_working_cpython_per_version_besides_the_venvs(machine: tuple[Path, list[str]],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    pyenv, path = machine
    own = Python("/venv/bin/python", (3, 11, 2))
    found = tasks.find_pythons(own, None, pyenv, path)
    assert [(py.version, Path(py.exe).parent.parent.name) for py in found] == [((3, 10, 2), "3.10.2"),
                                                                               ((3, 12, 4), "3.12.4"),
                                                                               ((3, 13, 0), "3.13.0")]
    assert [py.label for py in found] == ["python 3.10.2", "python 3.12.4", "python 3.13.0"]
    assert found[1].venv_dir == tasks.ROOT / ".venv-3.12"
    out = capsys.readouterr().out
    assert "python3.14: does not start: Fatal Python error: broken" in out
    assert "usr/bin/python3.11: Python 3.11 is .venv's, already tested" in out
    assert "usr/bin/python3.16: PyPy, not CPython" in out
    assert "python3.15" not in out and "python3.17" not in out and "python3.9" not in out


def test_the_environment_names_the_pythons(machine: tuple[Path, list[str]], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    pyenv, path = machine
    assert tasks.find_pythons(None, "", pyenv, path) == []
    old = _interpreter(tmp_path / "old" / "python3", "CPython 3 9 18")
    chosen = str(pyenv / "versions" / "3.13.0" / "bin" / "python3.13")
    found = tasks.find_pythons(None, f"{chosen} {old} no-such-python3.99", pyenv, path)
    assert found == [Python(chosen, (3, 13, 0))]
    out = capsys.readouterr().out
    assert "Python 3.9 is older than doca_py supports" in out and "no-such-python3.99: not found" in out


def test_the_real_interpreter_is_probed() -> None:
    py, why = tasks.probe(sys.executable)
    assert why == "" and py is not None and py.version == tuple(sys.version_info[:3])
    assert os.path.samefile(py.exe, sys.executable)


def test_a_free_threaded_build_is_a_version_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyenv = tmp_path / "pyenv"
    _interpreter(pyenv / "versions" / "3.13.5t" / "bin" / "python3.13t", "CPython 3 13 5 1")
    _interpreter(pyenv / "versions" / "3.13.2t" / "bin" / "python3.13t", "CPython 3 13 2 1")
    usr = tmp_path / "usr" / "bin"
    _interpreter(usr / "python3.13", "CPython 3 13 5 0")
    _interpreter(usr / "python3.14t", "CPython 3 14 0 1")
    _interpreter(usr / "python3.11t", "CPython 3 11 7 1")  # .venv's X.Y, but free-threaded: tested too
    found = tasks.find_pythons(Python("/venv/bin/python", (3, 11, 2)), None, pyenv, [str(usr)])
    assert [(py.version, py.free_threaded) for py in found] == [((3, 11, 7), True), ((3, 13, 5), False),
                                                                 ((3, 13, 5), True), ((3, 14, 0), True)]
    ft = found[2]
    assert ft.exe.endswith("3.13.5t/bin/python3.13t")
    assert ft.venv_dir == tasks.ROOT / ".venv-3.13t" and found[1].venv_dir == tasks.ROOT / ".venv-3.13"
    assert ft.label == "python 3.13.5 free-threaded, GIL off"
    # Named in the environment: the same.
    assert tasks.find_pythons(None, str(usr / "python3.14t"), pyenv, [])[0].free_threaded


def test_a_free_threaded_python_runs_the_suite_with_the_gil_off(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    def fake_run(cmd: list[str], env: dict[str, str], limit: float) -> tuple[int, bool]:
        seen.append(env)
        return 0, False
    monkeypatch.setattr(tasks, "_run_bounded", fake_run)
    monkeypatch.delenv("PYTHON_GIL", raising=False)
    tasks._pytest(Path("py"), [], "ft", "1", tmp_path / "a.xml", gil_off=True)
    tasks._pytest(Path("py"), [], "std", "1", tmp_path / "b.xml")
    assert seen[0]["PYTHON_GIL"] == "0" and "PYTHON_GIL" not in seen[1]


def test_a_run_past_its_limit_is_ended(tmp_path: Path) -> None:
    rc, ended = tasks._run_bounded([sys.executable, "-c", "import time; time.sleep(600)"], dict(os.environ), 0.0)
    assert ended and rc == -signal.SIGKILL
    rc, ended = tasks._run_bounded([sys.executable, "-c", "pass"], dict(os.environ), 60.0)
    assert (rc, ended) == (0, False)


def test_ending_a_run_ends_everything_it_started(tmp_path: Path) -> None:
    """RUN_LIMIT's backstop kills the run's process group: an xdist worker's children too."""
    lock = tmp_path / "lock"
    # A grandchild takes a lock and says so through the child; both then block.
    grandchild = f"import fcntl, time; f = open({str(lock)!r}, 'w'); fcntl.flock(f, fcntl.LOCK_EX); print(flush=True); time.sleep(600)"
    child = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', {grandchild!r}]); "
             "p.wait()")
    proc = subprocess.Popen([sys.executable, "-c", child], start_new_session=True, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"\n"  # the grandchild holds the lock
    tasks._kill_group(proc)
    assert proc.wait() == -signal.SIGKILL
    with open(lock) as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # granted once the grandchild is gone (a hang here: it survived)
    proc.stdout.close()


def test_a_run_ended_at_its_limit_is_reported_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tasks, "_run_bounded", lambda cmd, env, limit: (-9, True))
    run_ = tasks._pytest(Path("py"), [], "hung", "7", tmp_path / "a.xml")
    assert run_.returncode and "RUN_LIMIT" in run_.line() and "hang outside any test" in run_.line()


@pytest.mark.skipif(not sysconfig.get_config_var("Py_GIL_DISABLED"), reason="not a free-threaded build")
def test_the_real_free_threaded_interpreter_says_so() -> None:
    py, _why = tasks.probe(sys.executable)
    assert py is not None and py.free_threaded


def test_the_native_pass_is_left_out_when_asked_or_when_tests_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(tasks, "_pytest", lambda py, args, *a, **k: ran.append(args))  # type: ignore[arg-type]
    monkeypatch.setattr(tasks, "real_doca", lambda py: False)
    monkeypatch.setenv(tasks.NATIVE_ENV, "0")
    assert tasks._native_pass([]) == [] and ran == []
    monkeypatch.delenv(tasks.NATIVE_ENV)
    assert tasks._native_pass(["tests/conformance", "-x"]) == [] and ran == []  # tests named: one run only
    monkeypatch.setattr(tasks, "real_doca", lambda py: True)
    assert tasks._native_pass([]) == [] and ran == []  # a real DOCA: the whole suite was native already


def test_the_native_pass_runs_its_folders_natively_and_the_conformance_at_2_6(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    calls: list[tuple[list[str], str, dict[str, str] | None]] = []

    def fake_pytest(py: Path, args: list[str], label: str, seed: str, report: Path, gil_off: bool = False,
                    extra_env: dict[str, str] | None = None) -> tasks.Run:
        calls.append((args, label, extra_env))
        return tasks.Run(label, seed, 0, tasks.Outcome(passed=1))

    class Done:
        def __init__(self, out: str, rc: int = 0) -> None:
            self.stdout, self.stderr, self.returncode = out, "", rc

    monkeypatch.setattr(tasks, "_pytest", fake_pytest)
    monkeypatch.setattr(tasks, "real_doca", lambda py: False)
    monkeypatch.setattr(tasks.subprocess, "run", lambda cmd, **k: Done("3.2\n" if "-c" in cmd else f"{tmp_path}/lib\n"))
    runs = tasks._native_pass(["-x"])
    assert [r.label for r in runs] == [
        "native path over libdoca 3.2 (DOCA_PY_IMPL=native: conformance, examples, libdoca, the app tests, the main job)",
        "conformance at DOCA 2.6 (native half over libdoca 2.6)"]
    (native_args, _, env), (oldest_args, _, oldest_env) = calls
    assert native_args == [*tasks.NATIVE_PASS, "-x"] and env == {"DOCA_PY_IMPL": "native", "DOCA_PY_LIBDIR": f"{tmp_path}/lib"}
    assert oldest_args == ["--doca-version", "2.6", "tests/conformance", "-x"] and oldest_env is None
    monkeypatch.setattr(tasks.subprocess, "run", lambda cmd, **k: Done("", 2))  # no C compiler: said, not failed
    assert tasks._native_pass([]) == []
