"""Python calls per 4 KiB read IO in each process of the storage topology, split by layer.

    .venv/bin/python benchmarks/e2e/calls_per_io.py                        # both bridges, emulated path
    .venv/bin/python benchmarks/e2e/calls_per_io.py --path both            # and the native path over libdoca
    .venv/bin/python benchmarks/e2e/calls_per_io.py --bridge zero-copy --long 3000 --short 1000

Every process of a read-4k run (started by ``run.py``'s own ``run_scenario``, as ``apps.topology`` does) runs
under cProfile with every thread profiled (``profiled.py``). The topology runs twice, with ``--long`` and
``--short`` IOs; the difference of the two call counts divided by the difference of the IO counts is what one
IO costs: start-up, teardown and idle polling cancel out, and the count does not depend on the machine's load
(the figure a BlueField's Arm cores pay per IO, unlike seconds).

Each function is charged to the layer its file belongs to:

* ``apps``: ``apps/`` (the storage apps themselves);
* ``public``: ``doca_py/*.py`` and ``doca_py/_backend`` (the public API);
* ``backend``: ``doca_py/native`` on the native path; ``doca_py/emulated`` and ``doca_py/engines`` on the
  emulated path, less its transport;
* ``emulator``: on the native path, libdoca's emulator (``doca_py/libdoca`` and the emulated backend it
  serves, less its transport): the price of running without hardware, not paid on a BlueField;
* ``transport``: the emulator's transport (``doca_py/emulated/transport`` and the stream, ring and wire parts
  of its rdma and comch: what hardware does);
* ``other``: any other Python code (the standard library);
* ``builtins``: calls of C functions (``len``, ``struct.pack_into``, methods of built-in types); a second
  table says which layer called them. Calls of ctypes foreign functions are not seen by cProfile.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from apps.topology import environment, prepare  # noqa: E402
from benchmarks.e2e import run as e2e  # noqa: E402

LAYERS = ("apps", "public", "backend", "emulator", "transport", "other", "builtins")
FRAME_LAYERS = LAYERS[:-1]
BRIDGES = ("gga-offload", "zero-copy")
TITLE = {"gga-offload": "GGA", "zero-copy": "zero-copy"}

# The emulator's transport: what the hardware (the wire, the NIC's queues) does in a real deployment.
_TRANSPORT_FILES = {
    "rdma": {"connection.py", "serve.py", "shm.py", "ring_poll.py", "segments.py", "wire.py", "work.py"},
    "comch": {"connection.py", "receive.py", "shm.py", "wire.py"},
}
_PKG = ROOT / "doca_py"
_APPS = ROOT / "apps"


def layer_of(filename: str, path: str) -> str:
    """The layer (of :data:`FRAME_LAYERS`, or ``builtins``) of a function defined in *filename* (a pstats key's
    file; ``~`` for built-ins), on *path* (``emulated`` or ``native``)."""
    if filename == "~":
        return "builtins"
    p = Path(filename)
    try:
        rel = p.resolve().relative_to(_PKG).parts
    except (ValueError, OSError):
        rel = None
    if rel is None:
        parts = p.parts
        if "doca_py" in parts:  # another checkout of the same package (an installed copy)
            rel = parts[len(parts) - 1 - parts[::-1].index("doca_py") + 1:]
        else:
            try:
                p.resolve().relative_to(_APPS)
                return "apps"
            except (ValueError, OSError):
                return "apps" if "apps" in parts and parts[parts.index("apps") + 1:] else "other"
    if len(rel) == 1 or rel[0] == "_backend":
        return "public"
    top = rel[0]
    if top == "native":
        return "backend"
    if top == "libdoca":
        return "emulator"
    if top == "emulated" and len(rel) >= 3 and (rel[1] == "transport" or rel[2] in _TRANSPORT_FILES.get(rel[1], ())):
        return "transport"
    if top in ("emulated", "engines"):
        return "backend" if path == "emulated" else "emulator"
    return "other"


@dataclass(frozen=True)
class Counts:
    """Calls of one profiled process: per layer, and the built-in calls per calling layer."""

    frames: dict[str, int]
    builtins_by_caller: dict[str, int]
    functions: dict[str, int] = field(default_factory=dict)  # "layer file:line(name)" -> calls

    @staticmethod
    def of(stats: pstats.Stats, path: str) -> Counts:
        frames = dict.fromkeys(LAYERS, 0)
        by_caller = dict.fromkeys(FRAME_LAYERS, 0)
        functions: dict[str, int] = {}
        raw = stats.stats  # type: ignore[attr-defined]
        for (filename, line, name), (_cc, nc, _tt, _ct, callers) in raw.items():
            layer = layer_of(filename, path)
            frames[layer] += nc
            where = name if filename == "~" else f"{_short(filename)}:{line}({name})"
            functions[f"{layer} {where}"] = functions.get(f"{layer} {where}", 0) + nc
            if layer == "builtins":
                for (cfile, _cl, _cn), cell in callers.items():
                    caller = layer_of(cfile, path)
                    n = cell[1] if isinstance(cell, tuple) else cell
                    by_caller["other" if caller == "builtins" else caller] += n
        return Counts(frames, by_caller, functions)

    def minus(self, other: Counts, ios: int) -> PerIo:
        fns = {k: (v - other.functions.get(k, 0)) / ios for k, v in self.functions.items()}
        return PerIo({k: (self.frames[k] - other.frames[k]) / ios for k in LAYERS},
                     {k: (self.builtins_by_caller[k] - other.builtins_by_caller[k]) / ios for k in FRAME_LAYERS},
                     fns)


def _short(filename: str) -> str:
    p = Path(filename)
    for root in (ROOT,):
        try:
            return str(p.resolve().relative_to(root))
        except (ValueError, OSError):
            pass
    return p.name


@dataclass(frozen=True)
class PerIo:
    """Python calls per IO of one process."""

    layers: dict[str, float]
    builtins_by_caller: dict[str, float]
    functions: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.layers.values())

    @property
    def without_emulator(self) -> float:
        """Every call but the emulator's and its transport's (frames and the built-ins they call): on the native
        path, the Python a BlueField's cores run per IO."""
        return self.total - sum(self.layers[k] + self.builtins_by_caller[k] for k in ("emulator", "transport"))

    def own(self, layer: str) -> float:
        """The frames of *layer* and the built-ins it called."""
        return self.layers[layer] + self.builtins_by_caller.get(layer, 0.0)


