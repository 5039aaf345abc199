#!/usr/bin/env python3
"""Project set-up and the two README commands, using only the standard library.

    python3 tasks.py run    # the main job: the whole storage topology locally (emulated backend)
    python3 tasks.py test   # mypy --strict, mkdocs build --strict, the test suite

Both create or refresh ``.venv`` next to this file and install the project into it
(editable, with the ``dev`` extras) whenever ``pyproject.toml`` or ``setup.py``
changed since the last install, then run their tools from it.

``test`` then runs the test suite again (``pytest -n auto -q`` only) on every other
installed CPython 3.10+ it finds by path (``$PYENV_ROOT/versions/*/bin/python3.X``,
``python3.X`` on ``PATH``; one per version, its newest patch release), each in its own
``.venv-X.Y`` with the ``test`` extras, leaving out ``tests/topology``, ``tests/libdoca``, the docs,
packaging and benchmark folders (see ``OTHER_PYTHONS_SKIP``) and the apps' multi-process end-to-end tests
(``APPS_E2E``), and ends with one summary line per version. A free-threaded build (``python3.13t``, ``python3.14t``: built
with ``--disable-gil``) counts as a version of its own: it runs in ``.venv-X.Yt`` with
``PYTHON_GIL=0`` (the GIL off, even if an extension module would re-enable it).
``DOCA_PY_TEST_PYTHONS="python3.12 /opt/py/bin/python3"`` names the interpreters
instead; ``DOCA_PY_TEST_PYTHONS=`` (empty) runs none.

``test --arch arm64`` runs the suite's fast folders in an arm64 Debian userland under qemu-user
instead (``tools/arm64.py``; root, several minutes the first time; docs/arm64.md). Arguments
after ``--`` replace its folders.

``test`` also runs the native pass on ``.venv``'s Python: the folders of ``NATIVE_PASS`` with
``DOCA_PY_IMPL=native`` over ``libdoca`` (DOCA's C libraries served by the emulator, built once per
run into ``build/libdoca``: ``python -m doca_py libdoca``), so every example, the app tests and the
conformance tests run through ``doca_py/native`` as on a BlueField; then the conformance tests presenting
DOCA 2.6, their native half over a libdoca built for 2.6. Their summary lines say so. A machine
with real DOCA (``DOCA_PY_LIBDIR`` or the DOCA install directories) runs the whole suite natively
instead, and this pass is left out. ``DOCA_PY_TEST_NATIVE=0`` leaves it out too.

``test --repeat N`` runs the suite N times on ``.venv``'s Python only, each run with a
``DOCA_PY_EMU_SEED`` of its own, and ends with every failing test and the seeds that
failed it.

Every test has a hang bound (pytest-timeout, ``timeout`` in ``pyproject.toml``: it fails with every thread's
stack) and every pytest run one of ``RUN_LIMIT`` seconds (its process group is killed and the run reported).

Every pytest run has its seed set (an exported ``DOCA_PY_EMU_SEED`` wins, except under
``--repeat``) and printed, and writes JUnit XML to ``build/test-results/``, which the
summaries read. Other arguments of ``test`` (all of them after ``--``) go to pytest.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import venv
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
STAMP = VENV / ".setup-stamp"
RESULTS = ROOT / "build" / "test-results"
MIN_PYTHON = (3, 10)
SEED = "DOCA_PY_EMU_SEED"
PYTHONS = "DOCA_PY_TEST_PYTHONS"
#: Left out on the other Pythons: whole-topology runs, close to half the suite's time, of the same
#: apps that tests/{storage_target,gga_offload,zero_copy,initiator} run on every Python; and libdoca's own
#: tests (builds, C programs, cross-path pairs: minutes of C compiles and process pairs), whose serving code
#: every Python still runs in the native half of tests/conformance.
#: The docs, packaging and benchmark smoke tests do not depend on the interpreter either (the docs are built,
#: the wheel made and the benchmarks run by .venv's Python), and their tools are not installed there (``test``
#: extra, not ``dev``).
OTHER_PYTHONS_SKIP = ("tests/topology", "tests/libdoca", "tests/docs", "tests/packaging", "tests/benchmarks")
#: The extra installed on the other Pythons: what their part of the suite needs (no mypy, no docs tools).
OTHER_PYTHONS_EXTRA = "test"
#: Seconds a whole pytest run may take before it is ended (its process group killed) and reported: a backstop
#: for a hang outside any test (each test has pytest-timeout's bound, pyproject.toml), far above a run's time
#: on a busy machine (the longest, .venv's, takes ~6 min on a quiet 2-core machine).
RUN_LIMIT = 1800.0
#: Set to 0 for the other Pythons: the apps' multi-process end-to-end tests (``multiprocess``-marked, in the
#: folders of ``tests/conftest.APP_E2E_FOLDERS``) run on ``.venv``'s Python and in the native pass only. The
#: apps' unit tests still run everywhere, and mypy checks the apps against the oldest Python (3.10); what an
#: interpreter changes under the apps (processes, threads, the transports) is what tests/testing, tests/comch,
#: tests/rdma and tests/examples run on every Python. The CI time goes to versions of what differs.
APPS_E2E = "DOCA_PY_TEST_APPS_E2E"
#: Prints ``CPython 3 13 5 1``: implementation, version, and 1 for a free-threaded build.
_PROBE = ("import platform, sys, sysconfig; print(platform.python_implementation(), *sys.version_info[:3], "
          "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))))")
_VERSIONED = re.compile(r"python3\.(\d+)t?")
#: Free-threaded venvs: versions whose wheels exist for free-threaded builds (cp313t), where the newest
#: have none and would be built from source, which needs Rust and crates.io: mypy 1.19+ (its librt and
#: ast-serialize) and pydantic-core after 2.41.4 (pydantic 2.12's).
FREE_THREADED_CONSTRAINTS = ("mypy<1.19", "pydantic-core<=2.41.4")


#: The native pass: what runs again with ``DOCA_PY_IMPL=native`` over libdoca (see the docstring).
NATIVE_PASS = ("tests/conformance", "tests/examples", "tests/libdoca", "tests/storage_target", "tests/gga_offload",
               "tests/zero_copy", "tests/initiator", "tests/file_compression", "tests/secure_channel", "tests/dma_copy",
               "tests/topology/test_topology.py::test_main_job_runs_the_three_default_tests")
NATIVE_NAMES = ("conformance", "examples", "libdoca", "the app tests", "the main job")
NATIVE_ENV = "DOCA_PY_TEST_NATIVE"
NATIVE_OLDEST = "2.6"


class UsageError(Exception):
    """Bad arguments: main prints the message and the usage."""


def _sh(*cmd: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True, env=env)


def _wanted() -> str:
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "setup.py"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def _install(py: Path, free_threaded: bool = False, extra: str = "dev") -> None:
    """Install the project, editable with the *extra* extras, into *py*'s venv when out of date."""
    stamp = py.parent.parent / STAMP.name
    wanted = f"{_wanted()} {extra}"
    if stamp.exists() and stamp.read_text() == wanted:
        return
    _sh(py, "-m", "pip", "install", "--quiet", "--upgrade", "pip", "setuptools>=77")
    if free_threaded:
        # Not every dependency has a free-threaded wheel: prefer the versions that do, and build the
        # others (isal, pyyaml, markupsafe) with their own build requirements: build isolation, with the
        # constraints and the preference passed by environment so that the build environments get them
        # too. isal links the system ISA-L (libisal-dev) instead of building its own.
        constraints = ROOT / "build" / "free-threaded-constraints.txt"
        constraints.parent.mkdir(parents=True, exist_ok=True)
        constraints.write_text("\n".join(FREE_THREADED_CONSTRAINTS) + "\n")
        # pip 26 applies PIP_CONSTRAINT to the install only; PIP_BUILD_CONSTRAINT reaches build environments.
        env = dict(os.environ, PYTHON_ISAL_LINK_DYNAMIC="1", PIP_PREFER_BINARY="1",
                   PIP_CONSTRAINT=" ".join(filter(None, (os.environ.get("PIP_CONSTRAINT"), str(constraints)))),
                   PIP_BUILD_CONSTRAINT=" ".join(filter(None, (os.environ.get("PIP_BUILD_CONSTRAINT"),
                                                               str(constraints)))))
        _sh(py, "-m", "pip", "install", "--quiet", "-e", f".[{extra}]", env=env)
    else:
        # Without build isolation: an editable install needs only setuptools (setup.py makes it a
        # ``compat`` one, a .pth that mypy follows), not the wheel build's requirements. The man pages
        # import the apps, so the first pass installs the dependencies without them and the second
        # (no dependencies to fetch) builds them into the venv's share/man/man1.
        _sh(py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "-e", f".[{extra}]",
            env=dict(os.environ, DOCA_PY_SKIP_MANPAGES="1"))
        _sh(py, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "-e", ".")
    stamp.write_text(wanted)


