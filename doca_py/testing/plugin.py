"""The pytest plugin of the test kit (entry point ``pytest11: doca_py``; ``-p no:doca_py`` turns it off).

A session that uses none of the kit's fixtures, markers or options gets one header line
and nothing else: no environment change, no emulator import. The first test that uses the
kit *activates* it: the knobs go into ``os.environ`` (so processes the test starts inherit
them) and into the emulator. Each kit test starts with the emulator reseeded and its task
trace on, so ``pytest --doca-seed N <nodeid>`` replays one test alone, and a failure report
shows the test's last task events.

Options (each wins over its environment variable, which wins over the kit's default):

================================  ========================  ==================================================
option                            environment variable      meaning
================================  ========================  ==================================================
``--doca-seed N|last``            ``DOCA_PY_EMU_SEED``      seed of completion shuffling and fault injection
                                                            (random by default; in the header and in every
                                                            failure report, with the command to replay it;
                                                            ``last``: the last failing seed, from the cache)
``--doca-version {2.6,3.0,3.2}``  ``DOCA_PY_EMU_VERSION``   the DOCA release whose rules the emulator follows
                                                            (default 3.2)
``--doca-strict``,                ``DOCA_PY_STRICT``        strict mode (default on under the kit)
``--doca-no-strict``
``--doca-faults SPEC``            ``DOCA_PY_EMU_FAULTS``    inject task failures: ``KIND=RATE[:CODE],...``
                                                            (``doca_py.emulated.strict.parse_faults``)
``--doca-trace DIR``              (``DOCA_PY_TRACE`` out    write a Chrome / Perfetto trace file per kit test
                                  of pytest)                into DIR (use ``--doca-trace=DIR``)
``--doca-leak-check``,            (none)                    in strict mode, a side or test that ends with DOCA
``--doca-no-leak-check``                                    objects open fails (default on)
``--doca-trace-events N``         ``DOCA_PY_TRACE_EVENTS``  events each process's trace ring keeps (default
(ini ``doca_trace_events``)                                 4096; older ones are dropped, with a marker)
``--doca-impl {emulated,native}`` (none)                    the path of the ``doca_pair`` sides: the emulated
                                                            backend (default), or the native one over a real
                                                            DOCA or, without one, libdoca over the emulator
================================  ========================  ==================================================

Every option has an ini setting (``doca_seed``, ``doca_version``, ``doca_strict``, ``doca_faults``,
``doca_trace``, ``doca_leak_check``, ``doca_impl``), below the environment variable and the option. The
sides of a ``doca_pair`` log at pytest's ``--log-level``. ``--doca-seed=last`` restores every knob of the
last failing kit test (seed, version, strict mode, shuffling, faults, the sides' path) but those this
session's options set. Python's ``random`` is seeded from the seed at the start of every kit test (and in
each side, with its role).

Completion shuffling (``DOCA_PY_EMU_SHUFFLE``) is on under the kit unless the environment sets it to 0.

Markers:

* ``@pytest.mark.doca_versions("2.6", "3.2")``: the DOCA versions the test supports. Without a
  session version it runs once per version (ids like ``test_x[doca3.2]``); with one
  (``--doca-version``, its variable or ini setting) it runs under that version if listed, else it is
  skipped with the reason. The emulator in the test process and both sides of a ``doca_pair``
  present the version.
* ``@pytest.mark.doca_faults("dma_memcpy=1")``: run the test with this fault spec (in the test
  process and in both sides of a ``doca_pair``); other tests run without it.

Fixtures: ``doca_knobs``, ``doca_version``, ``doca_dev``, ``doca_dev_factory``,
``doca_pe``, ``doca_pe_factory``, ``doca_pair``. A project whose every test should run
under the kit's knobs calls ``activate`` from its ``conftest.py``.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .knobs import (ENV_FAULTS, ENV_SEED, ENV_STRICT, ENV_VERSION, IMPLS, VERSIONS, Knobs, check_faults, check_impl,
                    check_version, fault_kinds_text)

if TYPE_CHECKING:
    from .pair import DocaPair

__all__ = ["doca_knobs", "doca_version", "doca_dev", "doca_dev_factory", "doca_pe", "doca_pe_factory", "doca_pair",
           "activate", "DevFactory", "PeFactory", "FIXTURES", "MARKERS"]

FIXTURES = ("doca_knobs", "doca_version", "doca_dev", "doca_dev_factory", "doca_pe", "doca_pe_factory", "doca_pair")
"""The kit's fixtures: a test that uses one of them is a kit test."""
MARKERS = {
    "doca_versions": "doca_versions(*versions): run the test once per DOCA version the emulator presents "
                     f"(ids like [doca3.2]); one of {', '.join(VERSIONS)}",
    "doca_faults": "doca_faults(spec): run the test with this DOCA_PY_EMU_FAULTS fault-injection spec",
}
"""The kit's markers, with their help text."""
_DEFAULT_VERSION = "3.2"
_STATE = pytest.StashKey["_State"]()
_USED = pytest.StashKey[Knobs]()
_PAIR = pytest.StashKey["DocaPair"]()
_LEFT = pytest.StashKey[list[str]]()  # objects the kit's fixtures found open on what they made, before closing it