def profile_run(bridge: str, path: str, ops: int, env: dict[str, str], files: dict[str, Path], plain: Path,
                workdir: Path, timeout: float) -> dict[str, Counts]:
    """One read-4k run of *bridge*'s topology, every process profiled; their call counts."""
    procs = e2e.PROCS_OF[bridge]
    r = e2e.run_scenario(e2e.SCENARIOS["read-4k"], ops, files, plain, workdir, env, {}, set(procs), timeout,
                         bridge_kind=bridge)
    if r.operations != ops:
        raise RuntimeError(f"the initiator reported {r.operations} operations, not {ops}")
    out = {}
    for name in procs:
        prof = r.profiles.get(name)
        if prof is None or not prof.exists():
            raise RuntimeError(f"{name} wrote no profile")
        out[name] = Counts.of(pstats.Stats(str(prof)), path)
    return out


def measure(bridge: str, path: str, long_ops: int, short_ops: int, env: dict[str, str], workdir: Path,
            timeout: float, block_count: int) -> dict[str, PerIo]:
    """Calls per IO of every process of *bridge*'s topology on *path*: (long run − short run) ÷ (long − short)."""
    d = workdir / f"{bridge}-{path}"
    d.mkdir(parents=True, exist_ok=True)
    ns = argparse.Namespace(input=None, block_size=4096, block_count=block_count, matrix_type="vandermonde",
                            timeout=timeout, bridge=bridge)
    plain, files = prepare(ns, d, environment())
    long = profile_run(bridge, path, long_ops, env, files, plain, plain.parent, timeout)
    short = profile_run(bridge, path, short_ops, env, files, plain, plain.parent, timeout)
    return {name: long[name].minus(short[name], long_ops - short_ops) for name in long}


