"""Task round trip through the public API: submit → progress → completion callback, per task.

Emulated (default): a 64-byte ``Dma`` memcpy. Native (``--impl native``): a task of the fake
``libdoca_common`` of ``tests/native/fakelib`` (needs a C compiler), through the public ``Pe``,
``Ctx`` and ``Task`` and the native backend; the fake does no work, so this is the binding's own cost.

References, measured in the same run and interleaved with the round trips (each figure is the best
of ``--repeats``, in thread CPU time; the machine drifts, the ratios hold):

* ``bare call``: a three-argument Python call in a loop, the floor of any callback API;
* ``same frames, empty``: the Python calls a round trip makes, with empty bodies (emulated: the
  public submit, the backend submit, the launcher, the engine work, the completion trampoline, the
  user callback, queued on a ``deque``): what the call structure costs by itself;
* ``raw ctypes`` (native): ``doca_task_submit`` per task, one ``doca_pe_progress`` per batch and
  a ``CFUNCTYPE`` completion callback into Python, with no object layer: the ctypes floor.

Also prints the Python calls made per task (counted with ``sys.setprofile``). ``--stub-work``
replaces the emulated memcpy's work by advancing the destination only: the rest is the completion path.

    .venv/bin/python benchmarks/bench_task_roundtrip.py [--impl emulated|native] [--tasks N] [--batch B]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

Loop = Callable[[], int]  # runs a fixed workload, returns the number of tasks it completed


def bare_calls(n: int) -> Loop:
    def cb(task: object, ud: object, cud: object) -> None:
        pass

    def loop() -> int:
        for _ in range(n):
            cb(None, None, None)
        return n

    return loop


def same_frames(n: int, batch: int) -> Loop:
    """The emulated round trip's call structure with empty bodies."""
    ready: deque[tuple[Callable[[Any], None], Any]] = deque()
    count = [0]

    def user_cb(task: object, ud: object, cud: object) -> None:
        count[0] += 1

    def done(task: Any) -> None:  # the public completion trampoline
        user_cb(task, task.user_data, None)

    class H:
        __slots__ = ("owner", "item")

        def __init__(self) -> None:
            self.owner: object = None
            self.item = (launch, self)

        def submit(self) -> None:
            ready.append(self.item)

        def execute(self) -> int:
            return 0

    def launch(h: H) -> None:
        if h.execute():
            return
        done(h.owner)

    class T:
        __slots__ = ("_h", "user_data")

        def __init__(self, h: H) -> None:
            self._h = h
            self.user_data: object = None
            h.owner = self

        def submit(self) -> None:
            self._h.submit()

    tasks = [T(H()) for _ in range(batch)]

    def progress() -> bool:
        k = len(ready)
        if not k:
            return False
        pop = ready.popleft
        for _ in range(k):
            fn, arg = pop()
            fn(arg)
        return True

    def loop() -> int:
        count[0] = 0
        for _ in range(n // batch):
            for t in tasks:
                t.submit()
            while progress():
                pass
        return count[0]

    return loop


def best_ns(loops: list[Loop], repeats: int) -> list[float]:
    """Best ns per task of each loop; the loops take turns in every repeat so drift hits all alike.

    Timed in this thread's CPU time: on a shared machine the wall clock also counts the time the
    process waits for a core."""
    best = [float("inf")] * len(loops)
    for loop in loops:
        loop()  # warm up
    for _ in range(repeats):
        for i, loop in enumerate(loops):
            t0 = time.thread_time_ns()
            k = loop()
            best[i] = min(best[i], (time.thread_time_ns() - t0) / k)
    return best


def python_calls(step: Callable[[], None], k: int) -> float:
    """Python function calls per task of *step* (which completes *k* tasks)."""
    calls = [0]

    def prof(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    sys.setprofile(prof)
    try:
        step()
    finally:
        sys.setprofile(None)
    return (calls[0] - 1) / k  # not the call of step itself


# -- emulated --------------------------------------------------------------------------------------


def emulated(args: argparse.Namespace) -> list[tuple[str, float, float | None]]:
    os.environ["DOCA_PY_IMPL"] = "emulated"
    import doca_py as d

    if args.stub_work:
        from doca_py.emulated.dma import EmuDmaTaskMemcpy

        def advance(self: EmuDmaTaskMemcpy) -> int:
            assert self.src is not None and self.dst is not None
            self.dst.data_len += self.src.data_len
            return 0

        EmuDmaTaskMemcpy._execute = advance  # type: ignore[method-assign]

    stack: list[Callable[[], None]] = []

    def dma_round_trips(n: int, batch: int) -> tuple[Loop, Callable[[], float]]:
        dev = d.Dev.open_by_pci_addr("03:00.0")
        pe, inv, mm = d.Pe(), d.BufInventory(2 * batch), d.Mmap()
        mm.allocate(2 * batch * 4096)
        mm.add_dev(dev)
        mm.start()
        base, _ = mm.get_memrange()
        done = [0]

        def ok(task: d.DmaTaskMemcpy, ud: object, cud: object) -> None:
            done[0] += 1

        def err(task: d.DmaTaskMemcpy, ud: object, cud: object) -> None:
            raise RuntimeError(task.get_status())

        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(ok, err, batch)
        dma.start()
        tasks = []
        for i in range(batch):
            src = inv.buf_get_by_data(mm, base + i * 4096, args.size)
            dst = inv.buf_get_by_addr(mm, base + (batch + i) * 4096, 4096)
            tasks.append((dma.task_memcpy_alloc_init(src, dst), dst))
        progress = pe.progress
        per_window = 4096 // args.size  # destinations grow; re-aim them only when full
        rounds = n // batch

        def loop() -> int:
            done[0] = 0
            for r in range(rounds):
                if r % per_window == 0:
                    for _task, dst in tasks:
                        dst.reset_data_len()
                for task, _dst in tasks:
                    task.submit()
                while progress():
                    pass
            assert done[0] == rounds * batch
            return done[0]

        def one_round() -> None:
            for task, _dst in tasks:
                task.submit()
            while progress():
                pass

        def calls() -> float:
            for _task, dst in tasks:
                dst.reset_data_len()
            return python_calls(one_round, batch)

        def close() -> None:
            for task, dst in tasks:
                task.free()
                task.get_src().dec_refcount()
                dst.dec_refcount()
            pe.close()
            mm.close()
            inv.close()
            dev.close()

        stack.append(close)
        return loop, calls

    b = args.batch
    rt, count = dma_round_trips(args.tasks, b)
    rt1, count1 = dma_round_trips(args.tasks // 4, 1)
    ref, frames, frames1 = bare_calls(args.tasks), same_frames(args.tasks, b), same_frames(args.tasks // 4, 1)
    ns = best_ns([ref, frames, rt, frames1, rt1], args.repeats)
    calls, calls1 = count(), count1()
    for close in stack:
        close()
    return [
        ("bare call (reference)", ns[0], None),
        (f"same frames, empty, {b} in flight", ns[1], None),
        (f"round trip, {b} in flight, {args.size} B memcpy", ns[2], calls),
        ("same frames, empty, 1 in flight", ns[3], None),
        (f"round trip, 1 in flight, {args.size} B memcpy", ns[4], calls1),
    ]


# -- native over the fake library ------------------------------------------------------------------


def native(args: argparse.Namespace) -> list[tuple[str, float, float | None]]:
    # Set by the parent (see main): the backend is chosen when doca_py is first imported.
    import doca_py as d
    from doca_py.ctx import Ctx, Task
    from doca_py.native import capi
    from tests.native.fakelib import FAKE_DECLS, public_fake_ctx

    assert d.impl == "native", d.impl
    lib = capi.load_common()
    fake = capi.bind(lib.cdll, FAKE_DECLS, lib.version, libname="common")
    stack: list[object] = []

    def public(n: int, batch: int) -> tuple[Loop, Callable[[], None]]:
        pe, ctx, tasks, done = public_fake_ctx(fake, batch)
        progress = pe.progress
        rounds = n // batch

        def loop() -> int:
            done[0] = 0
            for _ in range(rounds):
                for t in tasks:
                    t.submit()
                while progress():
                    pass
            assert done[0] == rounds * batch
            return done[0]

        def one_round() -> None:
            for t in tasks:
                t.submit()
            while progress():
                pass

        stack.append((pe, ctx))  # alive until the process ends (the fake cannot stop a ctx: see main)
        return loop, one_round

    def raw(n: int, batch: int) -> Loop:
        pe, ctx = ctypes.c_void_p(), ctypes.c_void_p()
        lib.doca_pe_create(ctypes.byref(pe))
        fake.fake_ctx_create(ctypes.byref(ctx))
        lib.doca_pe_connect_ctx(pe, ctx)
        done = [0]

        def on_done(task: int | None, task_ud: int, ctx_ud: int) -> None:
            done[0] += 1

        cb = capi.TaskCompletionCb(on_done)
        stack.append(cb)  # alive until the process ends
        fake.fake_ctx_set_task_cb(ctx, cb)
        lib.doca_ctx_start(ctx)
        lib.doca_pe_progress(pe)
        tasks = []
        for _ in range(batch):
            tp = ctypes.c_void_p()
            fake.fake_task_alloc_init(ctx, 0, ctypes.byref(tp))
            tasks.append(tp.value)
        submit, progress, p = lib.doca_task_submit, lib.doca_pe_progress, pe.value
        rounds = n // batch

        def loop() -> int:
            done[0] = 0
            for _ in range(rounds):
                for t in tasks:
                    submit(t)
                while progress(p):
                    pass
            return done[0]

        return loop

    b = args.batch
    rt, one = public(args.tasks, b)
    rt1, one1 = public(args.tasks // 4, 1)
    ref, floor, floor1 = bare_calls(args.tasks), raw(args.tasks, b), raw(args.tasks // 4, 1)
    ns = best_ns([ref, floor, rt, floor1, rt1], args.repeats)
    calls = python_calls(one, b)
    calls1 = python_calls(one1, 1)
    return [
        ("bare call (reference)", ns[0], None),
        (f"raw ctypes, {b} in flight", ns[1], None),
        (f"round trip, {b} in flight", ns[2], calls),
        ("raw ctypes, 1 in flight", ns[3], None),
        ("round trip, 1 in flight", ns[4], calls1),
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", choices=("emulated", "native"), default="emulated")
    p.add_argument("--tasks", type=int, default=200_000, help="tasks per timed loop (default: 200000)")
    p.add_argument("--batch", type=int, default=64, help="tasks in flight per round (default: 64)")
    p.add_argument("--size", type=int, default=64, help="bytes copied per task, emulated (default: 64)")
    p.add_argument("--repeats", type=int, default=5, help="timed loops of each measure (default: 5)")
    p.add_argument("--stub-work", action="store_true",
                   help="emulated: the memcpy only advances its destination (no bounds checks, no copy), "
                        "to see what the completion path costs without the engine's work")
    p.add_argument("--libdir", help=argparse.SUPPRESS)  # the child's fake library directory
    args = p.parse_args()
    if args.impl == "native" and args.libdir is None:
        # Build the fake, then run this script again with the native backend selected.
        from tests.native.fakelib import FakeBuildError, build_fake_common

        with tempfile.TemporaryDirectory(prefix="doca_py_bench_") as tmp:
            try:
                build_fake_common(Path(tmp))
            except FakeBuildError as exc:
                print(f"cannot build the fake library: {exc}", file=sys.stderr)
                return 1
            env = dict(os.environ, DOCA_PY_IMPL="native", DOCA_PY_LIBDIR=tmp)
            return subprocess.run([sys.executable, __file__, *sys.argv[1:], "--libdir", tmp], env=env).returncode
    rows = native(args) if args.impl == "native" else emulated(args)
    ref = rows[0][1]
    print(f"{args.impl} backend, {args.tasks} tasks per loop, best of {args.repeats}")
    print()
    print("| measure | ns per task | × bare call | Python calls per task |")
    print("|---|---:|---:|---:|")
    for name, ns, calls in rows:
        print(f"| {name} | {ns:.0f} | {ns / ref:.1f} | {'' if calls is None else f'{calls:.1f}'} |")
    if args.impl == "native":
        # The fake library cannot stop a ctx, so the public objects cannot be closed: leave
        # without running their finalizers (this is the child process of main).
        sys.stdout.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
