"""Cross-process comch message rate: 64-byte control messages, many in flight.

A child process (the host side) sends N messages of 64 bytes to this process (the DPU
side), which counts them in its receive callback. Rate = N / (time from the first to
the last message received).

* ``comch``: a ``ComchClient`` in the child sends with W send tasks in flight (each
  completion frees its task and allocates + submits the next message, or — second row —
  resubmits the completed task, which DOCA allows); a ``ComchServer`` here receives
  through ``Pe.wait`` and the message-received callback. Each row is measured over the
  connection's Unix socket (the default) and over the same-host shared-memory rings
  (``DOCA_PY_COMCH_SHM=1``), in the same run.
* reference, measured in the same run: raw batched Unix-socket messaging in Python — the
  child packs each message into a length-prefixed frame and sends 64 frames per
  ``send``; this process ``recv_into``s a buffer, parses every frame and calls a
  callback with a memoryview of each message.

    .venv/bin/python benchmarks/bench_comch.py [--messages N] [--inflight W] [--rounds R]
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid

os.environ.setdefault("DOCA_PY_IMPL", "emulated")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import doca_py as d  # noqa: E402
from doca_py.comch import ComchClient, ComchServer  # noqa: E402
from doca_py.types import CtxState  # noqa: E402

MSG = bytes(range(64))
LEN = struct.Struct("<I")
BATCH = 64


# -- child side --------------------------------------------------------------------------------------
def child_raw(path: str, n: int) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    buf = bytearray()
    pack = LEN.pack
    for i in range(n):
        buf += pack(len(MSG))
        buf += MSG
        if i % BATCH == BATCH - 1:
            s.sendall(buf)
            del buf[:]
    if buf:
        s.sendall(buf)
    s.recv(1)  # wait for the parent to finish
    s.close()


def child_comch(name: str, n: int, inflight: int, resubmit: bool) -> None:
    with d.Dev.open_by_pci_addr("3b:00.0") as dev, d.Pe() as pe:
        cli = ComchClient(dev, name)
        pe.connect_ctx(cli)
        sent = [0]
        done = [0]
        holder: list[object] = []

        def ok(task: object, ud: object, cud: object) -> None:
            done[0] += 1
            if resubmit:
                if sent[0] < n:
                    sent[0] += 1
                    task.submit()  # type: ignore[attr-defined]
                return
            task.free()  # type: ignore[attr-defined]
            if sent[0] < n:
                sent[0] += 1
                cli.task_send_alloc_init(holder[0], MSG).submit()  # type: ignore[arg-type]

        def err(task: object, ud: object, cud: object) -> None:
            raise SystemExit(f"send failed: {task.get_status()!r}")  # type: ignore[attr-defined]

        cli.task_send_set_conf(ok, err, inflight)
        cli.start()
        while cli.get_state() != CtxState.RUNNING:
            pe.wait(1.0)
        holder.append(cli.get_connection())
        for _ in range(min(inflight, n)):
            sent[0] += 1
            cli.task_send_alloc_init(holder[0], MSG).submit()
        while done[0] < n:
            pe.wait(1.0)
        sys.stdin.readline()  # stay connected until the parent has counted everything


# -- parent side -------------------------------------------------------------------------------------
def run_raw(n: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "raw.sock")
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(path)
        ls.listen(1)
        p = subprocess.Popen([sys.executable, __file__, "--child-raw", path, str(n)])
        s, _ = ls.accept()
        ls.close()
        rx = bytearray(1 << 20)
        mv = memoryview(rx)
        count = [0]

        def cb(m: memoryview) -> None:
            count[0] += 1

        unpack = LEN.unpack_from
        pos = end = 0
        t0 = 0.0
        while count[0] < n:
            got = s.recv_into(mv[end:])
            if not got:
                raise SystemExit("raw child went away")
            if not t0:
                t0 = time.perf_counter()
            end += got
            while end - pos >= 4:
                ln = unpack(rx, pos)[0]
                if end - pos - 4 < ln:
                    break
                m = mv[pos + 4: pos + 4 + ln]
                cb(m)
                m.release()
                pos += 4 + ln
            rest = end - pos
            rx[:rest] = mv[pos:end]
            pos, end = 0, rest
        dt = time.perf_counter() - t0
        s.sendall(b"x")
        s.close()
        p.wait()
        del mv
        return n / dt


def run_comch(n: int, inflight: int, resubmit: bool, rings: bool = False) -> float:
    from doca_py.emulated.comch import config

    config.configure(shm=rings)  # both ends: the child gets the same through its environment
    name = f"bench-{uuid.uuid4().hex}"
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe:
        srv = ComchServer(dev, dev.open_rep_by_pci_addr("3b:00.0"), name)
        pe.connect_ctx(srv)
        count = [0]
        first = [0.0]

        def on_msg(m: memoryview, conn: object) -> None:
            if not count[0]:
                first[0] = time.perf_counter()
            count[0] += 1

        srv.event_msg_recv_register(on_msg)
        srv.task_send_set_conf(lambda *a: None, lambda *a: None, 4)
        srv.start()
        p = subprocess.Popen([sys.executable, __file__, "--child-comch", name, str(n), str(inflight),
                              str(int(resubmit))],
                             stdin=subprocess.PIPE, env=dict(os.environ, DOCA_PY_COMCH_SHM="1" if rings else "0"))
        while count[0] < n:
            pe.wait(1.0)
            if p.poll() is not None and count[0] < n:
                raise SystemExit("comch child went away")
        dt = time.perf_counter() - first[0]
        assert p.stdin is not None
        p.stdin.write(b"\n")
        p.stdin.close()
        p.wait()
        srv.stop()
        return n / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--inflight", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child-raw", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--child-comch", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_raw:
        child_raw(a.child_raw[0], int(a.child_raw[1]))
        return
    if a.child_comch:
        child_comch(a.child_comch[0], int(a.child_comch[1]), int(a.child_comch[2]), a.child_comch[3] == "1")
        return
    raw = comch = again = rcomch = ragain = 0.0
    for _ in range(a.rounds):  # interleaved rounds; best of each (this VM drifts)
        raw = max(raw, run_raw(a.messages))
        comch = max(comch, run_comch(a.messages, a.inflight, False))
        again = max(again, run_comch(a.messages, a.inflight, True))
        rcomch = max(rcomch, run_comch(a.messages, a.inflight, False, rings=True))
        ragain = max(ragain, run_comch(a.messages, a.inflight, True, rings=True))
    print(f"Cross-process 64-byte messages, {a.messages} per round, best of {a.rounds} rounds\n")
    print("| path | messages/s | × reference |")
    print("|---|---:|---:|")
    print(f"| raw batched Unix socket, parse + callback per message (reference) | {raw:,.0f} | 1.00 |")
    print(f"| comch client → server, {a.inflight} in flight, free + alloc_init + submit per message "
          f"| {comch:,.0f} | {comch / raw:.2f} |")
    print(f"| comch client → server, {a.inflight} in flight, completed task resubmitted "
          f"| {again:,.0f} | {again / raw:.2f} |")
    print(f"| same, shared-memory rings, free + alloc_init + submit per message "
          f"| {rcomch:,.0f} | {rcomch / raw:.2f} |")
    print(f"| same, shared-memory rings, completed task resubmitted "
          f"| {ragain:,.0f} | {ragain / raw:.2f} |")


if __name__ == "__main__":
    main()