def table(results: dict[tuple[str, str], dict[str, PerIo]]) -> str:
    """Calls per IO of each process per layer (and all of them but the emulator's and its transport's, with the
    built-ins they call), then the built-ins by calling layer."""
    out = ["| path | bridge | process | " + " | ".join(LAYERS) + " | all | all but emulator and transport |",
           "|---|---|---|" + "---:|" * (len(LAYERS) + 2)]
    for (path, bridge), procs in results.items():
        for name, c in procs.items():
            out.append(f"| {path} | {TITLE[bridge]} | {name} | " + " | ".join(f"{c.layers[k]:.1f}" for k in LAYERS)
                       + f" | {c.total:.1f} | {c.without_emulator:.1f} |")
    out += ["", "Built-in calls per IO by the layer that made them:", "",
            "| path | bridge | process | " + " | ".join(FRAME_LAYERS) + " |",
            "|---|---|---|" + "---:|" * len(FRAME_LAYERS)]
    for (path, bridge), procs in results.items():
        for name, c in procs.items():
            out.append(f"| {path} | {TITLE[bridge]} | {name} | "
                       + " | ".join(f"{c.builtins_by_caller[k]:.1f}" for k in FRAME_LAYERS) + " |")
    return "\n".join(out)


def top_functions(c: PerIo, n: int, layers: Sequence[str] | None = None) -> str:
    """The *n* functions of *c* (of *layers*) with the most calls per IO, one a line."""
    rows = sorted(((v, k) for k, v in c.functions.items() if layers is None or k.split(" ", 1)[0] in layers),
                  reverse=True)[:n]
    return "\n".join(f"{v:8.2f}  {k}" for v, k in rows if v >= 0.05)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks/e2e/calls_per_io.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--path", choices=("emulated", "native", "both"), default="emulated",
                   help="the backend the processes run on (as run.py): emulated (default), native (over libdoca), "
                        "or both")
    p.add_argument("--bridge", choices=(*BRIDGES, "both"), default="both",
                   help="the topology: gga-offload (three targets), zero-copy (one), or both (default)")
    p.add_argument("--long", type=int, default=6000, help="IOs of the long run (default: 6000)")
    p.add_argument("--short", type=int, default=2000, help="IOs of the short run (default: 2000)")
    p.add_argument("--block-count", type=int, default=64, help="storage blocks of the sample (default: 64)")
    p.add_argument("--top", type=int, default=0, metavar="N",
                   help="also list each process's N functions with the most calls per IO (default: none)")
    p.add_argument("--layer", action="append", choices=LAYERS,
                   help="with --top: only functions of this layer (repeatable; default: every layer)")
    p.add_argument("--workdir", type=Path, help="keep files, logs and profiles here (default: a temporary directory)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per run (default: 300)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 0 < args.short < args.long:
        print("--short must be positive and below --long", file=sys.stderr)
        return 2
    paths: Iterable[str] = ("emulated", "native") if args.path == "both" else (args.path,)
    bridges = BRIDGES if args.bridge == "both" else (args.bridge,)
    env = environment()
    env["DOCA_PY_STRICT"] = os.environ.get("DOCA_PY_STRICT", "0")  # the data path, not the sanitizer
    env["DOCA_PY_IMPL"] = "emulated"
    env["DOCA_PY_E2E_PROFILE_CLOCK"] = "internal"  # counts only: the cheapest clock keeps the profiled start in time
    own_tmp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="doca_py_calls_")) if own_tmp else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results: dict[tuple[str, str], dict[str, PerIo]] = {}
        for path in paths:
            penv = e2e.native_env(env, workdir / "ledger") if path == "native" else env
            for bridge in bridges:
                results[path, bridge] = measure(bridge, path, args.long, args.short, penv, workdir, args.timeout,
                                                args.block_count)
                print(f"{path} path, {TITLE[bridge]}: " + ", ".join(
                    f"{k} {c.total:.1f} (apps {c.own('apps'):.1f})" for k, c in results[path, bridge].items()),
                    flush=True)
        print()
        print(f"Python calls per 4 KiB read IO ({args.long} − {args.short} IOs):")
        print()
        print(table(results))
        if args.top:
            for (path, bridge), procs in results.items():
                for name, c in procs.items():
                    print()
                    print(f"{path} path, {TITLE[bridge]}, {name}: the functions with the most calls per IO")
                    print(top_functions(c, args.top, args.layer))
        return 0
    finally:
        if own_tmp:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
