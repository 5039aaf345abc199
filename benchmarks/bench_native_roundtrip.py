"""Cost of a round trip through the raw ctypes layer, against a bare Python call.

Compiles the fake libdoca_common of ``tests/native/fakelib`` (needs gcc/cc and a source tree),
binds the real declarations on it and times, in the same run:

* ``python call``: a two-argument Python function returning ``None`` (the reference),
* ``set+get user data``: ``doca_task_set_user_data`` + ``doca_task_get_user_data``
  (``union doca_data`` by value in and out),
* ``submit+progress+callback``: ``doca_task_submit`` + ``doca_pe_progress`` calling a
  ``CFUNCTYPE`` completion callback back into Python,
* ``check(code)``: one call returning ``doca_error_t`` followed by ``errors.check``.

Then the task round trip through the public API (``Task.submit`` … ``Pe.progress()`` … the completion
callback, native backend over the same fake, in a child process that selects the backend) against a
raw ctypes loop of the same C calls (``doca_task_submit`` per task, ``doca_pe_progress`` until it
returns 0, a ``CFUNCTYPE`` callback), the raw loop bound both ways: through ``ctypes.CDLL`` (the GIL
released and retaken at every call) and ``ctypes.PyDLL`` (the GIL kept), 64 and 1 tasks in flight.
The public API binds these calls the way ``capi.keeps_gil`` says (``PyDLL`` for the data path), so
``public ÷ raw PyDLL`` is what the Python layer costs and ``public ÷ raw CDLL`` what it costs against
the ctypes loop everyone writes first. Timed in thread CPU time, the loops interleaved.

Usage: ``python benchmarks/bench_native_roundtrip.py [-n ITERATIONS] [-r REPEATS] [--tasks N]``.
Reports the best of the repeats in ns per iteration and as a ratio to the reference.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from ctypes import byref, c_void_p
from pathlib import Path

from doca_py import errors
from doca_py.native import capi, loader

# The fake library is test code (not in the wheel): import it from the source tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.native.fakelib import FAKE_DECLS, FakeBuildError, build_fake_common, public_fake_ctx  # noqa: E402


def _best_ns(loop: Callable[[int], None], n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        loop(n)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main(argv: list[str] | None = None) -> int:
    """Build the fake library, run the loops and print the table; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-n", "--iterations", type=int, default=200_000)
    parser.add_argument("-r", "--repeats", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=128_000, help="tasks per timed task round-trip loop")
    parser.add_argument("--round-trip-only", action="store_true", help="skip the raw call table")
    parser.add_argument("--child", metavar="LIBDIR", help=argparse.SUPPRESS)  # the round-trip child
    args = parser.parse_args(argv)
    if args.child:
        return round_trip(args)

    with tempfile.TemporaryDirectory(prefix="doca_py_bench_") as tmp:
        try:
            build_fake_common(Path(tmp))
        except FakeBuildError as exc:
            print(f"cannot build the fake library: {exc}", file=sys.stderr)
            return 1
        if not args.round_trip_only:
            raw_table(args, tmp)
        # The backend is chosen when doca_py is first imported: the public API runs in a child.
        env = dict(os.environ, DOCA_PY_IMPL="native", DOCA_PY_LIBDIR=tmp)
        cmd = [sys.executable, __file__, "--child", tmp, "-r", str(args.repeats), "--tasks", str(args.tasks)]
        return subprocess.run(cmd, env=env).returncode