def ensure_venv() -> None:
    """Create ``.venv`` and install the project when missing or out of date."""
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        STAMP.unlink(missing_ok=True)
    _install(PY)


# -- the interpreters to test on ---------------------------------------------------------------


@dataclass(frozen=True)
class Python:
    """An installed CPython found to start."""

    exe: str
    version: tuple[int, int, int]
    #: Built with ``--disable-gil`` (``Py_GIL_DISABLED``): tested with ``PYTHON_GIL=0``.
    free_threaded: bool = False

    @property
    def minor(self) -> tuple[int, int]:
        return self.version[0], self.version[1]

    @property
    def kind(self) -> tuple[int, int, bool]:
        """X.Y and the build: one interpreter of each is tested."""
        return self.version[0], self.version[1], self.free_threaded

    @property
    def label(self) -> str:
        return "python " + ".".join(map(str, self.version)) + (" free-threaded, GIL off" if self.free_threaded else "")

    @property
    def caveat(self) -> str:
        """What to know of this interpreter before reading its results, or ``""``."""
        if self.free_threaded and self.minor == (3, 13):
            # Measured by benchmarks/bench_busy_start.py; docs/getting-started.md#a-free-threaded-python.
            return ("CPython 3.13's free-threaded build spins through sched_yield() at every buffered file's close "
                    "(3.14 does not, gh-114203): beside other busy processes its processes start up to hundreds "
                    "of times slower, and multi-process tests can miss their bounds; prefer python3.14t")
        return ""

    @property
    def venv_dir(self) -> Path:
        return ROOT / f".venv-{self.version[0]}.{self.version[1]}{'t' if self.free_threaded else ''}"


