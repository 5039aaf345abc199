"""End-to-end throughput of the storage topology, with the CPU each process spends.

    .venv/bin/python benchmarks/e2e/run.py                      # every scenario
    .venv/bin/python benchmarks/e2e/run.py --scenario read-4k --operations 40000
    .venv/bin/python benchmarks/e2e/run.py --scenario read-4k --profile bridge --profile data_1

Each scenario starts the five processes as ``python -m apps.topology`` does (its own functions:
three ``apps.storage_target``, ``apps.gga_offload``, ``apps.initiator``; emulated backend), runs
one initiator test and reads the initiator's §7.3 stats block. The CPU time (utime + stime, all
threads, from ``/proc/<pid>/stat``) of every process is sampled when the initiator logs "data
path ready" and again when it prints its stats, so start-up and teardown are left out.

``--profile NAME`` runs that process (``data_1``, ``data_2``, ``data_p``, ``bridge``,
``initiator``) under cProfile (every thread, see ``profiled.py``) and prints its top functions;
throughput figures of a profiled run are not representative.

The plain read scenarios (read-4k, read-64k) are also run, right after each topology run and with the
same CPU pins, through ``ceiling.py``: a hand-written five-process Python pipeline doing the same
per-IO work without doca_py. Its IO/s and CPU per IO are the anchor the topology is compared with
(topology ÷ ceiling). ``--layout one-core|bridge-own-core|both`` picks the CPU layouts (default: the
``--pin`` ones, i.e. everything on cpu 0); ``--no-ceiling`` skips the anchor.

    .venv/bin/python benchmarks/e2e/run.py --scenario read-4k --scenario read-64k --layout both --repeat 3 --pick median

``--bridge zero-copy`` measures the zero-copy bridge instead (``apps.zero_copy`` in front of one
``apps.storage_target`` serving the plain data, which it reads and writes in the initiator's memory
through the bridge's re-export; no compression, no erasure coding); ``--bridge both`` runs every
scenario with each bridge, the two back to back per repeat, and adds the zero-copy ÷ GGA tables.
Recovery and degraded scenarios exist only for the GGA bridge.

    .venv/bin/python benchmarks/e2e/run.py --bridge both --scenario read-4k --scenario read-64k \
        --scenario write-4k --scenario write-64k --repeat 3 --pick median --no-ceiling

``--path native`` runs the processes through the native backend over ``libdoca`` (DOCA's C libraries
served by the emulator, built on first use) and splits each process's CPU in two: what libdoca's
emulator spends (time inside its slot functions, from its CPU ledger, plus the threads that never
call into libdoca: the emulator's I/O and engine threads) and what doca_py's native layer and the
app spend — the Python a BlueField's cores would run. ``--path both`` runs each scenario on the
emulated backend and then natively, back to back, and prints the two side by side.

    .venv/bin/python benchmarks/e2e/run.py --scenario read-4k --scenario read-64k --path both --no-ceiling
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from apps.topology import Proc, Test, Topology, environment, prepare, start  # noqa: E402
from benchmarks.e2e.ceiling import LAYOUTS, CeilingResult  # noqa: E402

CEILING = Path(__file__).resolve().with_name("ceiling.py")

PROCS = ("data_1", "data_2", "data_p", "bridge", "initiator")
ZC_PROCS = ("storage", "bridge", "initiator")  # the zero-copy topology: one target
BRIDGES = ("gga-offload", "zero-copy")
PROCS_OF = {"gga-offload": PROCS, "zero-copy": ZC_PROCS}
_SPAWN_NAMES = {"target-data_1": "data_1", "target-data_2": "data_2", "target-data_p": "data_p",
                "gga_offload": "bridge", "initiator": "initiator", "target": "storage", "zero_copy": "bridge"}
_TICK = os.sysconf("SC_CLK_TCK")
GIB = 1 << 30
_R = TypeVar("_R")


@dataclass(frozen=True)
class Scenario:
    """One initiator test and its goal."""

    key: str
    title: str
    block_size: int
    strategy: str
    recovery_every_n: int = 0
    goal_iops: float | None = None
    goal_gibs: float | None = None
    baseline: str | None = None       # cost relative to this scenario's IO time
    goal_cost_ratio: float | None = None
    ceiling: bool = False             # also run ceiling.py (plain reads only)
    kill: str | None = None           # SIGKILL this target when the data path starts (degraded reads)
    bridges: tuple[str, ...] = BRIDGES  # the bridges it means something for


SCENARIOS = {s.key: s for s in (
    Scenario("read-4k", "read 4 KiB", 4096, "read_throughput_test", goal_iops=50_000, ceiling=True),
    Scenario("read-4k-recovery", "read 4 KiB, recovery every 2nd", 4096, "read_throughput_test", 2,
             baseline="read-4k", goal_cost_ratio=1.3, bridges=("gga-offload",)),
    Scenario("read-4k-degraded", "read 4 KiB, data_1 killed (degraded)", 4096, "read_throughput_test",
             baseline="read-4k", kill="data_1", bridges=("gga-offload",)),
    Scenario("read-64k", "read 64 KiB", 65536, "read_throughput_test", goal_gibs=1.5, ceiling=True),
    Scenario("read-64k-recovery", "read 64 KiB, recovery every 2nd", 65536, "read_throughput_test", 2,
             baseline="read-64k", goal_cost_ratio=1.3, bridges=("gga-offload",)),
    Scenario("write-4k", "write 4 KiB", 4096, "write_throughput_test"),
    Scenario("write-64k", "write 64 KiB", 65536, "write_throughput_test", goal_gibs=0.5),
)}


@dataclass
class Result:
    """What one scenario measured."""

    scenario: Scenario
    duration_s: float
    operations: int
    window_s: float
    cpu_s: dict[str, float]      # user + system
    sys_s: dict[str, float]      # system
    machine_busy: float          # fraction of all CPUs busy during the window
    latency_mean_us: int
    pe_hit_rate: str
    profiles: dict[str, Path] = field(default_factory=dict)
    bridge: str = "gga-offload"
    path: str = "emulated"
    #: Native path: per process, (CPU s of libdoca's emulator, CPU s of doca_py's native layer + the app).
    split: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def procs(self) -> tuple[str, ...]:
        return PROCS_OF[self.bridge]

    def cpu_us_per_io(self, name: str) -> float:
        """µs of CPU per IO of process *name* ("all": the sum; "targets": every target)."""
        if name == "all":
            keys: Sequence[str] = self.procs
        elif name == "targets":
            keys = [k for k in self.procs if k not in ("bridge", "initiator")]
        else:
            keys = [name]
        return sum(self.cpu_s[k] for k in keys) / self.operations * 1e6

    @property
    def iops(self) -> float:
        return self.operations / self.duration_s

    @property
    def gibs(self) -> float:
        return self.iops * self.scenario.block_size / GIB


def proc_cpu_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of every thread of *pid*, in seconds ((0, 0) once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except FileNotFoundError:
        return 0.0, 0.0
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK


def ledger_sample(pid: int, ledger_dir: Path) -> tuple[float, float, int]:
    """(CPU s inside libdoca's slot functions, CPU s of the threads that call into libdoca, calls into libdoca)
    of *pid*, from its CPU ledger (``doca_py.libdoca.serve._core.CpuLedger``) and ``/proc/<pid>/task/<tid>/stat``."""
    try:
        raw = (ledger_dir / str(pid)).read_bytes()
    except FileNotFoundError:
        return 0.0, 0.0, 0
    cells = memoryview(raw).cast("Q")
    slot_ns, threads, calls = 0, 0.0, 0
    for i in range(0, len(cells), 3):
        tid, ns = cells[i], cells[i + 1]
        if not tid:
            continue
        slot_ns += ns
        calls += cells[i + 2]
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        threads += (int(fields[11]) + int(fields[12])) / _TICK
    return slot_ns / 1e9, threads, calls


def crossing_seconds(ledger_dir: Path, n: int = 200_000) -> float:
    """CPU s one call into libdoca costs outside its slot function — C into Python (the ctypes callback: the
    GIL, the arguments) and back — over a plain ctypes call of a C function, measured in this process: the
    split charges it to the emulator (a real DOCA's call is a C call)."""
    import ctypes

    from doca_py import libdoca
    from doca_py.libdoca.serve import _core

    if _crossing:
        return _crossing[0]
    ledger_dir.mkdir(parents=True, exist_ok=True)
    os.environ["DOCA_PY_LIBDOCA_CPU"] = str(ledger_dir)
    try:
        common = ctypes.CDLL(str(libdoca.cached() / "libdoca_common.so.3"))
        fn = common.doca_error_get_name
        fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_int]
        fn(0)  # attach (with the ledger on, as in the measured processes)
        plain = ctypes.CDLL(None).labs
        plain.restype, plain.argtypes = ctypes.c_long, [ctypes.c_long]
        ledger = _core.ledger()
        assert ledger is not None
        before = ledger_sample(os.getpid(), ledger_dir)[0]
        t0 = time.thread_time()
        for _ in range(n):
            fn(0)
        t1 = time.thread_time()
        inside = ledger_sample(os.getpid(), ledger_dir)[0] - before
        for _ in range(n):
            plain(0)
        t2 = time.thread_time()
    finally:
        os.environ.pop("DOCA_PY_LIBDOCA_CPU", None)
    _crossing.append(max(0.0, ((t1 - t0) - inside - (t2 - t1)) / n))
    return _crossing[0]


_crossing: list[float] = []  # measured once per run


def native_env(env: dict[str, str], ledger_dir: Path) -> dict[str, str]:
    """*env* for the native path over libdoca (built on first use), with the CPU ledger on."""
    from doca_py import libdoca

    ledger_dir.mkdir(parents=True, exist_ok=True)
    return dict(env, DOCA_PY_IMPL="native", DOCA_PY_LIBDIR=str(libdoca.cached()), DOCA_PY_LIBDOCA_CPU=str(ledger_dir))


def machine_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


class BenchTopology(Topology):
    """``apps.topology``'s process set with per-process CPU pins, optional profiling and extra
    initiator flags."""

    def __init__(self, workdir: Path, env: dict[str, str], pins: dict[str, int], profile: set[str],
                 profile_dir: Path, switch_interval: float | None = None,
                 initiator_args: Sequence[str] = ()) -> None:
        super().__init__(workdir, env)
        self.switch_interval = switch_interval
        self.initiator_args = tuple(initiator_args)
        self.pins = pins
        self.profile = profile
        self.profile_dir = profile_dir
        self.profiles: dict[str, Path] = {}
        self.by_name: dict[str, Proc] = {}

    def spawn(self, name: str, module: str, args: Sequence[str], marker: str | None = None,
              **kwargs: Any) -> Proc:
        short = _SPAWN_NAMES.get(name, name)
        args = list(args)
        if short in self.pins:
            i = args.index("--cpu")
            args[i + 1] = str(self.pins[short])
        if short == "initiator":
            args += self.initiator_args  # the app's own flags, before any wrapper below takes them over
        if self.switch_interval is not None and short in _SPAWN_NAMES.values():
            args = [str(self.switch_interval), module, *args]
            module = "benchmarks.e2e.switch"
        if short in self.profile:
            out = self.profile_dir / f"{short}.prof"
            out.unlink(missing_ok=True)
            self.profiles[short] = out
            args = [str(out), module, *args]
            module = "benchmarks.e2e.profiled"
            # Merging and writing a profile of every thread can take longer than a plain exit, more so on a
            # busy machine: a kill then would lose it.
            kwargs["stop_grace"] = 120.0
        proc = super().spawn(name, module, args, marker, **kwargs)
        self.by_name[short] = proc
        return proc


def _wait_line(proc: Proc, pred: re.Pattern[str], deadline: float, start: int = 0) -> int | None:
    """Index of the first line of *proc* from *start* matching *pred* (None if it exited or timed out)."""
    i = start
    while time.monotonic() < deadline:
        lines = proc.lines
        while i < len(lines):
            if pred.search(lines[i]):
                return i
            i += 1
        if proc.popen.poll() is not None and i >= len(proc.lines):
            if proc._pump is not None:
                proc._pump.join(1)
            if i >= len(proc.lines):
                return None
            continue
        time.sleep(0.005)
    return None


_READY = re.compile(r"data path ready")
_BRIDGE_RUNNING = re.compile(r"data path started")
_STATS = re.compile(r"^\| Stats")


def _stat(lines: list[str], label: str) -> str:
    for line in lines:
        if line.startswith(f"| {label}"):
            return line.split(":", 1)[1].strip()
    raise RuntimeError(f"no '{label}' in the initiator's report")


def run_scenario(sc: Scenario, ops: int, files: dict[str, Path], plain: Path, workdir: Path, env: dict[str, str],
                 pins: dict[str, int], profile: set[str], timeout: float,
                 switch_interval: float | None = None, bridge_kind: str = "gga-offload",
                 initiator_args: Sequence[str] = (), bridge_args: Sequence[str] = (),
                 target_args: dict[str, tuple[str, ...]] | None = None, cpus: Sequence[int] = (0,)) -> Result:
    """Run *sc* once on a fresh topology and measure it; *initiator_args* are appended to the
    initiator's command line (e.g. ``("--transaction-count", "64")``), *bridge_args* to the
    bridge's, ``target_args[role]`` to that target's. *cpus*: every process's ``--cpu`` list, one
    worker per entry (``--pin`` moves the first)."""
    test = Test(sc.key, sc.strategy, ops, sc.recovery_every_n, bridge_args=tuple(bridge_args),
                target_args=dict(target_args or {}))
    targs = argparse.Namespace(cpu=list(cpus), matrix_type="vandermonde", block_size=sc.block_size, blocks_per_io=1,
                               bridge=bridge_kind)
    procs_of = PROCS_OF[bridge_kind]
    pins = pins_for(bridge_kind, pins)
    topo = BenchTopology(workdir, env, pins, profile, workdir, switch_interval, initiator_args)
    try:
        _targets, bridge, initiator = start(topo, test, targs, files, plain)
        procs = topo.by_name
        deadline = time.monotonic() + timeout
        ready = _wait_line(initiator, _READY, deadline)
        if ready is None:
            raise RuntimeError(f"the initiator did not start its data path\n{initiator.tail()}\n{bridge.tail()}")
        ledger = Path(env["DOCA_PY_LIBDOCA_CPU"]) if env.get("DOCA_PY_IMPL") == "native" and env.get(
            "DOCA_PY_LIBDOCA_CPU") else None
        cpu0 = {k: proc_cpu_seconds(p.popen.pid) for k, p in procs.items()}
        led0 = {k: ledger_sample(p.popen.pid, ledger) for k, p in procs.items()} if ledger else {}
        m0, t0 = machine_cpu(), time.monotonic()
        if sc.kill is not None:  # every measured read is served by the two survivors
            if _wait_line(bridge, _BRIDGE_RUNNING, deadline) is None:
                raise RuntimeError(f"the bridge did not start its data path\n{bridge.tail()}")
            procs[sc.kill].popen.kill()
        done = _wait_line(initiator, _STATS, deadline, ready)
        if done is None:
            raise RuntimeError(f"the initiator did not report\n{initiator.tail()}\n{bridge.tail()}")
        cpu1 = {k: proc_cpu_seconds(p.popen.pid) for k, p in procs.items()}
        led1 = {k: ledger_sample(p.popen.pid, ledger) for k, p in procs.items()} if ledger else {}
        m1, t1 = machine_cpu(), time.monotonic()
        rc = initiator.popen.wait(max(1.0, deadline - time.monotonic()))
        if initiator._pump is not None:
            initiator._pump.join(5)
        if rc != 0:
            raise RuntimeError(f"initiator exit status {rc}\n{initiator.tail(30)}\n{bridge.tail()}")
        lines = initiator.lines
        duration = float(_stat(lines, "Duration (seconds)"))
        count = int(_stat(lines, "Operation count"))
        mean = int(_stat(lines, "\tMean").rstrip("us")) if any(x.startswith("| \tMean") for x in lines) else 0
        hit = _stat(lines, "PE hit rate")
    finally:
        topo.close()
    busy = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
    cpu = {k: sum(cpu1[k]) - sum(cpu0[k]) for k in procs_of}
    split: dict[str, tuple[float, float]] = {}
    cross = crossing_seconds(ledger / "self") if led1 and ledger else 0.0
    for k in (procs_of if led1 else ()):
        slot, callers, calls = (led1[k][i] - led0[k][i] for i in range(3))
        # The callers' CPU outside libdoca, less each call's crossing into the emulator: doca_py/native and the app.
        # The ledger's and /proc's clocks are read moments apart: for a process that was nearly idle (data_p in a
        # read run) the estimate can exceed the process's whole CPU, which would make libdoca's share negative.
        app = min(cpu[k], max(0.0, callers - slot - calls * cross))
        split[k] = (cpu[k] - app, app)
    return Result(sc, duration, count, t1 - t0, cpu, {k: cpu1[k][1] - cpu0[k][1] for k in procs_of}, busy, mean,
                  hit, dict(topo.profiles), bridge_kind, "native" if ledger else "emulated", split)


def path_tables(emulated: dict[str, Result], native: dict[str, Result]) -> str:
    """The emulated and the native path side by side, and the native path's CPU split per process."""
    out = ["| scenario | emulated IO/s | native IO/s | native ÷ emulated | µs CPU per IO, all: emulated | native "
           "| of it libdoca's emulator | of it doca_py native + app |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, n in native.items():
        e = emulated.get(key)
        emu_all = sum(n.split[k][0] for k in n.split) / n.operations * 1e6
        app_all = sum(n.split[k][1] for k in n.split) / n.operations * 1e6
        out.append(f"| {n.scenario.title} | {_fmt_int(e.iops) if e else '-'} | {_fmt_int(n.iops)} | "
                   f"{n.iops / e.iops:.2f} | " if e else f"| {n.scenario.title} | - | {_fmt_int(n.iops)} | - | ")
        out[-1] += (f"{e.cpu_us_per_io('all'):.0f} | " if e else "- | ") + (
            f"{n.cpu_us_per_io('all'):.0f} | {emu_all:.0f} | {app_all:.0f} |")
    procs = next(iter(native.values())).procs if native else PROCS
    out += ["", "Native path, µs CPU per IO of doca_py's native layer + the app (what a BlueField's cores run) / of "
                "libdoca's emulator, per process:", "",
            "| scenario | " + " | ".join(procs) + " |", "|---|" + "---:|" * len(procs)]
    for n in native.values():
        out.append(f"| {n.scenario.title} | " + " | ".join(
            f"{n.split[k][1] / n.operations * 1e6:.0f} / {n.split[k][0] / n.operations * 1e6:.0f}" for k in procs) + " |")
    return "\n".join(out)


def pins_for(bridge_kind: str, pins: dict[str, int]) -> dict[str, int]:
    """*pins* (named as the GGA topology's processes) for *bridge_kind*'s processes: the zero-copy
    topology's one target ("storage") goes where data_1 goes unless pinned itself."""
    if bridge_kind != "zero-copy":
        return pins
    out = {k: v for k, v in pins.items() if k in ZC_PROCS}
    if "storage" not in out and "data_1" in pins:
        out["storage"] = pins["data_1"]
    return out


def _fmt_int(x: float) -> str:
    return f"{x:,.0f}".replace(",", " ")


def goal_text(r: Result, results: dict[str, Result]) -> tuple[str, str]:
    """(goal, measured / goal) of *r*."""
    sc = r.scenario
    if sc.goal_iops is not None:
        return f"≥ {_fmt_int(sc.goal_iops)} IO/s", f"{r.iops / sc.goal_iops:.2f}"
    if sc.goal_gibs is not None:
        return f"≥ {sc.goal_gibs} GiB/s", f"{r.gibs / sc.goal_gibs:.2f}"
    if sc.baseline is not None:
        goal = f"cost ≤ {sc.goal_cost_ratio}× plain" if sc.goal_cost_ratio is not None else "(cost vs plain)"
        base = results.get(sc.baseline)
        if base is None:
            return goal, "–"
        return goal, f"cost {base.iops / r.iops:.2f}×"
    return "–", "–"


def tables(results: dict[str, Result]) -> str:
    """The IO/s and CPU tables of *results* (runs of one bridge)."""
    procs = next(iter(results.values())).procs if results else PROCS
    out = ["| scenario | IO/s | GiB/s | mean latency µs | goal | measured vs goal |",
           "|---|---:|---:|---:|---|---:|"]
    for r in results.values():
        goal, ratio = goal_text(r, results)
        out.append(f"| {r.scenario.title} | {_fmt_int(r.iops)} | {r.gibs:.3f} | {_fmt_int(r.latency_mean_us)} | "
                   f"{goal} | {ratio} |")
    out += ["", "CPU during the measured run (all threads; the machine has "
                f"{os.cpu_count()} CPUs):", "",
            "| scenario | run s | machine busy | CPU s: " + " | ".join(procs) + " | µs CPU per IO: "
            + " | ".join(procs) + " | µs CPU per IO, all | of it in the kernel |",
            "|---|---:|---:|" + "---:|" * (2 * len(procs) + 2)]
    for r in results.values():
        per_io = [r.cpu_s[k] / r.operations * 1e6 for k in procs]
        out.append(f"| {r.scenario.title} | {r.window_s:.2f} | {r.machine_busy:.0%} | "
                   + " | ".join(f"{r.cpu_s[k]:.2f}" for k in procs) + " | "
                   + " | ".join(f"{x:.0f}" for x in per_io) + f" | {sum(per_io):.0f} | "
                   f"{sum(r.sys_s.values()) / max(1e-9, sum(r.cpu_s.values())):.0%} |")
    return "\n".join(out)


def run_ceiling(block_size: int, ops: int, block_count: int, pins: dict[str, int], layout: str,
                timeout: float) -> CeilingResult:
    """One run of ``ceiling.py`` (its own processes) with these CPU pins."""
    cmd = [sys.executable, str(CEILING), "--block-size", str(block_size), "--operations", str(ops),
           "--block-count", str(block_count), "--in-flight", "64", "--layout", "one-core",
           "--timeout", str(timeout), "--json"]
    for name in PROCS:
        cmd += ["--pin", f"{name}={pins.get(name, 0)}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"ceiling.py exit status {done.returncode}, no result\n{done.stderr}")
    data = json.loads(lines[-1])
    data["layout"] = layout
    r = CeilingResult(**data)
    if done.returncode != 0 or not r.ok:
        raise RuntimeError(f"ceiling.py failed (status {done.returncode}): {r.problem or done.stderr}")
    return r


def _times(x: float) -> str:
    return f"{x:.0f}×" if x >= 10 else f"{x:.1f}×"


def anchor_tables(results: dict[str, Result], ceilings: dict[str, CeilingResult]) -> str:
    """The topology against the hand-written pipeline (``ceiling.py``) of the same run."""
    out = ["| scenario | topology IO/s | ceiling IO/s | IO/s topology ÷ ceiling | µs CPU per IO, all: topology "
           "| ceiling | CPU topology ÷ ceiling | mean latency µs: topology | ceiling |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, c in ceilings.items():
        r = results[key]
        cpu = sum(r.cpu_s.values()) / r.operations * 1e6
        out.append(f"| {r.scenario.title} | {_fmt_int(r.iops)} | {_fmt_int(c.iops)} | {r.iops / c.iops:.3f} | "
                   f"{cpu:.0f} | {c.cpu_us_per_io_all:.1f} | {_times(cpu / c.cpu_us_per_io_all)} | "
                   f"{_fmt_int(r.latency_mean_us)} | {_fmt_int(c.latency_mean_us)} |")
    out += ["", "µs CPU per IO of each process, topology / ceiling (ratio):", "",
            "| scenario | " + " | ".join(PROCS) + " | all |", "|---|" + "---:|" * (len(PROCS) + 1)]
    for key, c in ceilings.items():
        r = results[key]
        cells = []
        for k in (*PROCS, "all"):
            t = (sum(r.cpu_s.values()) if k == "all" else r.cpu_s[k]) / r.operations * 1e6
            a = c.cpu_us_per_io_all if k == "all" else c.cpu_us_per_io[k]
            cells.append(f"{t:.0f} / {a:.1f} ({_times(t / a)})" if a > 0 else f"{t:.0f} / {a:.1f}")
        out.append(f"| {r.scenario.title} | " + " | ".join(cells) + " |")
    return "\n".join(out)


_BRIDGE_TITLE = {"gga-offload": "GGA", "zero-copy": "zero-copy"}
_CMP_PROCS = ("initiator", "bridge", "data_1", "data_2", "data_p", "storage")


def bridge_tables(gga: dict[str, Result], zc: dict[str, Result]) -> str:
    """Zero-copy against GGA for the scenarios run with both: IO/s, µs CPU per IO of each process, ratios."""
    keys = [k for k in gga if k in zc]
    out = ["| scenario | bridge | IO/s | GiB/s | mean latency µs | µs CPU per IO: "
           + " | ".join(_CMP_PROCS) + " | all |",
           "|---|---|---:|---:|---:|" + "---:|" * (len(_CMP_PROCS) + 1)]
    for key in keys:
        for r in (gga[key], zc[key]):
            cells = [f"{r.cpu_us_per_io(k):.0f}" if k in r.procs else "–" for k in _CMP_PROCS]
            out.append(f"| {r.scenario.title} | {_BRIDGE_TITLE[r.bridge]} | {_fmt_int(r.iops)} | {r.gibs:.3f} | "
                       f"{_fmt_int(r.latency_mean_us)} | " + " | ".join(cells) + f" | {r.cpu_us_per_io('all'):.0f} |")
    out += ["", "zero-copy ÷ GGA (IO/s: above 1 is faster; CPU per IO: below 1 is cheaper; targets: all of "
                "each bridge's targets together):", "",
            "| scenario | IO/s | µs CPU per IO: initiator | bridge | targets | all |",
            "|---|---:|---:|---:|---:|---:|"]
    for key in keys:
        g, z = gga[key], zc[key]
        cells = [f"{z.cpu_us_per_io(k) / g.cpu_us_per_io(k):.2f}" if g.cpu_us_per_io(k) > 0 else "–"
                 for k in ("initiator", "bridge", "targets", "all")]
        out.append(f"| {g.scenario.title} | {z.iops / g.iops:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def pick(runs: list[_R], how: str, rate: Callable[[_R], float]) -> _R:
    """The fastest run, or the median one by *rate*."""
    ordered = sorted(runs, key=rate)
    return ordered[-1] if how == "fastest" else ordered[len(ordered) // 2]


def profile_summary(name: str, path: Path, top: int) -> str:
    if not path.exists():
        return f"{name}: no profile written ({path})"
    import io
    buf = io.StringIO()
    st = pstats.Stats(str(path), stream=buf)
    st.sort_stats("tottime").print_stats(top)
    return f"--- {name}: top {top} by own time ({path})\n" + buf.getvalue()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks/e2e/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", action="append", choices=tuple(SCENARIOS),
                   help="run only this scenario (repeatable; default: all)")
    p.add_argument("--bridge", choices=(*BRIDGES, "both"), default="gga-offload",
                   help="gga-offload (three targets, compressed and erasure coded; default), zero-copy (one target "
                        "reading and writing the initiator's memory), or both, back to back per repeat, with the "
                        "zero-copy ÷ GGA tables; a scenario runs only with the bridges it exists for")
    p.add_argument("--operations", type=int, default=20_000, help="initiator transactions per run (default: 20000)")
    p.add_argument("--block-count", type=int, default=64, help="storage blocks of the sample (default: 64)")
    p.add_argument("--pin", action="append", default=[], metavar="PROC=CPU",
                   help="pin PROC's worker (data_1, data_2, data_p, storage: the zero-copy target, else where "
                        "data_1 is; targets: all of them; bridge, initiator) to CPU instead of apps.topology's cpu 0 "
                        "(repeatable)")
    p.add_argument("--switch-interval", type=float, metavar="SECONDS",
                   help="run every process with this GIL switch interval (sys.setswitchinterval; default 5 ms)")
    p.add_argument("--layout", choices=(*LAYOUTS, "both"),
                   help="CPU layout: one-core (every worker on cpu 0), bridge-own-core (the bridge's worker on "
                        "cpu 1), or both one after the other; --pin applies on top (default: the --pin ones)")
    p.add_argument("--path", choices=("emulated", "native", "both"), default="emulated",
                   help="the backend the processes run on: emulated (default), native (over libdoca, with the CPU "
                        "split between libdoca's emulator and doca_py's native layer + app), or both, back to back")
    p.add_argument("--repeat", type=int, default=1, help="runs per scenario (default: 1)")
    p.add_argument("--retries", type=int, default=0,
                   help="run a topology run that failed again, up to this many times (default: 0)")
    p.add_argument("--pick", choices=("fastest", "median"), default="fastest",
                   help="which of the --repeat runs is reported, by IO/s (default: fastest)")
    p.add_argument("--no-ceiling", dest="ceiling", action="store_false",
                   help="do not run ceiling.py (the hand-written anchor) after the plain read scenarios")
    p.add_argument("--ceiling-operations", type=int, default=100_000,
                   help="IOs per ceiling.py run (default: 100000, a few seconds)")
    p.add_argument("--profile", action="append", default=[], choices=(*PROCS, "storage"),
                   help="run this process under cProfile and print its top functions (repeatable)")
    p.add_argument("--top", type=int, default=30, help="functions shown per profile (default: 30)")
    p.add_argument("--workdir", type=Path, help="keep files, logs and profiles here (default: a temporary directory)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per run (default: 300)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    extra: dict[str, int] = {}
    for spec in args.pin:
        name, _, cpu = spec.partition("=")
        for n in (("data_1", "data_2", "data_p", "storage") if name == "targets" else (name,)):
            if n not in (*PROCS, "storage"):
                print(f"--pin: unknown process {n!r}", file=sys.stderr)
                return 2
            extra[n] = int(cpu)
    layouts: list[tuple[str, dict[str, int]]]
    if args.layout is None:
        full = {p: extra.get(p, 0) for p in PROCS}  # "storage" follows data_1 (pins_for)
        layouts = [(next((n for n, v in LAYOUTS.items() if v == full), "pinned"), extra)]
    else:
        names = list(LAYOUTS) if args.layout == "both" else [args.layout]
        layouts = [(n, {**LAYOUTS[n], **extra}) for n in names]
    env = environment()
    env["DOCA_PY_STRICT"] = os.environ.get("DOCA_PY_STRICT", "0")  # measure the data path, not the sanitizer
    env["DOCA_PY_IMPL"] = "emulated"
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="doca_py_e2e_")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    paths = ["emulated", "native"] if args.path == "both" else [args.path]
    envs = {"emulated": env}
    if "native" in paths:
        envs["native"] = native_env(env, workdir / "ledger")
    keys = args.scenario or list(SCENARIOS)
    bridges = list(BRIDGES) if args.bridge == "both" else [args.bridge]
    skipped = [k for k in keys if not set(bridges) & set(SCENARIOS[k].bridges)]
    if skipped:
        print(f"not run (no such scenario with the {' or '.join(bridges)} bridge): {', '.join(skipped)}", flush=True)
    keys = [k for k in keys if k not in skipped]
    if not keys:
        print("no scenario to run", file=sys.stderr)
        return 2
    try:
        prepared: dict[tuple[str, int], tuple[Path, dict[str, Path]]] = {}
        for layout, pins in layouts:
            by_path: dict[str, dict[str, dict[str, Result]]] = {p: {b: {} for b in bridges} for p in paths}
            results = by_path[paths[0]]
            ceilings: dict[str, CeilingResult] = {}
            for key in keys:
                sc = SCENARIOS[key]
                kinds = [b for b in bridges if b in sc.bridges]
                for kind in kinds:
                    if (kind, sc.block_size) not in prepared:
                        d = workdir / f"{kind}-bs{sc.block_size}"
                        d.mkdir(exist_ok=True)
                        ns = argparse.Namespace(input=None, block_size=sc.block_size, block_count=args.block_count,
                                                matrix_type="vandermonde", timeout=args.timeout, bridge=kind)
                        prepared[kind, sc.block_size] = prepare(ns, d, env)
                runs: dict[tuple[str, str], list[Result]] = {(b, p): [] for b in kinds for p in paths}
                cruns: list[CeilingResult] = []
                for i in range(args.repeat):
                    # back to back: the machine's drift hits both bridges (and both paths) alike
                    for kind, path in ((b, p) for b in kinds for p in paths):
                        plain, files = prepared[kind, sc.block_size]
                        tag = f"[{layout}] {sc.title}" + (f", {_BRIDGE_TITLE[kind]}" if len(bridges) > 1 else "") + (
                            f", {path} path" if len(paths) > 1 or path != "emulated" else "")
                        for attempt in range(args.retries + 1):
                            try:
                                r = run_scenario(sc, args.operations, files, plain, plain.parent, envs[path], pins,
                                                 set(args.profile), args.timeout, args.switch_interval, kind)
                                break
                            except RuntimeError as exc:
                                if attempt == args.retries:
                                    raise
                                why = [ln.strip() for ln in str(exc).splitlines() if "failed" in ln] or [str(exc)]
                                print(f"{tag} (run {i + 1}) FAILED, retrying: {why[0]}", flush=True)
                        runs[kind, path].append(r)
                        print(f"{tag} (run {i + 1}): {_fmt_int(r.iops)} IO/s, {r.gibs:.3f} GiB/s, CPU s "
                              + ", ".join(f"{k} {v:.2f}" for k, v in r.cpu_s.items()), flush=True)
                        if args.ceiling and sc.ceiling and kind == "gga-offload" and path == paths[0]:
                            c = run_ceiling(sc.block_size, args.ceiling_operations, args.block_count, pins, layout,
                                            args.timeout)
                            cruns.append(c)
                            print(f"{tag} (run {i + 1}) ceiling: {_fmt_int(c.iops)} IO/s, "
                                  f"{c.gibs:.3f} GiB/s, {c.cpu_us_per_io_all:.1f} µs CPU per IO; topology ÷ "
                                  f"ceiling {r.iops / c.iops:.3f}", flush=True)
                for kind, path in runs:
                    by_path[path][kind][key] = pick(runs[kind, path], args.pick, lambda x: x.iops)
                if cruns:
                    ceilings[key] = pick(cruns, args.pick, lambda x: x.iops)
            print()
            print(f"Layout {layout}: {args.operations} transactions per run, 64 in flight, "
                  f"pins: {', '.join(f'{k}={v}' for k, v in pins.items()) or 'all cpu 0 (as apps.topology)'}"
                  + (f", GIL switch interval {args.switch_interval * 1e3:g} ms" if args.switch_interval else "")
                  + (f"; the {args.pick} of {args.repeat} runs" if args.repeat > 1 else ""))
            for kind in bridges:
                if not results[kind]:
                    continue
                print()
                if len(bridges) > 1:
                    print(f"{_BRIDGE_TITLE[kind]} bridge:")
                    print()
                print(tables(results[kind]))
            if ceilings:
                print()
                print(f"The anchor (ceiling.py, {args.ceiling_operations} IOs per run, same pins, run right after "
                      f"each GGA topology run; {args.pick} of {args.repeat} each):")
                print()
                print(anchor_tables(results["gga-offload"], ceilings))
            if len(bridges) > 1 and any(k in results["zero-copy"] for k in results["gga-offload"]):
                print()
                print("Zero-copy vs GGA bridge (same run, each scenario's runs back to back):")
                print()
                print(bridge_tables(results["gga-offload"], results["zero-copy"]))
            if "native" in paths:
                for kind in bridges:
                    if by_path["native"][kind]:
                        print()
                        print(f"Emulated and native path ({_BRIDGE_TITLE[kind]} bridge, back to back):"
                              if len(paths) > 1 else f"Native path ({_BRIDGE_TITLE[kind]} bridge):")
                        print()
                        print(path_tables(by_path["emulated"][kind] if len(paths) > 1 else {}, by_path["native"][kind]))
            for per_bridge in results.values():
                for r in per_bridge.values():
                    for name, path in r.profiles.items():
                        print()
                        print(profile_summary(f"{r.scenario.key} {r.bridge} {name}", path, args.top))
            print()
        return 0
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