class _State:
    """The session's knobs; ``activate`` applies them once."""

    def __init__(self, knobs: Knobs, explicit: bool, trace_dir: str | None, leak_check: bool = True,
                 version_given: bool = False, restored: str = "") -> None:
        self.knobs = knobs
        self.restored = restored  # --doca-seed=last: the failing test whose knobs were restored
        self.explicit = explicit
        self.trace_dir = trace_dir
        self.leak_check = leak_check
        self.version_given = version_given  # the session picks one version (option, variable or ini)
        self.active = False
        self.everywhere = False  # activated for the whole session (every failure report gets the seed)
        self.native = ""  # --doca-impl native: which DOCA the native sides load, for the header

    def activate(self) -> None:
        if self.active:
            return
        self.active = True
        self.knobs.write_env()
        self.knobs.apply()


_pending: _State | None = None


def activate() -> Knobs:
    """Activate the kit for the whole session, from a ``conftest.py``, before ``doca_py`` objects
    exist: the knobs go into the environment now (every test and child process sees them) and
    every failure report carries the seed. Works without the plugin too (``-p no:doca_py``): then
    the knobs come from the environment and the kit's defaults."""
    state = _pending or _State(Knobs.resolve(), explicit=False, trace_dir=None)
    state.everywhere = True
    state.knobs.write_env()
    if "doca_py.emulated.strict" in sys.modules:  # imported early (--doca-faults checks its spec)
        state.knobs.apply()
    return state.knobs