def probe(exe: str) -> tuple[Python | None, str]:
    """The interpreter *exe* (a name on ``PATH`` or a path) if it starts and is a CPython doca_py
    supports, else ``(None, why not)``."""
    path = shutil.which(exe)
    if path is None:
        return None, "not found"
    try:
        out = subprocess.run([path, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"does not start: {exc}"
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[0]
        return None, f"does not start: {why}"
    impl, *numbers = out.stdout.split() or [""]
    if impl != "CPython":
        return None, f"{impl or 'no answer'}, not CPython"
    try:
        version = (int(numbers[0]), int(numbers[1]), int(numbers[2]))
        free_threaded = len(numbers) > 3 and int(numbers[3]) == 1
    except (IndexError, ValueError):
        return None, f"unexpected version {out.stdout.strip()!r}"
    if version[:2] < MIN_PYTHON:
        return None, f"Python {version[0]}.{version[1]} is older than doca_py supports"
    return Python(path, version, free_threaded), ""


def candidates(pyenv_root: Path, path_dirs: Iterable[str]) -> list[str]:
    """Every executable named ``python3.X`` or ``python3.Xt`` (X >= 10) in pyenv's versions, then on the ``PATH``,
    each file once. pyenv's shims are left out: they only forward to those versions, and fail
    ("command not found") for one that is not selected."""
    shims = (pyenv_root / "shims").resolve()
    dirs = sorted((pyenv_root / "versions").glob("*/bin")) + [Path(d) for d in path_dirs if d]
    found: list[str] = []
    seen: set[Path] = set()
    for d in dirs:
        if d.resolve() == shims or not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            m = _VERSIONED.fullmatch(f.name)
            if not m or (3, int(m.group(1))) < MIN_PYTHON or not (f.is_file() and os.access(f, os.X_OK)):
                continue
            if f.resolve() not in seen:
                seen.add(f.resolve())
                found.append(str(f))
    return found


def find_pythons(own: Python | None, explicit: str | None, pyenv_root: Path, path_dirs: Iterable[str]) -> list[Python]:
    """The interpreters to run the suite on besides *own* (``.venv``'s), one per X.Y and build
    (free-threaded or not), oldest first: those named in *explicit* (``DOCA_PY_TEST_PYTHONS``) when
    it is set, else every candidate found by path; of several, the newest patch release. Skips are
    printed with the reason."""
    names = explicit.split() if explicit is not None else candidates(pyenv_root, path_dirs)
    best: dict[tuple[int, int, bool], Python] = {}
    for exe in names:
        py, why = probe(exe)
        if py is None:
            print(f"skipping {exe}: {why}", flush=True)
        elif own is not None and py.kind == own.kind:
            print(f"skipping {exe}: Python {py.minor[0]}.{py.minor[1]} is .venv's, already tested", flush=True)
        elif py.kind not in best or py.version > best[py.kind].version:
            best[py.kind] = py
    return [best[k] for k in sorted(best)]


# -- results --------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One pytest run's results, read from its JUnit XML report."""

    passed: int = 0
    skipped: int = 0
    #: Ids of the tests that failed or errored, each once, in report order.
    failed: list[str] = field(default_factory=list)
    #: Why the run has no (complete) results, when it has none.
    problem: str = ""

    def counts(self) -> str:
        parts = [f"{len(self.failed)} failed"] if self.failed else []
        parts += [f"{self.passed} passed", f"{self.skipped} skipped"]
        return ", ".join(parts + ([self.problem] if self.problem else []))


def node_id(case: ET.Element) -> str:
    """pytest's node id of a ``<testcase>`` (``junit_family=xunit1`` gives its ``file``)."""
    classname, name, file = case.get("classname", ""), case.get("name", ""), case.get("file", "")
    module = file.removesuffix(".py").replace("/", ".")
    if file and classname == module:
        return f"{file}::{name}"
    if file and classname.startswith(module + "."):
        return f"{file}::{classname[len(module) + 1:].replace('.', '::')}::{name}"
    return "::".join(p for p in (classname, name) if p)


def read_junit(path: Path) -> Outcome:
    """The outcome a JUnit XML report records (a test that passed and then failed in teardown is
    reported twice: it counts once, as failed)."""
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        return Outcome(problem="no report")
    except (ET.ParseError, OSError) as exc:
        return Outcome(problem=f"unreadable report ({exc})")
    status: dict[str, str] = {}
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        kind = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        tid = node_id(case)
        if kind == "failed" or tid not in status:
            status[tid] = kind
    kinds = list(status.values())
    return Outcome(kinds.count("passed"), kinds.count("skipped"), [t for t, k in status.items() if k == "failed"])


@dataclass
class Run:
    """One pytest run: what ran it, its seed, exit status and outcome."""

    label: str
    seed: str
    returncode: int
    outcome: Outcome
    #: The interpreter that ran it, relative to the checkout.
    python: str = ".venv/bin/python"
    #: The interpreter's caveat (``Python.caveat``), repeated under a failed run's line.
    caveat: str = ""

    def line(self) -> str:
        if self.returncode == 0:
            return f"{self.label}: {self.outcome.counts()}"
        return f"{self.label}: FAILED ({self.outcome.counts()}; exit status {self.returncode}; {SEED}={self.seed})"


def failing_tests(runs: Iterable[Run]) -> dict[str, list[Run]]:
    """Each failing test id → the runs it failed in (in run order)."""
    out: dict[str, list[Run]] = {}
    for run_ in runs:
        for tid in run_.outcome.failed:
            out.setdefault(tid, []).append(run_)
    return out


def summary(title: str, runs: list[Run]) -> list[str]:
    """The closing report: one line per run, then every failing test with the seeds that failed it."""
    bad = [r for r in runs if r.returncode]
    lines = [f"{title}: {len(runs) - len(bad)} of {len(runs)} passed"]
    for r in runs:
        lines.append("  " + r.line())
        if r.returncode and r.caveat:
            lines.append("    note: " + r.caveat)
    failing = failing_tests(runs)
    if failing:
        lines.append(f"failing tests, with the {SEED} of each run that failed them:")
        lines += [f"  {tid}  " + ", ".join(f"{r.seed} ({r.label})" for r in failed) for tid, failed in failing.items()]
        tid, failed = next(iter(failing.items()))
        lines.append(f"replay one: {SEED}={failed[0].seed} {failed[0].python} -m pytest -p no:xdist {tid!r}")
    return lines


def distinct_seeds(n: int, rng: random.Random | None = None) -> list[str]:
    """*n* different seeds."""
    rng = rng or random.SystemRandom()
    seeds: list[str] = []
    while len(seeds) < n:
        seed = str(rng.randrange(1 << 31))
        if seed not in seeds:
            seeds.append(seed)
    return seeds


def ensure_other_venv(exe: str, venv_dir: Path, free_threaded: bool = False) -> Path:
    """Create ``.venv-X.Y`` (``.venv-X.Yt``) with *exe* and install the project into it when out of date."""
    py = venv_dir / "bin" / "python"
    if not py.exists():
        print(f"creating {venv_dir}", flush=True)
        _sh(exe, "-m", "venv", "--clear", venv_dir)
        (venv_dir / ".gitignore").write_text("*\n")  # as Python 3.13's venv does itself
        (venv_dir / STAMP.name).unlink(missing_ok=True)
    _install(py, free_threaded, OTHER_PYTHONS_EXTRA)
    return py


def run(args: list[str]) -> None:
    env = dict(os.environ, DOCA_PY_IMPL=os.environ.get("DOCA_PY_IMPL", "emulated"))
    _sh(PY, "-m", "apps.topology", *args, env=env)


#: ``test --arch`` values: the script that runs the suite on that architecture.
ARCHES = {"arm64": ROOT / "tools" / "arm64.py"}


def split_arch(args: list[str]) -> tuple[str | None, list[str]]:
    """``(the --arch value or None, the other arguments)``: checked before the rest, since ``--arch``
    runs another script with the remaining arguments."""
    arch, rest = None, []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == "--arch" or arg.startswith("--arch="):
            if arg == "--arch":
                i += 1
                value = args[i] if i < len(args) else ""
            else:
                value = arg.partition("=")[2]
            if value not in ARCHES:
                raise UsageError(f"--arch takes one of {', '.join(ARCHES)}, got {value!r}")
            arch = value
        else:
            rest.append(arg)
        i += 1
    return arch, rest


def parse_test_args(args: list[str]) -> tuple[int, list[str]]:
    """``(repeat count or 0, pytest's arguments)`` from ``test``'s arguments."""
    repeat, rest = 0, []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i + 1:]
            break
        if arg == "--repeat" or arg.startswith("--repeat="):
            if arg == "--repeat":
                i += 1
                value = args[i] if i < len(args) else ""
            else:
                value = arg.partition("=")[2]
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"--repeat needs a number of runs (1 or more), got {value!r}")
            repeat = int(value)
        else:
            rest.append(arg)
        i += 1
    return repeat, rest


