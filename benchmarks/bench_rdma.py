"""Emulated RDMA between two processes on one host, against raw references in the same run.

* RDMA write and read bandwidth (4 KiB, 64 KiB, 1 MiB; 8 tasks in flight) vs a raw
  shared-memory copy between the same two processes (a memoryview copy into / out of
  a ``multiprocessing.shared_memory`` segment the other process created);
* 64-byte send/receive message rate (64 sends in flight, the peer reposting its
  receives from the completion callback) vs raw batched messaging in Python over a
  loopback TCP socket (64 length-prefixed messages per ``send``, parsed one by one by
  the peer, one acknowledgement per batch): between two processes on this host over
  the streams (the default), over the shared-memory rings (``DOCA_PY_RDMA_SHM=1``),
  and with a child claiming another host id, each against its own reference.

Prints a markdown table.

    .venv/bin/python benchmarks/bench_rdma.py [--time SECONDS]
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing import shared_memory

os.environ.setdefault("DOCA_PY_IMPL", "emulated")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import doca_py as d  # noqa: E402
from doca_py.rdma import Rdma  # noqa: E402
from doca_py.types import AccessFlag as A  # noqa: E402
from doca_py.types import CtxState  # noqa: E402

PERMS = A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE
MEM = 16 << 20
INFLIGHT = 8
MSG = 64
WINDOW = 64
SIZES = (4 << 10, 64 << 10, 1 << 20)


def _wait(pe: d.Pe, cond: Callable[[], bool], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("benchmark peer did not respond")
        if not pe.progress():
            pe.wait(0.1)


# -- the peer process -------------------------------------------------------------------------------
def child() -> None:
    """``--child``: an Rdma peer that keeps receives posted, plus the raw references."""
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe, d.BufInventory(2 * WINDOW + 8) as inv:
        rdma = Rdma(dev)
        pe.connect_ctx(rdma)
        rdma.set_permissions(PERMS)

        def again(t: d.Task, u: object, c: object) -> None:
            t.get_dst_buf().reset_data_len()  # type: ignore[attr-defined]
            t.submit()

        def fail(t: d.Task, u: object, c: object) -> None:
            pass

        rdma.task_receive_set_conf(again, fail, 2 * WINDOW)
        mm = d.Mmap()
        mm.allocate(MEM)
        mm.set_permissions(PERMS)
        mm.add_dev(dev)
        mm.start()
        base = mm.get_memrange()[0]
        shm = shared_memory.SharedMemory(create=True, size=MEM)
        srv = socket.create_server(("127.0.0.1", 0))
        rdma.start()
        blob, conn = rdma.export()
        print(blob.hex(), mm.export_rdma(dev).hex(), shm.name, srv.getsockname()[1], flush=True)
        rdma.connect(bytes.fromhex(sys.stdin.readline().strip()), conn)
        _wait(pe, lambda: rdma.get_state() == CtxState.RUNNING)
        for i in range(2 * WINDOW):
            rdma.task_receive_allocate_init(inv.buf_get_by_addr(mm, base + i * MSG, MSG)).submit()
        # Raw messaging reference: parse 64-byte length-prefixed messages, ack each batch.
        s, _ = srv.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        buf = bytearray()
        hdr = struct.Struct("<I")
        count = 0
        stdin = sys.stdin.fileno()
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(s, selectors.EVENT_READ, "sock")
        sel.register(stdin, selectors.EVENT_READ, "stdin")
        sel.register(pe.fileno(), selectors.EVENT_READ, "pe")
        while True:
            pe.request_notification()
            while pe.progress():
                pass
            for key, _ in sel.select(1.0):
                if key.data == "stdin":
                    if not os.read(stdin, 64):
                        srv.close()
                        s.close()
                        shm.close()
                        shm.unlink()
                        os._exit(0)
                elif key.data == "pe":
                    pe.clear_notification()
                else:
                    try:
                        chunk = s.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        continue
                    buf += chunk
                    pos, n = 0, 0
                    while len(buf) - pos >= 4:
                        (ln,) = hdr.unpack_from(buf, pos)
                        if len(buf) - pos - 4 < ln:
                            break
                        _msg = buf[pos + 4:pos + 4 + ln]
                        pos += 4 + ln
                        n += 1
                    del buf[:pos]
                    count += n
                    if n:
                        s.sendall(struct.pack("<I", n))


# -- the measuring process ----------------------------------------------------------------------------
class Bench:
    def __init__(self, mode: str = "streams") -> None:
        # streams: the default same-host transport; rings: same-host shared-memory rings (DOCA_PY_RDMA_SHM=1,
        # both processes); tcp: the child claims another host id (one-sided access over TCP too).
        from doca_py.emulated import rdma as emu

        emu.configure(shm=mode == "rings")
        env = dict(os.environ, DOCA_PY_RDMA_SHM="1" if mode == "rings" else "0")
        if mode == "tcp":
            env["DOCA_PY_RDMA_HOST_ID"] = "bench-other-host"
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        assert self.p.stdout is not None and self.p.stdin is not None
        conn_hex, mm_hex, shm_name, port = self.p.stdout.readline().split()
        self.dev = d.Dev.open_by_pci_addr("03:00.0")
        self.pe = d.Pe()
        self.inv = d.BufInventory(4 * WINDOW)
        self.rdma = Rdma(self.dev)
        self.pe.connect_ctx(self.rdma)
        self.rdma.set_permissions(PERMS)
        self.done = 0
        self.failed = 0
        for name in ("read", "write", "send"):
            getattr(self.rdma, f"task_{name}_set_conf")(self._ok, self._err, 2 * WINDOW)
        self.mm = d.Mmap()
        self.mem = self.mm.allocate(MEM)
        self.mem[:] = os.urandom(MEM)
        self.mm.set_permissions(PERMS)
        self.mm.add_dev(self.dev)
        self.mm.start()
        self.base = self.mm.get_memrange()[0]
        self.rdma.start()
        blob, self.conn = self.rdma.export()
        self.p.stdin.write(blob.hex() + "\n")
        self.p.stdin.flush()
        self.rdma.connect(bytes.fromhex(conn_hex), self.conn)
        self.remote = d.Mmap.create_from_export(bytes.fromhex(mm_hex), self.dev)
        self.rbase = self.remote.get_memrange()[0]
        _wait(self.pe, lambda: self.rdma.get_state() == CtxState.RUNNING)
        self.shm = shared_memory.SharedMemory(name=shm_name)
        from multiprocessing import resource_tracker

        resource_tracker.unregister(self.shm._name, "shared_memory")  # type: ignore[attr-defined]  # the child owns it
        self.sock = socket.create_connection(("127.0.0.1", int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _ok(self, t: d.Task, u: object, c: object) -> None:
        self.done += 1
        if isinstance(u, d.Buf):
            u.reset_data_len()
        if self.left > 0:
            self.left -= 1
            t.submit()

    def _err(self, t: d.Task, u: object, c: object) -> None:
        self.failed += 1
        raise RuntimeError(f"rdma task failed: {t.get_status().name}")

    def run_tasks(self, tasks: list[d.Task], total: int) -> float:
        """Seconds to complete *total* tasks, keeping all of *tasks* in flight."""
        self.done, self.left = 0, total - len(tasks)
        t0 = time.perf_counter()
        for t in tasks:
            t.submit()
        pe = self.pe
        while self.done < total:
            if not pe.progress():
                pe.wait(1.0)
        return time.perf_counter() - t0

    def bandwidth(self, op: str, size: int, budget: float) -> float:
        n = max(INFLIGHT, min(MEM // size, 16))
        tasks: list[d.Task] = []
        for i in range(INFLIGHT):
            off = (i % n) * size
            local = self.inv.buf_get_by_addr(self.mm, self.base + off, size)
            if op == "write":
                local.set_data(self.base + off, size)
                remote = self.inv.buf_get_by_addr(self.remote, self.rbase + off, size)
                tasks.append(self.rdma.task_write_allocate_init(self.conn, local, remote, user_data=remote))
            else:
                remote = self.inv.buf_get_by_data(self.remote, self.rbase + off, size)
                tasks.append(self.rdma.task_read_allocate_init(self.conn, remote, local, user_data=local))
        total = INFLIGHT * 4
        self.run_tasks(tasks, total)  # warm up
        best = 0.0
        for _ in range(3):
            count, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < budget:
                count += total
                self.run_tasks(tasks, total)
            best = max(best, count * size / (time.perf_counter() - t0) / 1e9)
        for t in tasks:
            b1 = t.get_src_buf()  # type: ignore[attr-defined]
            b2 = t.get_dst_buf()  # type: ignore[attr-defined]
            t.free()
            b1.dec_refcount()
            b2.dec_refcount()
        return best

    def raw_copy(self, op: str, size: int, budget: float) -> float:
        shm = self.shm.buf
        assert shm is not None
        src = self.mem
        best = 0.0
        for _ in range(3):
            count, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < budget:
                for i in range(INFLIGHT):
                    off = i * size
                    if op == "write":
                        shm[off:off + size] = src[off:off + size]
                    else:
                        src[off:off + size] = shm[off:off + size]
                count += INFLIGHT
            best = max(best, count * size / (time.perf_counter() - t0) / 1e9)
        return best

    def msg_rate(self, budget: float) -> float:
        src = self.inv.buf_get_by_data(self.mm, self.base, MSG)
        tasks: list[d.Task] = [self.rdma.task_send_allocate_init(self.conn, src) for _ in range(WINDOW)]
        self.run_tasks(tasks, WINDOW * 4)
        best = 0.0
        for _ in range(3):
            count, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < budget:
                self.run_tasks(tasks, WINDOW * 16)
                count += WINDOW * 16
            best = max(best, count / (time.perf_counter() - t0))
        for t in tasks:
            t.free()
        src.dec_refcount()
        return best

    def raw_msg_rate(self, budget: float) -> float:
        one = struct.pack("<I", MSG) + bytes(MSG)
        batch = one * WINDOW
        s = self.sock
        best = 0.0
        for _ in range(3):
            count, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < budget:
                s.sendall(batch)
                got = 0
                while got < WINDOW:  # acknowledgements may be split or merged
                    data = s.recv(4096)
                    got += sum(struct.unpack_from("<I", data, i)[0] for i in range(0, len(data), 4))
                count += WINDOW
            best = max(best, count / (time.perf_counter() - t0))
        return best

    def close(self) -> None:
        assert self.p.stdin is not None
        self.sock.close()
        self.shm.close()
        self.p.stdin.close()
        self.p.wait(20)
        self.rdma.close()
        self.inv.close()
        self.remote.close()
        del self.mem
        self.mm.close()
        self.pe.close()
        self.dev.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=0.3, help="seconds per measurement round")
    ap.add_argument("--messages-only", action="store_true", help="only the send/receive message rates")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child()
        return
    b = Bench("streams")
    try:
        print("| operation | size | doca_py | reference | ratio |")
        print("|---|---|---:|---:|---:|")
        for op in ("write", "read") if not args.messages_only else ():
            for size in SIZES:
                got = b.bandwidth(op, size, args.time)
                ref = b.raw_copy(op, size, args.time)
                label = f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
                print(f"| RDMA {op} (GB/s) vs shared-memory copy | {label} | {got:.2f} | {ref:.2f} | "
                      f"{got / ref:.2f} |")
        got = b.msg_rate(args.time)
        ref = b.raw_msg_rate(args.time)
        print(f"| send/receive, same host, streams (msgs/s) vs batched TCP messages | {MSG} B | "
              f"{got / 1e3:.0f} k | {ref / 1e3:.0f} k | {got / ref:.3f} |")
    finally:
        b.close()
    for mode, label in (("rings", "same host, shared-memory rings"), ("tcp", "other host id, TCP")):
        b = Bench(mode)
        try:
            got = b.msg_rate(args.time)
            ref = b.raw_msg_rate(args.time)
            print(f"| send/receive, {label} (msgs/s) vs batched TCP messages | {MSG} B | "
                  f"{got / 1e3:.0f} k | {ref / 1e3:.0f} k | {got / ref:.3f} |")
        finally:
            b.close()


if __name__ == "__main__":
    main()