_LAST_SEED = "doca_py/last_failed_seed"  # an earlier kit's record: the seed only
_LAST = "doca_py/last_failed"  # the knobs of the last failing kit test, and its node id
_INI = {  # ini setting: (help, the environment variable it stands for)
    "doca_seed": ("seed of completion shuffling and fault injection (or 'last')", ENV_SEED),
    "doca_version": (f"DOCA version the emulator presents ({', '.join(VERSIONS)})", ENV_VERSION),
    "doca_strict": ("strict mode: true (the default) or false", ENV_STRICT),
    "doca_faults": ("fault-injection spec KIND=RATE[:CODE],...", ENV_FAULTS),
    "doca_trace": ("directory for a Chrome/Perfetto trace of every kit test", ""),
    "doca_leak_check": ("strict mode fails a side or test that ends with DOCA objects open: true (the default) "
                        "or false", ""),
    "doca_impl": (f"the path of the doca_pair sides: {' or '.join(IMPLS)} (the default: emulated)", ""),
}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("doca_py", "doca_py test kit (emulated DOCA)")
    group.addoption("--doca-seed", default=None, metavar="N|last",
                    help="seed of completion shuffling and fault injection (DOCA_PY_EMU_SEED); printed in the "
                         "header and in failure reports; 'last': the seed of the last session with a failing "
                         "kit test (from pytest's cache)")
    group.addoption("--doca-version", default=None, choices=VERSIONS,
                    help="DOCA version the emulator presents (DOCA_PY_EMU_VERSION); a test marked "
                         "doca_versions runs under it if it lists it, else it is skipped")
    group.addoption("--doca-strict", dest="doca_strict", action="store_true", default=None,
                    help="strict mode: misuse DOCA leaves undefined raises at once (the default)")
    group.addoption("--doca-no-strict", dest="doca_strict", action="store_false",
                    help="turn strict mode off (DOCA_PY_STRICT=0)")
    group.addoption("--doca-faults", default=None, metavar="SPEC",
                    help="inject task failures: KIND=RATE[:CODE],... (DOCA_PY_EMU_FAULTS); KIND is * (all) or "
                         "one of, with the DOCA error it injects when CODE is not given: "
                         + fault_kinds_text().replace("%", "%%"))
    group.addoption("--doca-trace", default=None, metavar="DIR",
                    help="write a Chrome/Perfetto trace of every kit test to DIR")
    group.addoption("--doca-leak-check", dest="doca_leak_check", action="store_true", default=None,
                    help="in strict mode, a side or test that ends with DOCA objects open fails (the default)")
    group.addoption("--doca-no-leak-check", dest="doca_leak_check", action="store_false",
                    help="turn the leak check off")
    group.addoption("--doca-impl", default=None, choices=IMPLS,
                    help="the path of the doca_pair sides: emulated (the default) or native (the native backend "
                         "over a real DOCA when one loads, else over libdoca served by the emulator, built once; "
                         "the knobs and the trace work the same)")
    group.addoption("--doca-trace-events", default=None, metavar="N",
                    help=f"events each process's trace ring keeps (DOCA_PY_TRACE_EVENTS; default 4096): older "
                         f"ones are dropped, with a marker")
    parser.addini("doca_trace_events", "events each process's trace ring keeps (--doca-trace-events)", default="")
    for name, (text, var) in _INI.items():
        parser.addini(name, f"doca_py: {text}" + (f" (below {var} and the option)" if var else " (below the option)"),
                      default="")


def _ini(config: pytest.Config, name: str) -> str:
    try:
        return str(config.getini(name) or "").strip()
    except ValueError:  # not registered (the plugin was registered late)
        return ""


def _ini_flag(config: pytest.Config, name: str) -> bool | None:
    text = _ini(config, name).lower()
    if not text:
        return None
    if text not in _TRUE + _FALSE:
        raise pytest.UsageError(f"doca_py: ini setting {name} = {text!r}: true or false")
    return text in _TRUE


def _last(config: pytest.Config) -> dict[str, Any]:
    """The record of the last failing kit test: its knobs (``Knobs`` fields) and ``nodeid``."""
    cache = getattr(config, "cache", None)
    if cache is None:  # before the cache plugin configures (conftests load first)
        from _pytest.cacheprovider import Cache

        cache = Cache.for_config(config, _ispytest=True)
    record = cache.get(_LAST, None)
    if not isinstance(record, dict) or not isinstance(record.get("seed"), int):
        seed = cache.get(_LAST_SEED, None)
        if not isinstance(seed, int):
            raise pytest.UsageError("doca_py: --doca-seed=last: no failing kit test has stored its seed in "
                                    "pytest's cache yet (.pytest_cache)")
        record = {"seed": seed}
    return record


def _seed(config: pytest.Config, text: str | None, where: str) -> int | None:
    if text is None or not text.strip():
        return None
    if text.strip() == "last":
        return int(_last(config)["seed"])
    try:
        return int(text)
    except ValueError:
        raise pytest.UsageError(f"doca_py: {where} {text!r}: an integer or 'last'") from None