def raw_table(args: argparse.Namespace, tmp: str) -> None:
    """The raw layer's calls against a bare Python call."""
    os.environ[loader.ENV_LIBDIR] = tmp
    loader.reset()
    lib = capi.load_common()
    version = loader.runtime_version_string()
    fake = capi.bind(lib.cdll, FAKE_DECLS, lib.version, libname="common")

    pe, ctx, task = c_void_p(), c_void_p(), c_void_p()
    errors.check(lib.doca_pe_create(byref(pe)))
    errors.check(fake.fake_ctx_create(byref(ctx)))
    errors.check(lib.doca_pe_connect_ctx(pe, ctx))
    completions = [0]

    def on_done(task: int | None, task_ud: int, ctx_ud: int) -> None:
        completions[0] += 1

    task_cb = capi.TaskCompletionCb(on_done)  # kept alive until the end of main
    fake.fake_ctx_set_task_cb(ctx, task_cb)
    errors.check(lib.doca_ctx_start(ctx))
    lib.doca_pe_progress(pe)
    errors.check(fake.fake_task_alloc_init(ctx, 0, byref(task)))

    def reference(a: object, b: object) -> None:
        return None

    def loop_python(n: int) -> None:
        f, t = reference, task
        for i in range(n):
            f(t, i)

    def loop_user_data(n: int) -> None:
        set_ud, get_ud, t = lib.doca_task_set_user_data, lib.doca_task_get_user_data, task
        for i in range(n):
            set_ud(t, i)
            get_ud(t)

    def loop_progress(n: int) -> None:
        submit, progress, t, p = lib.doca_task_submit, lib.doca_pe_progress, task, pe
        for _ in range(n):
            submit(t)
            progress(p)

    def loop_check(n: int) -> None:
        get_state, check, c, st = lib.doca_ctx_get_state, errors.check, ctx, ctypes.c_int()
        ref = byref(st)
        for _ in range(n):
            check(get_state(c, ref))

    rows = [
        ("python call", _best_ns(loop_python, args.iterations, args.repeats)),
        ("set+get user data", _best_ns(loop_user_data, args.iterations, args.repeats)),
        ("submit+progress+callback", _best_ns(loop_progress, args.iterations, args.repeats)),
        ("check(code)", _best_ns(loop_check, args.iterations, args.repeats)),
    ]
    assert completions[0] == args.iterations * args.repeats

    lib.doca_task_free(task)
    fake.fake_ctx_destroy(ctx)
    errors.check(lib.doca_pe_destroy(pe))
    del task_cb

    ref_ns = rows[0][1]
    print(f"fake libdoca_common {version}, {args.iterations} iterations, best of {args.repeats}")
    print(f"{'round trip':<28}{'ns/iter':>10}{'x python call':>16}")
    for name, ns in rows:
        print(f"{name:<28}{ns:>10.1f}{ns / ref_ns:>16.2f}")
    print(flush=True)


