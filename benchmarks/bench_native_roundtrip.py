"""Cost of a round trip through the raw ctypes layer, against a bare Python call.

Compiles the fake libdoca_common of ``tests/native/fakelib`` (needs gcc/cc and a source tree),
binds the real declarations on it and times, in the same run:

* ``python call``: a two-argument Python function returning ``None`` (the reference),
* ``set+get user data``: ``doca_task_set_user_data`` + ``doca_task_get_user_data``
  (``union doca_data`` by value in and out),
* ``submit+progress+callback``: ``doca_task_submit`` + ``doca_pe_progress`` calling a
  ``CFUNCTYPE`` completion callback back into Python,
* ``check(code)``: one call returning ``doca_error_t`` followed by ``errors.check``.

Usage: ``python benchmarks/bench_native_roundtrip.py [-n ITERATIONS] [-r REPEATS]``.
Reports the best of the repeats in ns per iteration and as a ratio to the reference.
"""

from __future__ import annotations

import argparse
import ctypes
import os
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
from tests.native.fakelib import FAKE_DECLS, FakeBuildError, build_fake_common  # noqa: E402


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
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="doca_py_bench_") as tmp:
        try:
            build_fake_common(Path(tmp))
        except FakeBuildError as exc:
            print(f"cannot build the fake library: {exc}", file=sys.stderr)
            return 1
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