def _state_from(config: pytest.Config, ns: Any) -> _State:
    seed_text, version = getattr(ns, "doca_seed", None), getattr(ns, "doca_version", None)
    strict, faults = getattr(ns, "doca_strict", None), getattr(ns, "doca_faults", None)
    trace_dir, impl = getattr(ns, "doca_trace", None), getattr(ns, "doca_impl", None)
    # An ini setting stands for its environment variable where the environment does not set it.
    env = dict(os.environ)
    ini_given = False
    for name, (_, var) in _INI.items():
        value = _ini(config, name)
        ini_given |= bool(value)
        if not var or not value or env.get(var, "").strip():
            continue
        if name == "doca_strict":
            value = str(int(bool(_ini_flag(config, name))))
        elif name == "doca_seed":
            value = str(_seed(config, value, "ini setting doca_seed ="))
        elif name == "doca_faults":
            try:
                check_faults(value)
            except ValueError as exc:
                raise pytest.UsageError(f"doca_py: ini setting doca_faults: {exc}") from None
        env[var] = value
    impl = impl or _ini(config, "doca_impl") or None
    # --doca-seed=last (or the ini setting): every knob of the failing test, below this session's options.
    if seed_text is not None:
        last = seed_text.strip() == "last"
    else:  # the ini setting, where the environment sets no seed
        last = not os.environ.get(ENV_SEED, "").strip() and _ini(config, "doca_seed") == "last"
    record = _last(config) if last else {}
    seed = _seed(config, seed_text, "--doca-seed")
    try:
        if impl is not None:
            check_impl(impl)
        knobs = Knobs.resolve(seed=seed, version=version, strict=strict, faults=faults, env=env, impl=impl)
        if record:
            kept = {"version": version, "strict": strict, "faults": faults, "impl": impl}
            fields = {f.name for f in dataclasses.fields(Knobs)}
            knobs = knobs.replace(**{k: v for k, v in record.items() if k in fields and kept.get(k) is None})
            knobs = knobs.replace(version=check_version(knobs.version) if knobs.version else None,
                                  faults=check_faults(knobs.faults), impl=check_impl(knobs.impl))
    except ValueError as exc:
        raise pytest.UsageError(f"doca_py: {exc}") from None
    trace_dir = trace_dir or _ini(config, "doca_trace") or None
    leak = getattr(ns, "doca_leak_check", None)
    leak_check = leak if leak is not None else _ini_flag(config, "doca_leak_check") is not False
    explicit = ini_given or any(v is not None for v in (seed_text, version, strict, faults, trace_dir, impl))
    return _State(knobs, explicit, trace_dir, leak_check, version_given=knobs.version is not None,
                  restored=str(record.get("nodeid", "the last failing kit test")) if record else "")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # Before conftest files import doca_py: explicit options reach the environment first.
    global _pending
    state = _pending = _state_from(early_config, early_config.known_args_namespace)
    early_config.stash[_STATE] = state
    if state.explicit:
        state.knobs.write_env()


def _trace_events(config: pytest.Config) -> None:
    """``--doca-trace-events`` (or the ini setting) into the environment: the test process's ring and
    the sides' (which inherit it) take that size."""
    text = str(config.getoption("doca_trace_events", None) or config.getini("doca_trace_events") or "").strip()
    if not text:
        env = os.environ.get("DOCA_PY_TRACE_EVENTS", "").strip()
        if env and (not env.isdigit() or int(env) <= 0):
            raise pytest.UsageError(f"doca_py: DOCA_PY_TRACE_EVENTS={env!r}: the trace ring's size must be a "
                                    f"positive number of events")
        return
    if not text.isdigit() or int(text) <= 0:
        raise pytest.UsageError(f"doca_py: --doca-trace-events / doca_trace_events {text!r}: the trace ring's "
                                f"size must be a positive number of events")
    os.environ["DOCA_PY_TRACE_EVENTS"] = text


