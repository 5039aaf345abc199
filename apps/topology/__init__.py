"""The whole DOCA storage topology on one machine: ``python -m apps.topology``.

Five kinds of process, started as the real deployment would run them, on the
emulated backend (or, with ``DOCA_PY_IMPL=native``, through the native backend: over
``libdoca``, DOCA's C libraries served by the emulator, when ``DOCA_PY_LIBDIR`` points at one):

* ``apps.sbc_generator`` makes the data_1 / data_2 / data_p ``.sbc`` files from a
  generated sample (or ``--input``);
* three ``apps.storage_target`` processes serve them over RDMA;
* ``apps.gga_offload`` (the BlueField bridge) connects to the targets and serves
  one initiator over comch;
* ``apps.initiator`` runs a test against the bridge.

With ``--bridge zero-copy`` the bridge is ``apps.zero_copy`` instead, in front of **one**
target that serves the plain sample as a raw file (``--block-size`` × its block count;
nothing is compressed or split, so no generator runs); the target reads and writes the
initiator's memory directly through the bridge's re-export.

Each test gets a fresh set of processes (a target serves one session). The default
run is a read-only validity test, a read-write validity test with recovery reads,
and a read throughput test; the exit status is 0 only if every test passed.

Every process runs the emulator in strict mode (``DOCA_PY_STRICT=1`` unless the
environment says otherwise); ``--shuffle``, ``--inject-faults`` and ``--seed`` turn on
the emulator's seeded completion-order shuffling and fault injection in all of them.

Each process's output is printed as it comes, every line prefixed with the process's name
(``initiator     | progress: ...``), and kept in one log file per process; a test ends with
its verdict once every process of the test has ended and its last lines (the statistics
blocks) were printed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from apps.common.cli.usage import UsageParser, command_name

__all__ = ["build_parser", "main", "Test", "DEFAULT_TESTS", "STRATEGIES", "BRIDGES", "make_sample", "environment",
           "prepare", "start", "Topology", "TwoHosts", "Proc", "topology", "echo_line", "NAME_WIDTH"]

HOST_DEV = "0000:3b:00.0"  # the host's view of the BlueField (emulated registry)
DPU_DEV = "0000:03:00.0"  # the BlueField's own device
HOST_PF_REP = "0000:3b:00.0"  # the host PF's representor on the DPU


#: ``--timeout``'s default: seconds allowed per test, and for each process's start.
TEST_TIMEOUT = 120.0
#: Seconds the targets and the bridge get to end by themselves after a test passed.
SETTLE_TIMEOUT = 10.0
#: Width of the process-name column of the lines printed live (``target-data_1`` fits).
NAME_WIDTH = 13
_print_lock = threading.Lock()


def echo_line(name: str, line: str) -> None:
    """Print one line of process *name* now, prefixed with its name (whole lines: one lock for all
    processes' pumps)."""
    with _print_lock:
        sys.stdout.write(f"{name:<{NAME_WIDTH}}| {line}\n")
        sys.stdout.flush()


@dataclass(frozen=True)
class Test:
    """One initiator run and the bridge settings it needs."""

    name: str
    strategy: str
    operations: int
    recovery_every_n: int = 0
    bridge_args: tuple[str, ...] = ()  # extra gga_offload flags (e.g. --target-io-timeout)
    initiator_args: tuple[str, ...] = ()  # extra initiator flags
    target_args: dict[str, tuple[str, ...]] = field(default_factory=dict)  # extra flags per target role


BRIDGES = ("gga-offload", "zero-copy")

STRATEGIES = ("read_only_data_validity_test", "read_write_data_validity_test", "read_throughput_test",
              "write_throughput_test")

DEFAULT_TESTS = (
    Test("read-only validity", "read_only_data_validity_test", 0),
    Test("read-write validity with recovery reads", "read_write_data_validity_test", 0, recovery_every_n=2),
    Test("read throughput", "read_throughput_test", 20_000),
)


def _version() -> str:
    # From the installed metadata, not `import doca_py`: the topology itself picks no backend.
    try:
        version = importlib.metadata.version("doca_py")
    except importlib.metadata.PackageNotFoundError:  # a checkout on PYTHONPATH
        version = "unknown"
    return f"%(prog)s: v{version} (doca_py, {backend_path()} backend)"


def build_parser() -> UsageParser:
    """The command line of ``python -m apps.topology``."""
    p = UsageParser(
        prog="python -m apps.topology",
        description="Run the DOCA storage topology (3 targets, the gga offload bridge, the initiator; or one "
                    "target, the zero-copy bridge, the initiator) as separate processes on this machine with the "
                    "emulated backend (DOCA_PY_IMPL=native: the native one), and report each test.",
    )
    p.add_argument("--version", action="version", version=_version(),
                   help="print the program version and exit")
    p.add_argument("--bridge", choices=BRIDGES, default="gga-offload",
                   help="gga-offload: three targets holding the compressed halves and parity (default); zero-copy: "
                        "one target holding the plain data, which it reads and writes in the initiator's memory")
    p.add_argument("--input", type=Path, help="content to store (default: a generated sample)")
    p.add_argument("--block-size", type=int, default=4096, help="storage block size in bytes (default: 4096)")
    p.add_argument("--block-count", type=int, default=256, help="blocks of generated sample (default: 256)")
    p.add_argument("--matrix-type", choices=("vandermonde", "cauchy"), default="vandermonde",
                   help="erasure-coding matrix (default: vandermonde)")
    p.add_argument("--recovery-every-n", type=int, default=2,
                   help="recovery read every N-th block in the read-write test (default: 2; gga-offload only)")
    p.add_argument("--throughput-operations", type=int, default=20_000,
                   help="operations of the read throughput test (default: 20000)")
    p.add_argument("--cpu", type=int, action="append",
                   help="CPU for each process's worker (repeatable; default: 0, and 1 for the bridge when the "
                        "machine has two)")
    p.add_argument("--strategy", action="append", choices=STRATEGIES,
                   help="run only this initiator execution strategy (repeatable; default: the three tests above)")
    p.add_argument("--blocks-per-io", type=int, default=1, help="storage blocks per initiator IO (default: 1)")
    p.add_argument("--workdir", type=Path, help="keep files and logs here (default: a temporary directory)")
    p.add_argument("--timeout", type=float, default=TEST_TIMEOUT,
                   help=f"seconds allowed per test, and for each process's start (default: {TEST_TIMEOUT:g})")
    p.add_argument("--shuffle", action="store_true",
                   help="deliver task completions in a seeded random order in every process (DOCA_PY_EMU_SHUFFLE)")
    p.add_argument("--inject-faults", metavar="KIND=RATE[:CODE],...",
                   help="fail tasks with the errors hardware reports, at seeded rates (DOCA_PY_EMU_FAULTS; "
                        "e.g. comch_producer_send=0.05)")
    p.add_argument("--seed", type=int, help="seed of --shuffle and --inject-faults (default: random, printed)")
    return p


def make_sample(size: int) -> bytes:
    """Deterministic, compressible, non-repeating text (each line numbered)."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += b"doca_py storage topology sample line %08d: the quick brown fox jumps over block %06d\n" % (
            i, i // 48)
        i += 1
    return bytes(out[:size])


def plain_bytes_blocks(plain: Path, block_size: int) -> range:
    """The block indices of the plain content file."""
    return range(plain.stat().st_size // block_size)


@dataclass
class Proc:
    """A child process whose output goes to a log file (and is watched for a line)."""

    name: str
    popen: subprocess.Popen[str]
    log: Path
    lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)
    _pump: threading.Thread | None = None
    #: Seconds `stop` waits after SIGINT before it kills.
    stop_grace: float = 5.0

    def start_pump(self, log_file: IO[str], marker: str | None, echo: bool = False) -> None:
        """Read the process's output on a thread: each line to the log file, to `lines` and, with
        *echo*, to stdout at once (`echo_line`)."""
        def pump() -> None:
            assert self.popen.stdout is not None
            for line in self.popen.stdout:
                log_file.write(line)
                log_file.flush()
                text = line.rstrip("\n")
                self.lines.append(text)
                if echo:
                    echo_line(self.name, text)
                if marker is not None and marker in line:
                    self._ready.set()
            self._ready.set()  # exited: stop waiting

        self._pump = threading.Thread(target=pump, name=f"log-{self.name}", daemon=True)
        self._pump.start()

    def wait_marker(self, marker: str, timeout: float) -> str:
        if not self._ready.wait(timeout):
            raise RuntimeError(f"{self.name} did not report {marker!r} within {timeout:.0f} s")
        for line in self.lines:
            if marker in line:
                return line
        try:
            rc: int | None = self.popen.wait(5)
        except subprocess.TimeoutExpired:
            rc = None
        raise RuntimeError(f"{self.name} exited (status {rc}) before reporting {marker!r}:\n{self.tail()}")

    def tail(self, n: int = 15) -> str:
        return "\n".join(f"    {self.name}| {line}" for line in self.lines[-n:])

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(self.stop_grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self._pump is not None:
            self._pump.join(5)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


class Topology:
    """Starts and tears down the processes of one test; with *echo*, their lines are printed as they
    come (`echo_line`)."""

    def __init__(self, workdir: Path, env: dict[str, str], echo: bool = False) -> None:
        self.workdir = workdir
        self.env = env
        self.echo = echo
        self.procs: list[Proc] = []
        self._logs: list[IO[str]] = []

    def spawn(self, name: str, module: str, args: Sequence[str], marker: str | None = None, *,
              prefix: Sequence[str] = (), env: dict[str, str] | None = None, stop_grace: float = 5.0) -> Proc:
        """Start ``python -m module args`` (after *prefix*, e.g. ``ip netns exec NS``); `Proc.stop` gives it
        *stop_grace* seconds after SIGINT."""
        log = self.workdir / f"{name}.log"
        f = open(log, "w")  # noqa: SIM115 - closed in close()
        self._logs.append(f)
        cmd = [*prefix, sys.executable, "-m", module, *args]
        f.write("$ " + " ".join(cmd) + "\n")
        popen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=dict(self.env, **(env or {})), cwd=self.workdir)
        proc = Proc(name, popen, log, stop_grace=stop_grace)
        proc.start_pump(f, marker, self.echo)
        self.procs.append(proc)
        return proc

    def settle(self, timeout: float) -> bool:
        """Wait up to *timeout* seconds for every process to end by itself (after a session's
        shutdown the targets and the bridge print their statistics and exit); whether all did."""
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def close(self) -> None:
        for p in reversed(self.procs):
            p.stop()
        for f in self._logs:
            f.close()


@contextmanager
def topology(workdir: Path, env: dict[str, str], echo: bool = False) -> Iterator[Topology]:
    t = Topology(workdir, env, echo)
    try:
        yield t
    finally:
        t.close()


@dataclass(frozen=True)
class TwoHosts:
    """Run the targets on another "host": behind *prefix* (``ip netns exec NS``), reachable at
    *target_addr*, with the bridge's RDMA bound to *bridge_addr*."""

    prefix: tuple[str, ...]
    target_addr: str
    bridge_addr: str


def start(topo: Topology, test: Test, args: argparse.Namespace, files: dict[str, Path], plain: Path,
          initiator_marker: str | None = None, hosts: TwoHosts | None = None) -> tuple[list[Proc], Proc, Proc]:
    """Start the targets (three, or one with ``--bridge zero-copy``), the bridge and the
    initiator of *test*; returns them.

    *initiator_marker*: a text the initiator's output is watched for (``Proc.wait_marker``).
    *hosts*: put the targets on a second host (see :class:`TwoHosts`).
    """
    cpus = [str(c) for c in (args.cpu or [0])]
    cpu_args = [a for c in cpus for a in ("--cpu", c)]
    # The bridge does most of the work per IO: give it its own core unless told otherwise.
    bridge_cpus = cpus if args.cpu else [str(1 if (os.cpu_count() or 1) > 1 else 0)]
    bridge_cpu_args = [a for c in bridge_cpus for a in ("--cpu", c)]
    channel = f"doca_py_topology_{uuid.uuid4().hex[:12]}"
    targets: list[Proc] = []
    ports: dict[str, int] = {}
    target_host = "127.0.0.1"
    prefix: tuple[str, ...] = ()
    target_env: dict[str, str] = {}
    bridge_env: dict[str, str] = {}
    if hosts is not None:
        # A distinct host id makes the emulated RDMA go over TCP, as between two machines.
        target_host, prefix = hosts.target_addr, hosts.prefix
        target_env = {"DOCA_PY_RDMA_BIND_ADDR": hosts.target_addr, "DOCA_PY_RDMA_HOST_ID": f"targets-{channel}"}
        bridge_env = {"DOCA_PY_RDMA_BIND_ADDR": hosts.bridge_addr}
    zero_copy = getattr(args, "bridge", "gga-offload") == "zero-copy"
    # zero-copy: one target with the plain data as a raw file (the initiator sees its geometry as is)
    roles = ("storage",) if zero_copy else ("data_1", "data_2", "data_p")
    for role in roles:
        content = ["--binary-content", str(files[role])]
        if zero_copy:
            content += ["--block-size", str(args.block_size),
                        "--block-count", str(len(plain_bytes_blocks(files[role], args.block_size)))]
        t = topo.spawn("target" if zero_copy else f"target-{role}", "apps.storage_target",
                       ["-d", DPU_DEV, *cpu_args, "--listen-address", target_host, "--listen-port", "0", *content,
                        *test.target_args.get(role, ())],
                       marker="Listening on port", prefix=prefix, env=target_env)
        ports[role] = int(t.wait_marker("Listening on port", getattr(args, "timeout", TEST_TIMEOUT)).split()[-1])
        targets.append(t)
    if zero_copy:
        bridge = topo.spawn("zero_copy", "apps.zero_copy",
                            ["-d", DPU_DEV, "-r", HOST_PF_REP, *bridge_cpu_args, "--command-channel-name", channel,
                             "--storage-server", f"{target_host}:{ports['storage']}", "--control-timeout", "10"],
                            env=bridge_env)
    else:
        bridge_args = ["-d", DPU_DEV, "-r", HOST_PF_REP, *bridge_cpu_args, "--command-channel-name", channel,
                       "--data-1-storage", f"{target_host}:{ports['data_1']}",
                       "--data-2-storage", f"{target_host}:{ports['data_2']}",
                       "--data-p-storage", f"{target_host}:{ports['data_p']}",
                       "--matrix-type", args.matrix_type, "--control-timeout", "10"]
        if test.recovery_every_n:
            bridge_args += ["--trigger-recovery-read-every-n", str(test.recovery_every_n)]
        bridge_args += list(test.bridge_args)
        bridge = topo.spawn("gga_offload", "apps.gga_offload", bridge_args, env=bridge_env)
    init_args = ["-d", HOST_DEV, *cpu_args, "--command-channel-name", channel, "--control-timeout", "10",
                 "--execution-strategy", test.strategy, "--storage-plain-content", str(plain),
                 "--blocks-per-io", str(getattr(args, "blocks_per_io", 1))]
    # Validity tests visit every block once per worker segment; throughput tests run longer.
    ops = test.operations or max(1, len(plain_bytes_blocks(plain, args.block_size)))
    init_args += ["--run-limit-operation-count", str(ops), *test.initiator_args]
    initiator = topo.spawn("initiator", "apps.initiator", init_args, marker=initiator_marker)
    return targets, bridge, initiator


def _run_test(test: Test, args: argparse.Namespace, files: dict[str, Path], plain: Path, workdir: Path,
              env: dict[str, str]) -> tuple[bool, str]:
    """Run *test*; every process's lines are printed as they come. Returns whether it passed and why
    not (the processes' lines, reports included, are printed by then: the topology's teardown waits
    for each process to end and for its last lines)."""
    with topology(workdir, env, echo=True) as topo:
        _targets, _bridge, initiator = start(topo, test, args, files, plain)
        try:
            rc = initiator.popen.wait(args.timeout)
        except subprocess.TimeoutExpired:
            return False, f"the initiator did not end within {args.timeout:.0f} s (--timeout)"
        if initiator._pump is not None:
            initiator._pump.join(5)
        if rc != 0:
            return False, f"initiator exit status {rc}"
        topo.settle(SETTLE_TIMEOUT)  # the others end after the shutdown: their statistics, not a Ctrl-C
        return True, ""


def environment(shuffle: bool = False, faults: str | None = None, seed: int | None = None) -> dict[str, str]:
    """The child processes' environment: the emulated backend (the native one when ``DOCA_PY_IMPL=native``
    asks for it) in strict mode (unless ``DOCA_PY_STRICT`` says otherwise), the knobs asked for, this
    checkout importable."""
    env = dict(os.environ, DOCA_PY_IMPL=backend_path(), PYTHONUNBUFFERED="1")  # lines leave the children as written
    env.setdefault("DOCA_PY_STRICT", "1")
    if shuffle:
        env["DOCA_PY_EMU_SHUFFLE"] = "1"
    if faults:
        env["DOCA_PY_EMU_FAULTS"] = faults
    if shuffle or faults or seed is not None:
        env["DOCA_PY_EMU_SEED"] = str(seed if seed is not None else int.from_bytes(os.urandom(4), "little") >> 1)
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    return env


def backend_path() -> str:
    """The backend the processes run on: ``native`` when ``DOCA_PY_IMPL=native`` asks for it, else ``emulated``
    (``auto`` included: the main job is the emulated topology unless told otherwise)."""
    return "native" if os.environ.get("DOCA_PY_IMPL", "").strip().lower() == "native" else "emulated"


def _knobs(env: dict[str, str]) -> str:
    names = ("DOCA_PY_IMPL", "DOCA_PY_LIBDIR", "DOCA_PY_STRICT", "DOCA_PY_EMU_SHUFFLE", "DOCA_PY_EMU_FAULTS",
             "DOCA_PY_EMU_SEED")
    return " ".join(f"{n}={env[n]}" for n in names if env.get(n) and (n != "DOCA_PY_LIBDIR" or env["DOCA_PY_IMPL"] == "native"))


def prepare(args: argparse.Namespace, workdir: Path, env: dict[str, str]) -> tuple[Path, dict[str, Path]]:
    """Write the plain content and generate the three ``.sbc`` files; returns their paths.

    With ``--bridge zero-copy`` the one target serves the plain content itself
    (``{"storage": plain}``); no generator runs."""
    plain = workdir / "plain.bin"
    if args.input is not None:
        data = args.input.read_bytes()
        data += bytes(-len(data) % args.block_size)
    else:
        data = make_sample(args.block_size * args.block_count)
    plain.write_bytes(data)
    if getattr(args, "bridge", "gga-offload") == "zero-copy":
        print(f"doca_py storage topology (zero-copy bridge): {len(data)} bytes in {len(data) // args.block_size} "
              f"blocks of {args.block_size}, stored plain, files and logs in {workdir}", flush=True)
        return plain, {"storage": plain}
    files = {role: workdir / f"{role}.sbc" for role in ("data_1", "data_2", "data_p")}
    print(f"doca_py storage topology: {len(data)} bytes in {len(data) // args.block_size} blocks of "
          f"{args.block_size}, matrix {args.matrix_type}, files and logs in {workdir}", flush=True)
    gen = subprocess.run([sys.executable, "-m", "apps.sbc_generator", "-d", DPU_DEV,
                          "--original-input-data", str(plain), "--block-size", str(args.block_size),
                          "--matrix-type", args.matrix_type, "--data-1", str(files["data_1"]),
                          "--data-2", str(files["data_2"]), "--data-p", str(files["data_p"])],
                         env=env, cwd=workdir, capture_output=True, text=True, timeout=args.timeout)
    if gen.returncode != 0:
        raise RuntimeError(f"sbc generator failed:\n{gen.stdout}{gen.stderr}")
    return plain, files


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tests; 0 only if all passed, 2 on a usage error."""
    parser = build_parser()
    if argv is None:
        parser.prog = command_name(parser.prog)
    args = parser.parse_args(argv)
    zero_copy = args.bridge == "zero-copy"
    if args.block_size <= 0 or (args.block_size % 128 and not zero_copy):
        parser.fail([f"--block-size: {args.block_size} is not a positive multiple of 128"])
    if args.inject_faults:
        from doca_py.emulated.strict import parse_faults

        try:
            parse_faults(args.inject_faults)
        except ValueError as exc:
            parser.fail([f"--inject-faults: {exc}"])
    env = environment(args.shuffle, args.inject_faults, args.seed)
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="doca_py_topology_")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        try:
            plain, files = prepare(args, workdir, env)
        except RuntimeError as exc:
            print(exc)
            return 1
        print(f"emulator: {_knobs(env)}", flush=True)
        if args.strategy:
            tests = [Test(st.replace("_", " "), st, args.throughput_operations if "throughput" in st else 0,
                          args.recovery_every_n if st == "read_write_data_validity_test" else 0)
                     for st in args.strategy]
        else:
            tests = [Test(t.name, t.strategy, args.throughput_operations if t.operations else 0,
                          args.recovery_every_n if t.recovery_every_n else 0) for t in DEFAULT_TESTS]
        if zero_copy:  # no recovery reads: nothing is erasure coded
            tests = [Test(t.name.replace(" with recovery reads", ""), t.strategy, t.operations) for t in tests]
        results = []
        for test in tests:
            t0 = time.monotonic()
            print(f"\n=== {test.name} ({test.strategy}"
                  f"{f', recovery read every {test.recovery_every_n}' if test.recovery_every_n else ''}) ===",
                  flush=True)
            ok, why = _run_test(test, args, files, plain, workdir, env)
            print(f"--- {'PASSED' if ok else 'FAILED'} in {time.monotonic() - t0:.1f} s"
                  + (f": {why}" if why else ""), flush=True)
            results.append((test.name, ok))
        print("\nSummary:")
        for name, ok in results:
            print(f"  {'PASS' if ok else 'FAIL'}  {name}")
        return 0 if all(ok for _, ok in results) else 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)
