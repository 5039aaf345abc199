"""Python calls and CPU per emulated transport task, in steady state (issue 34 item 2).

Two ``Rdma`` contexts in this process, connected over the emulator's same-host transport (``streams``, the
default: a socket and an I/O thread; ``rings``: the shared-memory rings, no thread) or as two hosts
(``tcp``), one ``Pe``:

* ``send``: 64-byte sends, ``--window`` in flight; the peer keeps as many receives posted and re-posts each
  from its completion callback; the sender re-submits each send from its callback (the fast lane:
  ``Task.submitter()``). A message is two transport tasks (a send and a receive).
* ``write``: 4 KiB RDMA writes, ``--window`` in flight, re-submitted from their callback.

**Calls**: cProfile's call count (Python frames and builtin calls) on the ``Pe``'s thread, as the difference
of a long and a short run (load-independent: the set-up and the warm-up cancel), per transport task; also
without the application's own calls (its callbacks, defined here, and the ``reset_data_len`` they call). The I/O
thread's calls (``streams``, ``tcp``) are not in it: they are listed as its own CPU share.
**Time**: process CPU time per transport task, ``--rounds`` rounds with the variants interleaved; the
median and the range.

    .venv/bin/python benchmarks/bench_transport_calls.py [--mode streams|rings|tcp|all] [--window W]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("DOCA_PY_IMPL", "emulated")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import doca_py as d  # noqa: E402
from doca_py.rdma import Rdma  # noqa: E402
from doca_py.types import AccessFlag as A  # noqa: E402
from doca_py.types import CtxState  # noqa: E402

PERMS = A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE


def _submitter(t: d.Task) -> Callable[[], None]:
    """The task's fast-lane submit (``Task.submitter``; ``Task.submit`` on a tree without it, to compare)."""
    fast = getattr(t, "submitter", None)
    return fast() if fast is not None else t.submit


def _reset(b: d.Buf) -> Callable[[], None]:
    lane = getattr(b, "fast_lane", None)
    return lane().reset_data_len if lane is not None else b.reset_data_len
MSG = 64
BLOCK = 4096