def python_calls(loop: Callable[[], int], k: int) -> float:
    """Python calls (frames and builtin calls, ctypes functions included) per task of *loop*."""
    count = [0]

    def prof(frame: object, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            count[0] += 1

    sys.setprofile(prof)
    try:
        done = loop()
    finally:
        sys.setprofile(None)
    return (count[0] - 1) / (done or k)


def round_trip(args: argparse.Namespace) -> int:
    """The child: the public API's task round trip against the raw loops, both ways."""
    import doca_py as d
    from doca_py.ctx import Task

    assert d.impl == "native", d.impl
    lib = capi.load_common()
    fake = capi.bind(lib.cdll, FAKE_DECLS, lib.version, libname="common")
    cdll = lib.cdll
    pydll = ctypes.PyDLL(cdll._name, handle=cdll._handle)
    alive: list[object] = []  # the fake cannot stop a ctx: everything stays until os._exit

    def public(n: int, batch: int) -> Callable[[], int]:
        pe, ctx, tasks, done = public_fake_ctx(fake, batch)
        progress, rounds = pe.progress, n // batch
        alive.append((pe, ctx))

        def loop() -> int:
            done[0] = 0
            for _ in range(rounds):
                for t in tasks:
                    t.submit()
                while progress():
                    pass
            return done[0]

        return loop

    def fast(n: int, batch: int) -> Callable[[], int]:
        """The fast lane: each task's submitter (one call), the completion delivered by the backend straight
        to the user's callback."""
        pe, ctx, tasks, done = public_fake_ctx(fake, batch)
        progress, rounds = pe.progress, n // batch
        submits = [t.submitter() for t in tasks]
        alive.append((pe, ctx))

        def loop() -> int:
            done[0] = 0
            for _ in range(rounds):
                for s in submits:
                    s()
                while progress():
                    pass
            return done[0]

        return loop

    def raw(n: int, batch: int, dll: ctypes.CDLL) -> Callable[[], int]:
        submit, progress = dll["doca_task_submit"], dll["doca_pe_progress"]
        submit.restype, submit.argtypes = ctypes.c_int, [c_void_p]
        progress.restype, progress.argtypes = ctypes.c_uint8, [c_void_p]
        pe, ctx = c_void_p(), c_void_p()
        lib.doca_pe_create(byref(pe))
        fake.fake_ctx_create(byref(ctx))
        lib.doca_pe_connect_ctx(pe, ctx)
        done = [0]

        def on_done(task: int | None, task_ud: int, ctx_ud: int) -> None:
            done[0] += 1

        cb = capi.TaskCompletionCb(on_done)
        fake.fake_ctx_set_task_cb(ctx, cb)
        lib.doca_ctx_start(ctx)
        lib.doca_pe_progress(pe)
        tasks = []
        for _ in range(batch):
            tp = c_void_p()
            fake.fake_task_alloc_init(ctx, 0, byref(tp))
            tasks.append(tp.value)
        p, rounds = pe.value, n // batch
        alive.append(cb)

        def loop() -> int:
            done[0] = 0
            for _ in range(rounds):
                for t in tasks:
                    submit(t)
                while progress(p):
                    pass
            return done[0]

        return loop

    n = args.tasks
    names, loops = [], []
    counted = []
    for batch, k in ((64, n), (1, n // 4)):
        for label, loop in ((f"raw ctypes, CDLL, {batch} in flight", raw(k, batch, cdll)),
                            (f"raw ctypes, PyDLL, {batch} in flight", raw(k, batch, pydll)),
                            (f"public API, {batch} in flight", public(k, batch)),
                            (f"fast lane, {batch} in flight", fast(k, batch))):
            names.append(label)
            loops.append(loop)
            if "CDLL" not in label:
                counted.append((label, loop, k))
    best = [float("inf")] * len(loops)
    for loop in loops:
        loop()  # warm up
    for _ in range(args.repeats):
        for i, loop in enumerate(loops):  # interleaved: the machine's drift hits every loop alike
            t0 = time.thread_time_ns()
            k = loop()
            best[i] = min(best[i], (time.thread_time_ns() - t0) / k)
    calls = {label: python_calls(loop, k) for label, loop, k in counted}
    print(f"task round trip, {n} tasks per loop (64 in flight; {n // 4} with 1), best of {args.repeats}, "
          "thread CPU time")
    print()
    print("Python calls per task (frames and builtin calls, sys.setprofile; raw: the ctypes callback only):")
    for label, c in calls.items():
        print(f"* {label}: {c:.2f}")
    print()
    print("| in flight | raw CDLL ns | raw PyDLL ns | public API ns | fast lane ns | PyDLL ÷ CDLL "
          "| public ÷ raw PyDLL | public ÷ raw CDLL | fast ÷ raw PyDLL | fast ÷ raw CDLL |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for j, batch in enumerate((64, 1)):
        c, p, a, f = best[4 * j:4 * j + 4]
        print(f"| {batch} | {c:.0f} | {p:.0f} | {a:.0f} | {f:.0f} | {p / c:.2f} | {a / p:.2f} | {a / c:.2f} "
              f"| {f / p:.2f} | {f / c:.2f} |")
    sys.stdout.flush()
    os._exit(0)  # the fake cannot stop a ctx: leave without the public objects' finalizers


if __name__ == "__main__":
    sys.exit(main())