def _pytest(py: Path, args: list[str], label: str, seed: str, report: Path, gil_off: bool = False,
            extra_env: dict[str, str] | None = None) -> Run:
    report.unlink(missing_ok=True)
    print(f"{label}: {SEED}={seed}", flush=True)
    # -n auto: pytest-xdist, one worker per core. xunit1: the report names each test's file.
    cmd = [str(py), "-m", "pytest", "-n", "auto", "-q", f"--junitxml={report}", "-o", "junit_family=xunit1", *args]
    print("+", " ".join(cmd), flush=True)
    env = dict(os.environ, **{SEED: seed}, **(extra_env or {}))
    if gil_off:
        env["PYTHON_GIL"] = "0"
    returncode, limit_hit = _run_bounded(cmd, env, RUN_LIMIT)
    outcome = read_junit(report)
    if limit_hit:
        outcome.problem = f"ended after {RUN_LIMIT:.0f} s (RUN_LIMIT): a hang outside any test's own bound"
    return Run(label, seed, returncode, outcome, os.path.relpath(py, ROOT))


def _run_bounded(cmd: list[str], env: dict[str, str], limit: float) -> tuple[int, bool]:
    """Run *cmd* in its own process group; past *limit* seconds, kill the group (the xdist workers and what
    they started). ``(exit status, whether the limit ended it)``."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
    try:
        return proc.wait(limit), False
    except subprocess.TimeoutExpired:
        print(f"+ {limit:.0f} s passed: ending the run", flush=True)
        _kill_group(proc)
        return proc.wait(), True
    except BaseException:  # Ctrl-C: the group is not in the terminal's foreground group, so end it here
        _kill_group(proc)
        proc.wait()
        raise


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _on_every_python(args: list[str]) -> list[Run]:
    own, _ = probe(str(PY))
    label = own.label if own else ".venv"
    runs = [_pytest(PY, args, label, os.environ.get(SEED) or distinct_seeds(1)[0], RESULTS / "venv.xml")]
    # The other Pythons: the suite only (mypy and the docs do not depend on the interpreter).
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    path_dirs = os.environ.get("PATH", "").split(os.pathsep)
    for py in find_pythons(own, os.environ.get(PYTHONS), pyenv_root, path_dirs):
        try:
            venv_py = ensure_other_venv(py.exe, py.venv_dir, py.free_threaded)
        except subprocess.CalledProcessError as exc:
            why = f"setting up {py.venv_dir.name} failed"
            runs.append(Run(py.label, "-", exc.returncode or 1, Outcome(problem=why)))
            continue
        seed = os.environ.get(SEED) or distinct_seeds(1)[0]
        skip = [f"--ignore={d}" for d in OTHER_PYTHONS_SKIP]
        if py.caveat:
            print(f"note on {py.label}: {py.caveat}", flush=True)
        run_ = _pytest(venv_py, [*skip, *args], py.label, seed, RESULTS / f"{py.venv_dir.name}.xml",
                       gil_off=py.free_threaded, extra_env={APPS_E2E: "0"})
        runs.append(replace(run_, caveat=py.caveat))
    return runs


def real_doca(py: Path) -> bool:
    """Whether *py*'s doca_py finds a DOCA of its own (then the whole suite already runs natively)."""
    probe_ = "from doca_py.native import loader; loader.load('common')"
    env = dict(os.environ)
    return subprocess.run([str(py), "-c", probe_], cwd=ROOT, env=env, capture_output=True).returncode == 0