def pytest_configure(config: pytest.Config) -> None:
    global _pending
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", text)
    _trace_events(config)
    if _STATE not in config.stash:  # registered late (not through the entry point)
        config.stash[_STATE] = _pending = _state_from(config, config.option)
    state = config.stash[_STATE]
    worker_knobs = getattr(config, "workerinput", {}).get("doca_knobs")
    if worker_knobs is not None and Knobs(**worker_knobs) != state.knobs:
        state.knobs = Knobs(**worker_knobs)  # xdist: the controller's knobs (its random seed, what it restored)
        if state.everywhere:  # a conftest activated the worker's own seed: correct it
            state.knobs.write_env()
            if "doca_py.emulated.strict" in sys.modules:
                state.knobs.apply()
    if state.explicit:
        state.activate()
    if state.knobs.impl == "native":  # a real DOCA, or libdoca built now (once: the build is cached on disk)
        from .native import NativeUnavailable, resolve

        try:
            state.native = resolve(_session_version(state.knobs)).describe()
        except NativeUnavailable as exc:
            raise pytest.UsageError(f"doca_py: --doca-impl native: {exc}") from None


def _session_version(knobs: Knobs) -> str:
    return knobs.version or _DEFAULT_VERSION


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker uses the controller's knobs (its seed above all)."""
    node.workerinput["doca_knobs"] = dataclasses.asdict(node.config.stash[_STATE].knobs)


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash[_STATE]
    k = state.knobs
    lines = [f"doca_py test kit: {k.describe()} (replay: {k.replay()})"]
    if state.restored:
        lines.append(f"doca_py test kit, --doca-seed=last: the knobs of {state.restored}")
    if state.native:
        lines.append(f"doca_py test kit, native sides: {state.native}")
    return lines


