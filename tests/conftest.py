"""Shared fixtures: tests/conformance runs once per backend (native over the fake libraries
without DOCA), every other test on the backend in use; the header says which ran.

The emulated backend runs the suite in strict mode with shuffled completion order
(``DOCA_PY_STRICT=1``, ``DOCA_PY_EMU_SHUFFLE=1``) unless the environment or the test
kit's options say otherwise: the suite activates the kit (``doca_py.testing``) for the
whole session, so the seed is in the header and in every failure report, and a failing
test is replayed with ``pytest --doca-seed <seed> <test>`` (or ``DOCA_PY_EMU_SEED=<seed>``).
"""

from __future__ import annotations

# Before the emulator is imported: the knobs are read once, and child processes inherit them
# (--doca-seed and the other options win over the environment, which wins over the kit's defaults).
from doca_py.testing.plugin import activate

activate()

import os  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

# Every trace file the suite writes (the kit's --doca-trace, DOCA_PY_TRACE in the programs it starts) is
# listed in this log by doca_py.emulated.trace.write_chrome; the session checks them all at its end. The
# process that makes the log owns it (under xdist the controller: its workers inherit the variable).
_TRACE_LOG_OWNER = not os.environ.get("DOCA_PY_TRACE_LOG")
if _TRACE_LOG_OWNER:
    _fd, _trace_log = tempfile.mkstemp(prefix="doca-py-traces-", suffix=".log")
    os.close(_fd)
    os.environ["DOCA_PY_TRACE_LOG"] = _trace_log
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

import doca_py  # noqa: E402
from doca_py import _backend  # noqa: E402, F401

from .conformance import backends  # noqa: E402
from .conformance.backends import Backend  # noqa: E402
# The session fixture that compiles the fake DOCA libraries (tests/native, tests/conformance).
from .native.fakelib.plugin import FakeLibs, fakelibs  # noqa: E402, F401


#: The apps' test folders whose ``multiprocess`` tests (end-to-end runs of the apps as processes) are left out
#: when ``DOCA_PY_TEST_APPS_E2E=0`` (tasks.py sets it for the other Pythons; see ``APPS_E2E`` there).
APP_E2E_FOLDERS = frozenset({"storage_target", "gga_offload", "zero_copy", "initiator", "file_compression",
                             "secure_channel", "dma_copy"})
_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("DOCA_PY_TEST_APPS_E2E", "1") != "0":
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        parts = Path(item.path).resolve().relative_to(_TESTS).parts
        e2e = parts[0] in APP_E2E_FOLDERS and item.get_closest_marker("multiprocess") is not None
        (drop if e2e else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _knobs() -> str:
    from doca_py.emulated import strict

    return strict.describe()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{backends.MARK_CONFORMANCE}: runs on every backend, "
                            "native over the fake libraries when there is no DOCA")
    config.addinivalue_line("markers", f"{backends.MARK_FAKES_CANNOT}(reason): the fake libraries cannot "
                            "honour this conformance test (skipped on native over the fakes)")


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"doca_py backend: {doca_py.impl}; emulator: {_knobs()}",
            f"doca_py backends: {backends.describe()}"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Each test's Pes draw shuffles and faults from generators seeded by the seed and the test's id:
    a test replays alone as it ran in the suite, whichever tests ran before it on its worker."""
    from doca_py.emulated import strict

    strict.reseed(item.nodeid)


def replay_command(nodeid: str) -> str:
    """The command that reruns test *nodeid* with this run's emulator knobs and seed."""
    from doca_py.emulated import strict

    faults = os.environ.get("DOCA_PY_EMU_FAULTS", "")
    env = f"DOCA_PY_EMU_SEED={strict.SEED}" + (f" DOCA_PY_EMU_FAULTS={faults!r}" if faults else "")
    return f"{env} python -m pytest -p no:xdist {nodeid!r}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    # The kit's plugin adds the knobs and the replay command; without it (-p no:doca_py), this does.
    if getattr(report, "failed", False) and not item.config.pluginmanager.has_plugin("doca_py"):
        report.sections.append(("doca_py emulator", f"{_knobs()}\nreplay: {replay_command(item.nodeid)}"))  # type: ignore[attr-defined]
    return report


@pytest.fixture(params=["emulated", "native"])
def backend(request: pytest.FixtureRequest, fakelibs: FakeLibs, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """The backend a test runs on (a ``str``). Conformance tests (tests/conformance, or marked
    ``conformance``) run on both, native over the fake libraries without DOCA; other tests
    run on the backend in use and skip the other with a reason (see tests/conformance/backends.py)."""
    yield from backends.select(request.param, request, fakelibs, monkeypatch)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Check every trace file the session wrote (``doca_py.testing.tracecheck``): spans balanced, every
    task span ended or marked unfinished, each track's timestamps in order, each ctx's state changes
    chained. An invalid file fails the session."""
    if not _TRACE_LOG_OWNER or hasattr(session.config, "workerinput"):
        return
    from doca_py.testing.tracecheck import check_trace

    log = Path(os.environ["DOCA_PY_TRACE_LOG"])
    try:
        written = sorted(set(log.read_text().splitlines())) if log.exists() else []
        log.unlink(missing_ok=True)
    except OSError:
        written = []
    found = [p for p in written if Path(p).exists()]  # a test may remove its own files
    bad = {p: problems for p in found if (problems := check_trace(p))}
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and written:
        if reporter._tw.width_of_current_line:  # xdist's progress leaves its line open
            reporter.write("\n")
        reporter.write_line(f"doca_py traces: {len(found)} trace files written by this session checked, "
                            f"{len(bad)} invalid")
    if bad:
        if reporter is not None:
            reporter.write_sep("=", "invalid doca_py trace files", red=True)
            for path, problems in bad.items():
                reporter.write_line(f"{path}:\n  " + "\n  ".join(problems[:20]))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