def _native_pass(args: list[str]) -> list[Run]:
    """The native pass (see the module's docstring), or nothing when it does not apply."""
    if os.environ.get(NATIVE_ENV, "1").strip() == "0" or real_doca(PY):
        return []
    if any(os.path.exists(a.split("::")[0]) for a in args if not a.startswith("-")):
        return []  # tests named on the command line: they run once, on the selected backend
    lib = ROOT / "build" / "libdoca"
    proc = subprocess.run([str(PY), "-m", "doca_py", "libdoca", "--out", str(lib)], cwd=ROOT,
                          capture_output=True, text=True)
    label = "native path over libdoca"
    if proc.returncode == 2:  # no C compiler: said once, not a failure of the suite
        print(f"{label}: left out: {proc.stderr.strip()}", flush=True)
        return []
    if proc.returncode != 0:
        return [Run(label, "-", proc.returncode, Outcome(problem=f"libdoca build failed: {proc.stderr.strip()[-400:]}"))]
    version = subprocess.run([str(PY), "-c", "from doca_py.libdoca.build import default_version as v; print(v())"],
                             cwd=ROOT, capture_output=True, text=True).stdout.strip()
    seed = os.environ.get(SEED) or distinct_seeds(1)[0]
    env = {"DOCA_PY_IMPL": "native", "DOCA_PY_LIBDIR": proc.stdout.strip().splitlines()[-1]}
    runs = [_pytest(PY, [*NATIVE_PASS, *args], f"{label} {version} (DOCA_PY_IMPL=native: {', '.join(NATIVE_NAMES)})",
                    seed, RESULTS / "native.xml", extra_env=env)]
    # The oldest DOCA too: the conformance folder with every test presenting 2.6, its native half over a
    # libdoca built for 2.6 (tests/conformance/backends.py builds it).
    runs.append(_pytest(PY, ["--doca-version", NATIVE_OLDEST, "tests/conformance", *args],
                        f"conformance at DOCA {NATIVE_OLDEST} (native half over libdoca {NATIVE_OLDEST})", seed,
                        RESULTS / "native-oldest.xml"))
    return runs