class _BadMarker(str):
    """The ``doca_version`` parameter of a test whose ``doca_versions`` marker is wrong: the message. The test
    fails with it at its setup, and the session runs the others (a collection error would stop it)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marks = list(metafunc.definition.iter_markers("doca_versions"))
    if marks:
        nodeid = metafunc.definition.nodeid
        bad = ""
        try:
            versions = list(dict.fromkeys(check_version(str(v)) for m in marks for v in m.args))
        except ValueError as exc:
            bad = f"usage error: {nodeid}: @pytest.mark.doca_versions: {exc}"
        else:
            if not versions:
                bad = f"usage error: {nodeid}: @pytest.mark.doca_versions needs at least one version"
        if "doca_version" not in metafunc.fixturenames:
            metafunc.fixturenames.append("doca_version")
        if bad:
            metafunc.parametrize("doca_version", [_BadMarker(bad)], indirect=True, ids=["bad-doca_versions"])
            return
        if "doca_version" not in metafunc.fixturenames:
            metafunc.fixturenames.append("doca_version")
        # The rule: the marker lists the versions a test supports; a session that picks one version
        # (--doca-version, DOCA_PY_EMU_VERSION or the doca_version ini setting) runs it under that one
        # if it is listed, and skips it with the reason if not; a session that picks none runs them all.
        state = metafunc.config.stash.get(_STATE, None)
        params: list[Any] = versions
        if state is not None and state.version_given and state.knobs.version is not None:
            picked = state.knobs.version
            reason = (f"the test supports DOCA {', '.join(versions)}; the session runs DOCA {picked} "
                      f"(--doca-version)")
            params = [picked] if picked in versions else [pytest.param(picked, marks=pytest.mark.skip(reason=reason))]
        metafunc.parametrize("doca_version", params, indirect=True,
                             ids=[f"doca{p if isinstance(p, str) else p.values[0]}" for p in params])
    if metafunc.definition.get_closest_marker("doca_faults") and "doca_knobs" not in metafunc.fixturenames:
        metafunc.fixturenames.append("doca_knobs")


@pytest.fixture
def doca_knobs(request: pytest.FixtureRequest) -> Iterator[Knobs]:
    """The emulator knobs of this test (seed, version, strict, shuffle, faults), applied to the
    emulator and reseeded at its start; every other kit fixture uses it."""
    state: _State = request.config.stash[_STATE]
    state.activate()
    knobs = state.knobs
    faults = request.node.get_closest_marker("doca_faults")
    if faults is not None:
        try:
            knobs = knobs.replace(faults=check_faults(",".join(faults.args)))
        except ValueError as exc:
            raise pytest.UsageError(f"{request.node.nodeid}: doca_faults: {exc}") from None
    callspec = getattr(request.node, "callspec", None)  # doca_versions parametrizes doca_version
    version = callspec.params.get("doca_version") if callspec is not None else None
    if isinstance(version, _BadMarker):
        pytest.fail(str(version), pytrace=False)
    if version is not None:
        knobs = knobs.replace(version=version)
    from .. import _backend
    from ..emulated import trace
    from ..emulated import version as emu_version
    from .leaks import collecting, describe_leaks, open_objects

    saved_version = emu_version.VERSION
    request.node.stash[_USED] = knobs
    check_leaks = knobs.strict and state.leak_check
    if check_leaks:  # what exists now is not the test's: frozen, the check at its end looks at the rest only
        gc.freeze()
    knobs.apply(token=request.node.nodeid)  # the test's decisions: a function of the seed and its id
    random.seed(knobs.seed)  # Python's own generator too, as pytest-randomly seeds it
    request.node.stash[_LEFT] = []
    trace.clear()
    trace.enable(label=f"test process (pid {os.getpid()})")  # during kit tests only: other tests pay nothing
    collected = collecting()
    unclosed = collected.__enter__()
    try:
        if _backend.impl != "emulated":
            with _backend.use("emulated"):
                yield knobs
        else:
            yield knobs
    finally:
        trace.disable()  # the ring keeps its events for the report and the trace file
        emu_version.VERSION = saved_version
        lost = list(unclosed)  # before open_objects: its collection finalizes cycles, which it lists itself
        collected.__exit__(None, None, None)
    if knobs is not state.knobs:
        state.knobs.apply()
    if check_leaks:  # after the kit's fixtures and the test's own that use them have closed theirs
        try:
            leaked = open_objects()
        finally:
            gc.unfreeze()
        left = request.node.stash[_LEFT]  # made on the kit's devices and Pes: closing those closed them
        if leaked or left or lost:
            pytest.fail("\n".join([f"DocaLeakError: {request.node.nodeid} ended with DOCA objects still open "
                                   "(strict mode; --doca-no-leak-check turns this check off):",
                                   *describe_leaks(leaked, lost),
                                   *(f"  {r} (made on a device or Pe of the kit's fixtures, which closed it with "
                                     f"them)" for r in left)]), pytrace=False)


@pytest.fixture
def doca_version(doca_knobs: Knobs) -> str:
    """The DOCA version this test runs under (``"3.2"`` …): a parameter of tests marked
    ``doca_versions``, else the session's version."""
    return doca_knobs.version or _DEFAULT_VERSION