class Pair:
    """Two connected Rdma ctxs on one Pe, with their fast-lane workloads."""

    def __init__(self, mode: str, window: int) -> None:
        from doca_py.emulated import rdma as emu

        self.window = window
        self.dev = d.Dev.open_by_pci_addr("03:00.0")
        self.pe = d.Pe()
        self.inv = d.BufInventory(8 * window + 8)
        self.sides: list[tuple[Rdma, d.Mmap]] = []
        self.sent = self.received = self.wrote = 0
        self.left = 0
        self.closing = False
        try:
            emu.configure(shm=mode == "rings", host_id="bench-a" if mode == "tcp" else "")
            a = self._side()
            a.start()
            emu.configure(shm=mode == "rings", host_id="bench-b" if mode == "tcp" else "")
            b = self._side()
            b.start()
        finally:
            emu.configure(shm=False, host_id="")
        blob_a, self.ca = a.export()
        blob_b, self.cb = b.export()
        a.connect(blob_b, self.ca)
        b.connect(blob_a, self.cb)
        self._wait(lambda: a.get_state() == CtxState.RUNNING and b.get_state() == CtxState.RUNNING)
        self.a, self.b = a, b
        (_, self.ma), (_, self.mb) = self.sides
        self.abase, self.bbase = self.ma.get_memrange()[0], self.mb.get_memrange()[0]
        self.remote = d.Mmap.create_from_export(self.mb.export_rdma(self.dev), self.dev)
        self.rbase = self.remote.get_memrange()[0]
        self.tasks: list[d.Task] = []
        self.bufs: list[d.Buf] = []

    def _side(self) -> Rdma:
        r = Rdma(self.dev)
        self.pe.connect_ctx(r)
        r.set_permissions(PERMS)
        mm = d.Mmap()
        mm.allocate(4 << 20)
        mm.set_permissions(PERMS)
        mm.add_dev(self.dev)
        mm.start()
        n = 2 * self.window
        r.task_send_set_conf(self._sent, self._failed, n)
        r.task_receive_set_conf(self._received, self._failed, n)
        r.task_write_set_conf(self._wrote, self._failed, n)
        self.sides.append((r, mm))
        return r

    def _wait(self, cond: Callable[[], bool], timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError("the pair did not get there")
            if not self.pe.progress():
                self.pe.wait(0.05)

    # The callbacks: the task's user data is its submitter (and a buffer lane to reset, for receives).
    def _sent(self, t: Any, submit: Any, c: Any) -> None:
        self.sent += 1
        if self.left > 0:
            self.left -= 1
            submit()

    def _received(self, t: Any, io: Any, c: Any) -> None:
        self.received += 1
        submit, reset = io
        reset()
        submit()

    def _wrote(self, t: Any, io: Any, c: Any) -> None:
        self.wrote += 1
        if self.left > 0:
            self.left -= 1
            submit, reset = io
            reset()  # the remote destination is written from its start again
            submit()

    def _failed(self, t: Any, u: Any, c: Any) -> None:
        if not self.closing:
            raise RuntimeError(f"transport task failed: {t.exception()}")

    def setup_send(self) -> None:
        w = self.window
        for i in range(2 * w):  # receives: more than the sends in flight, re-posted at once
            dst = self.inv.buf_get_by_addr(self.mb, self.bbase + i * MSG, MSG)
            r = self.b.task_receive_allocate_init(dst)
            r.user_data = (_submitter(r), _reset(dst))
            self.tasks.append(r)
            self.bufs.append(dst)
            r.submit()
        src = self.inv.buf_get_by_data(self.ma, self.abase, MSG)
        self.bufs.append(src)
        self.sends = []
        for _ in range(w):
            s = self.a.task_send_allocate_init(self.ca, src)
            s.user_data = _submitter(s)
            self.sends.append(s)
            self.tasks.append(s)

    def run_send(self, n: int) -> int:
        """*n* messages (2n transport tasks); returns the transport tasks completed."""
        start_recv = self.received
        self.sent, self.left = 0, n - len(self.sends)
        for s in self.sends:
            s.user_data()
        pe = self.pe
        while self.sent < n or self.received - start_recv < n:
            if not pe.progress():
                pe.wait(0.5)
        return 2 * n

    def setup_write(self) -> None:
        self.writes = []
        for i in range(self.window):
            src = self.inv.buf_get_by_data(self.ma, self.abase + (64 + i) * BLOCK, BLOCK)
            dst = self.inv.buf_get_by_addr(self.remote, self.rbase + (64 + i) * BLOCK, BLOCK)
            w = self.a.task_write_allocate_init(self.ca, src, dst)
            w.user_data = (_submitter(w), _reset(dst))
            self.bufs += [src, dst]
            self.writes.append(w)
            self.tasks.append(w)

    def run_write(self, n: int) -> int:
        for w in self.writes:
            w.get_dst_buf().reset_data_len()  # type: ignore[attr-defined]
        self.wrote, self.left = 0, n - len(self.writes)
        for w in self.writes:
            w.user_data[0]()
        pe = self.pe
        while self.wrote < n:
            if not pe.progress():
                pe.wait(0.5)
        return n

    def close(self) -> None:
        self.closing = True
        for r in (self.a, self.b):
            if r.get_state() == CtxState.RUNNING:  # a peer's stop may have stopped it already
                r.stop()
        self._wait(lambda: all(not (t._h.inflight) for t in self.tasks))
        for t in self.tasks:
            t.free()
        self._wait(lambda: self.a.get_state() == CtxState.IDLE and self.b.get_state() == CtxState.IDLE)
        for b in self.bufs:
            b.dec_refcount()
        self.remote.close()
        for r, mm in self.sides:
            r.close()
            mm.close()
        self.inv.close()
        self.pe.close()
        self.dev.close()


class ComchPair:
    """A comch server and client in this process, one Pe each; the client sends 64-byte messages, each send task
    re-submitted from its callback (a message is one transport task: the server receives it as an event)."""

    def __init__(self, window: int, shm: bool) -> None:
        import uuid

        from doca_py.comch import ComchClient, ComchServer
        from doca_py.emulated import comch as emu

        emu.configure(shm=shm)
        self.dpu = d.Dev.open_by_pci_addr("03:00.0")
        self.host = d.Dev.open_by_pci_addr("3b:00.0")
        self.spe, self.cpe = d.Pe(), d.Pe()
        self.rep = self.dpu.open_rep_by_pci_addr("3b:00.0")
        name = f"bench-{uuid.uuid4().hex[:8]}"
        self.server = ComchServer(self.dpu, self.rep, name)
        self.spe.connect_ctx(self.server)
        self.got = self.sent = self.left = 0
        self.server.task_send_set_conf(self._failed, self._failed, 4)
        self.server.event_msg_recv_register(self._msg)
        self.client = ComchClient(self.host, name)
        self.cpe.connect_ctx(self.client)
        self.client.task_send_set_conf(self._sent, self._failed, 2 * window)
        self.client.event_msg_recv_register(self._msg)
        self.server.start()
        self.client.start()
        end = time.monotonic() + 20
        while self.client.get_state() != CtxState.RUNNING:
            if time.monotonic() > end:
                raise TimeoutError("comch client did not connect")
            self.spe.progress()
            self.cpe.progress()
        conn = self.client.get_connection()
        self.tasks = [self.client.task_send_alloc_init(conn, bytes(MSG)) for _ in range(window)]
        for t in self.tasks:
            t.user_data = _submitter(t)
        self.closing = False

    def _msg(self, msg: Any, conn: Any) -> None:
        self.got += 1

    def _sent(self, t: Any, submit: Any, c: Any) -> None:
        self.sent += 1
        if self.left > 0:
            self.left -= 1
            submit()

    def _failed(self, t: Any, u: Any, c: Any) -> None:
        if not self.closing:
            raise RuntimeError(f"comch task failed: {t.exception()}")

    def run(self, n: int) -> int:
        start = self.got
        self.sent, self.left = 0, n - len(self.tasks)
        for t in self.tasks:
            t.user_data()
        spe, cpe = self.spe, self.cpe
        while self.sent < n or self.got - start < n:
            a = cpe.progress()
            if not (spe.progress() or a):
                spe.wait(0.01)
        return n

    def close(self) -> None:
        self.closing = True
        for t in self.tasks:
            t.free()
        self.client.stop()
        end = time.monotonic() + 20
        while self.client.get_state() != CtxState.IDLE and time.monotonic() < end:
            self.cpe.progress()
            self.spe.progress()
        self.server.stop()
        while self.server.get_state() != CtxState.IDLE and time.monotonic() < end:
            self.spe.progress()
            self.cpe.progress()
        for o in (self.client, self.server, self.cpe, self.spe, self.rep, self.host, self.dpu):
            o.close()
        from doca_py.emulated import comch as emu

        emu.configure(shm=False)


_HERE = os.path.abspath(__file__)


def _is_app(func: tuple[str, int, str]) -> bool:
    """The application's own calls: its callbacks (this file) and the buffer reset it calls (``reset_data_len``)."""
    return func[2] == "reset_data_len" or os.path.abspath(func[0]) == _HERE


def calls_per_task(run: Callable[[int], int], short: int, long: int) -> tuple[float, float]:
    """cProfile call count per transport task on this thread: (long run - short run) / their task difference;
    with and without the application's own calls (:func:`_is_app`)."""
    counts = []
    for n in (short, long):
        run(n // 4)  # warm: caches, views, pools
        prof = cProfile.Profile()
        prof.enable()
        k = run(n)
        prof.disable()
        stats = pstats.Stats(prof)
        app = sum(v[1] for f, v in stats.stats.items() if _is_app(f))  # type: ignore[attr-defined]
        counts.append((stats.total_calls, app, k))  # type: ignore[attr-defined]
    (c0, a0, k0), (c1, a1, k1) = counts
    return (c1 - c0) / (k1 - k0), ((c1 - a1) - (c0 - a0)) / (k1 - k0)


def writes_per_task(run: Callable[[int], int], n: int) -> float:
    """Socket (or shared-memory ring) writes of the transport per transport task, every thread: the batching
    a data path keeps (fewer calls must not mean more, smaller writes)."""
    from doca_py.emulated.comch.connection import EmuComchConnection
    from doca_py.emulated.transport.stream import Stream

    count = [0]
    saved = [(cls, cls._send_locked) for cls in (Stream, EmuComchConnection)]

    def counting(fn: Any) -> Any:
        def wrapper(self: Any) -> Any:
            count[0] += 1
            return fn(self)
        return wrapper

    for cls, fn in saved:
        cls._send_locked = counting(fn)  # type: ignore[method-assign]
    try:
        k = run(n)
    finally:
        for cls, fn in saved:
            cls._send_locked = fn  # type: ignore[method-assign]
    return count[0] / k


def cpu_per_task(runs: list[Callable[[int], int]], n: int, rounds: int) -> list[list[float]]:
    """Process CPU µs per transport task of each run, *rounds* interleaved rounds."""
    out: list[list[float]] = [[] for _ in runs]
    for run in runs:
        run(n // 4)
    for _ in range(rounds):
        for i, run in enumerate(runs):
            t0 = time.process_time()
            k = run(n)
            out[i].append((time.process_time() - t0) / k * 1e6)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--mode", choices=("streams", "rings", "tcp", "comch", "all"), default="all")
    ap.add_argument("--window", type=int, default=64, help="sends in flight (writes: a quarter of it)")
    ap.add_argument("--messages", type=int, default=20_000, help="messages (writes) per timed run")
    ap.add_argument("--rounds", type=int, default=8, help="interleaved timing rounds")
    ap.add_argument("--time-only", action="store_true", help="skip the call counts (the cross-tree timing rounds)")
    args = ap.parse_args()
    modes = ("streams", "rings", "tcp", "comch") if args.mode == "all" else (args.mode,)
    print(f"emulated transport, {args.messages} per timed run, {args.rounds} rounds; calls: cProfile on the Pe's "
          "thread, (long run - short run) per transport task")
    print()
    print("| transport | workload | calls per transport task | without the app's | writes per 1000 transport tasks "
          "| CPU µs per transport task (median, range) |")
    print("|---|---|---:|---:|---:|---:|")
    for mode in modes:
        if mode == "comch":
            for shm, label in ((False, "comch socket"), (True, "comch rings")):
                cp = ComchPair(args.window, shm)
                try:
                    calls, own = (0.0, 0.0) if args.time_only else calls_per_task(cp.run, args.messages // 4,
                                                                                    args.messages)
                    writes = writes_per_task(cp.run, args.messages)
                    cpu = cpu_per_task([cp.run], args.messages, args.rounds)[0]
                    print(f"| {label} | send {MSG} B, {args.window} in flight | {calls:.2f} | {own:.2f} | "
                          f"{writes * 1000:.0f} | "
                          f"{statistics.median(cpu):.2f} ({min(cpu):.2f}–{max(cpu):.2f}) |", flush=True)
                finally:
                    cp.close()
            continue
        p = Pair(mode, args.window)
        try:
            p.setup_send()
            win = max(2, args.window // 4)
            p.window = win
            p.setup_write()
            none = (0.0, 0.0)
            calls_s = none if args.time_only else calls_per_task(p.run_send, args.messages // 4, args.messages)
            calls_w = none if args.time_only else calls_per_task(p.run_write, args.messages // 4, args.messages)
            writes_s, writes_w = writes_per_task(p.run_send, args.messages), writes_per_task(p.run_write, args.messages)
            cpu_s, cpu_w = cpu_per_task([p.run_send, p.run_write], args.messages, args.rounds)
            for name, calls, writes, cpu in (
                    (f"send/receive {MSG} B, {args.window} in flight", calls_s, writes_s, cpu_s),
                    (f"write {BLOCK >> 10} KiB, {win} in flight", calls_w, writes_w, cpu_w)):
                print(f"| {mode} | {name} | {calls[0]:.2f} | {calls[1]:.2f} | {writes * 1000:.0f} | "
                      f"{statistics.median(cpu):.2f} "
                      f"({min(cpu):.2f}–{max(cpu):.2f}) |", flush=True)
        finally:
            p.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