def _repeated(n: int, args: list[str]) -> list[Run]:
    if os.environ.get(SEED):
        print(f"--repeat draws a seed per run: the exported {SEED}={os.environ[SEED]} is not used", flush=True)
    return [_pytest(PY, args, f"run {i}/{n}", seed, RESULTS / f"repeat-{i}.xml")
            for i, seed in enumerate(distinct_seeds(n), 1)]


def test(args: list[str]) -> int:
    arch, args = split_arch(args)
    if arch is not None:
        repeat, pytest_args = parse_test_args(args)
        if repeat:
            raise UsageError("--repeat runs on .venv's Python only, not with --arch")
        return subprocess.run([sys.executable, str(ARCHES[arch]), *pytest_args], cwd=ROOT).returncode
    repeat, pytest_args = parse_test_args(args)
    _sh(PY, "-m", "mypy")
    docs_env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    # No --quiet: every warning is visible, and --strict makes it fatal.
    _sh(PY, "-m", "mkdocs", "build", "--strict", "--site-dir", str(ROOT / "build" / "site"), env=docs_env)
    RESULTS.mkdir(parents=True, exist_ok=True)
    for old in RESULTS.glob("*.xml"):
        old.unlink()
    if repeat:
        runs, title = _repeated(repeat, pytest_args), f"{repeat} runs"
    else:
        runs = _on_every_python(pytest_args)
        runs[1:1] = _native_pass(pytest_args)
        title = (f"test suite per Python (after the first without {', '.join(OTHER_PYTHONS_SKIP)} and the "
                 f"apps' end-to-end runs), "
                 f"and the native pass")
    print("\n".join(summary(title, runs)), flush=True)
    return 1 if any(r.returncode for r in runs) else 0


COMMANDS: dict[str, Callable[[list[str]], int | None]] = {"run": run, "test": test}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    ensure_venv()
    try:
        return COMMANDS[argv[0]](argv[1:]) or 0
    except UsageError as exc:
        print(f"tasks.py {argv[0]}: {exc}", file=sys.stderr)
        print(__doc__, file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