class DevFactory:
    """``doca_dev_factory(side="dpu")``: open one more emulated device; closed after the test.

    ``side="dpu"`` is the DPU's device (its representor list holds the host PF), ``"host"`` the
    host's view of the BlueField PF. ``rep(dev)`` opens the DPU's representor of the host PF.
    """

    def __init__(self, left: list[str] | None = None) -> None:
        self._opened: list[Any] = []
        self._left = left  # where close() lists what is still open on its devices
    def __call__(self, side: str = "dpu") -> Any:
        if side not in ("dpu", "host"):
            raise ValueError(f"side must be 'dpu' or 'host', not {side!r}")
        from .pair import open_side

        dev, rep = open_side(side)
        self._opened += [o for o in (rep, dev) if o is not None]
        if rep is not None:
            rep.close()
            self._opened.remove(rep)
        return dev

    def rep(self, dev: Any) -> Any:
        """The representor of the host PF on DPU device *dev*."""
        from doca_py import DevinfoRepFilter

        r = dev.open_rep_by_pci_addr(dev.rep_create_list(DevinfoRepFilter.NET)[0].get_pci_addr_str())
        self._opened.append(r)
        return r

    def close(self) -> None:
        """Close every device and representor it opened (after the test); what the test made on them and
        left open goes to the leak check first (closing a device closes it silently)."""
        if self._left is not None:
            from .leaks import open_descendants

            self._left += open_descendants(list(self._opened), list(self._opened))
        while self._opened:
            self._opened.pop().close()


class PeFactory:
    """``doca_pe_factory()``: one more ``doca_py.Pe``; closed after the test."""

    def __init__(self, left: list[str] | None = None) -> None:
        self._made: list[Any] = []
        self._left = left  # where close() lists the ctxs still open on its Pes
    def __call__(self) -> Any:
        import doca_py

        pe = doca_py.Pe()
        self._made.append(pe)
        return pe

    def close(self) -> None:
        """Close every Pe it made (after the test); the ctxs the test left on them go to the leak check
        first (closing a Pe closes its ctxs silently)."""
        if self._left is not None:
            from .leaks import open_descendants

            self._left += open_descendants(list(self._made), list(self._made))
        while self._made:
            self._made.pop().close()


@pytest.fixture
def doca_dev_factory(request: pytest.FixtureRequest, doca_knobs: Knobs) -> Iterator[DevFactory]:
    """A ``DevFactory``: ``doca_dev_factory(side="host")`` opens more emulated devices."""
    f = DevFactory(request.node.stash.get(_LEFT, None))
    yield f
    f.close()


@pytest.fixture
def doca_pe_factory(request: pytest.FixtureRequest, doca_knobs: Knobs) -> Iterator[PeFactory]:
    """A ``PeFactory``: ``doca_pe_factory()`` makes more progress engines."""
    f = PeFactory(request.node.stash.get(_LEFT, None))
    yield f
    f.close()


@pytest.fixture
def doca_dev(doca_dev_factory: DevFactory) -> Any:
    """An open emulated device, the DPU side (``doca_dev_factory(side="host")`` for the host's)."""
    return doca_dev_factory("dpu")


@pytest.fixture
def doca_pe(doca_pe_factory: PeFactory) -> Any:
    """A ``doca_py.Pe`` (progress engine), closed after the test."""
    return doca_pe_factory()


@pytest.fixture
def doca_pair(request: pytest.FixtureRequest, doca_knobs: Knobs) -> DocaPair:
    """A ``doca_py.testing.DocaPair``: ``host_result, dpu_result = doca_pair.run(host_fn, dpu_fn,
    timeout=60, args=...)`` runs each function in its own process with its own emulated side,
    under this test's knobs."""
    from .pair import DocaPair

    pair = DocaPair(doca_knobs)
    pair.replay = _replay(request.node, doca_knobs)
    pair.name = request.node.nodeid
    pair.leak_check = request.config.stash[_STATE].leak_check
    level = request.config.getoption("log_level", None) or request.config.getini("log_level")
    if level:  # pytest's --log-level (or log_level ini): the sides' logging follows it
        pair.log_level = int(level) if str(level).isdigit() else str(level)
    request.node.stash[_PAIR] = pair
    return pair


# -- reports and traces ----------------------------------------------------------------------------
def _replay(item: pytest.Item, knobs: Knobs) -> str:
    """The command that replays *item* from any directory: ``cd`` into the rootdir (node ids are relative
    to it), then the session's knobs that differ from the defaults (what its markers set, its node id
    sets)."""
    state = item.config.stash.get(_STATE, None)
    session = state.knobs if state is not None else knobs
    return session.replace(seed=knobs.seed).replay(item.nodeid, rootdir=item.config.rootpath)


def _kit_knobs(item: pytest.Item) -> Knobs | None:
    knobs = item.stash.get(_USED, None)
    if knobs is None:
        state = item.config.stash.get(_STATE, None)
        if state is not None and state.everywhere:
            return state.knobs
    return knobs


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if not report.failed:
        return report
    knobs = _kit_knobs(item)
    if knobs is None:
        return report
    state = item.config.stash.get(_STATE, None)
    cache = getattr(item.config, "cache", None)
    if cache is not None:  # --doca-seed=last replays it: the session's knobs (markers set theirs again)
        session = state.knobs if state is not None else knobs
        cache.set(_LAST, {**dataclasses.asdict(session.replace(seed=knobs.seed)), "nodeid": item.nodeid})
    _summary_names_the_side(report, call)
    lines = [f"knobs: {knobs.describe()}", f"replay with: {_replay(item, knobs)}"]
    if state is not None and state.native and knobs.impl == "native":
        lines.append(f"native sides: {state.native}")
    if state is not None and state.trace_dir and _USED in item.stash:  # written at the test's teardown
        lines.append(f"trace: {Path(state.trace_dir) / _trace_name(item.nodeid)} (open it in ui.perfetto.dev)")
    if item.stash.get(_USED, None) is not None:
        from ..emulated import trace

        found = trace.findings()
        lines.append("strict-mode findings (test process): " + ("\n  " + "\n  ".join(found) if found else "none"))
        raised = trace.raised_in_callbacks()
        if raised:
            lines.append("exceptions raised by callbacks inside progress() (test process):\n"
                         + "\n".join(text.rstrip() for _, text in raised))
        if trace.events():
            lines.append("last task events (test process):\n" + trace.format_tail())
    pair = item.stash.get(_PAIR, None)
    if pair is not None and any(r.status != "ok" for r in pair.reports):
        lines.append("the sides' tracebacks, logs and task events: in the doca_pair error above")
    report.sections.append(("doca_py", "\n".join(lines)))
    return report


def _summary_names_the_side(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """pytest's summary line of a ``PairError`` starts with the side and its exception (the class's dotted
    name would take the room a terminal of 80 columns has after the test's id), and is one line (on CI
    pytest prints the whole message there)."""
    from .report import PairError

    crash = getattr(report.longrepr, "reprcrash", None)
    if call.excinfo is None or not isinstance(call.excinfo.value, PairError) or crash is None:
        return
    prefix = f"{PairError.__module__}.{PairError.__qualname__}: "
    if isinstance(crash.message, str) and crash.message.startswith(prefix):
        crash.message = crash.message[len(prefix):].split("\n", 1)[0]  # the rest is in the error above


def _trace_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:200] + ".json"


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    state = item.config.stash.get(_STATE, None)
    if state is None or not state.trace_dir or _USED not in item.stash:
        return
    from ..emulated import trace

    events = trace.chrome(label=f"test process (pid {os.getpid()})")
    pair = item.stash.get(_PAIR, None)
    if pair is not None:
        events += pair.trace_events(process=False)  # the kit's track, then the sides
    trace.write_chrome(Path(state.trace_dir) / _trace_name(item.nodeid), events)


def pytest_unconfigure(config: pytest.Config) -> None:
    # The warm sides' zygote lives as long as the session (each xdist worker has its own).
    warm = sys.modules.get("doca_py.testing.warm")
    if warm is not None:
        warm.stop()


def pytest_collection_finish(session: pytest.Session) -> None:
    # Start the warm sides' zygote now if a test will use it: it imports while pytest gets ready.
    if session.config.option.collectonly:
        return
    if any("doca_pair" in getattr(item, "fixturenames", ()) for item in session.items):
        from . import warm

        warm.start(native=session.config.stash[_STATE].knobs.impl == "native")
