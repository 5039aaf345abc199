"""A File Compression peer written from the wire format alone, for the two-process tests:
``python -m tests.file_compression.peer ROLE SCENARIO ARGS...``.

It does not use the app's code: raw doca_py comch, ``struct`` and ``zlib``. Prints ``ready`` once
its comch ctx is started, then the outcome lines named below, and exits 0.

``server OUTDIR ANSWER [DIE_AFTER]``: serve ``file_compression_server`` for one client; write
``info.json`` (checksum, num_segs, segment lengths) and ``data.bin`` (the segments joined) to
OUTDIR once every announced segment arrived, answer ANSWER (``finish`` = the C app's finish
message, else that text), print ``answered``, wait for the client to go. With DIE_AFTER=K it
SIGKILLs itself after K segments, mid-file (SIGSTOPs itself when ``$PEER_STOP`` is set).

``client SCENARIO FILE [K]``: connect, send one crafted transfer of FILE, print
``answer <text>`` (the server's answer) or ``lost`` (the server went away). Scenarios:
``good``, ``short-info`` (12-byte file info), ``long-info`` (20 bytes), ``bad-checksum``,
``truncated-stream`` (half the DEFLATE stream, announced as the whole), ``die-after`` (K of the
segments, then SIGKILL itself), ``stall-after`` (K segments, then nothing: the parent kills it),
``pause-after`` (K segments, then only wait for the answer).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import doca_py as d
from doca_py.comch import ComchClient, ComchServer, cap_get_max_msg_size
from doca_py.errors import DocaNoMemory
from doca_py.types import CtxState

HOST_PCI, DPU_PCI = "3b:00.0", "03:00.0"
NAME = "file_compression_server"
FINISH = b"Server was done receiving messages\0"
DEADLINE = 30.0


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Peer:
    def __init__(self, server: bool) -> None:
        self.pe = d.Pe()
        self.msgs: list[bytes] = []
        self.conns: list[Any] = []
        self.gone = False
        self.dev = d.Dev.open_by_pci_addr(DPU_PCI if server else HOST_PCI)
        self.max_msg = cap_get_max_msg_size(self.dev.as_devinfo())
        if server:
            self.rep = self.dev.open_rep_by_pci_addr(HOST_PCI)
            self.ctx: Any = ComchServer(self.dev, self.rep, NAME)
            self.ctx.event_connection_status_changed_register(lambda c, ok: self.conns.append(c),
                                                              lambda c, ok: setattr(self, "gone", True))
        else:
            self.ctx = ComchClient(self.dev, NAME)
        self.ctx.set_max_msg_size(self.max_msg)
        self.pe.connect_ctx(self.ctx)
        self.ctx.task_send_set_conf(lambda t, u, c: t.free(), lambda t, u, c: t.free(), 1024)
        self.ctx.event_msg_recv_register(lambda m, c: self.msgs.append(bytes(m)))
        self.ctx.start()
        out("ready")

    def until(self, cond: Any) -> None:
        end = time.monotonic() + DEADLINE
        while not cond():
            if time.monotonic() > end:
                out("deadline")
                sys.exit(3)
            self.pe.wait(0.05)

    def lost(self) -> bool:
        return self.gone if isinstance(self.ctx, ComchServer) else self.ctx.get_state() != CtxState.RUNNING

    def send(self, data: bytes) -> None:
        conn = self.conns[0] if self.conns else self.ctx.get_connection()
        while True:
            try:
                task = self.ctx.task_send_alloc_init(conn, data)
                break
            except DocaNoMemory:
                self.pe.wait(0.05)
        task.submit()
        self.pe.progress()


def serve(outdir: Path, answer: str, die_after: int | None) -> None:
    p = Peer(server=True)
    p.until(lambda: p.conns)
    p.until(lambda: p.msgs)
    checksum, num_segs = struct.unpack(">QI4x", p.msgs[0])
    seen = 0

    def enough() -> bool:
        nonlocal seen
        seen = len(p.msgs) - 1
        if die_after is not None and seen >= die_after:
            os.kill(os.getpid(), signal.SIGSTOP if os.environ.get("PEER_STOP") else signal.SIGKILL)
        return seen >= num_segs

    p.until(enough)
    segs = p.msgs[1:1 + num_segs]
    (outdir / "info.json").write_text(json.dumps({"size": len(p.msgs[0]), "checksum": checksum,
                                                  "num_segs": num_segs, "seg_lens": [len(s) for s in segs],
                                                  "max_msg": p.max_msg}))
    (outdir / "data.bin").write_bytes(b"".join(segs))
    p.send(FINISH if answer == "finish" else answer.encode() + b"\0")
    out("answered")
    p.until(lambda: p.gone)


def client(scenario: str, path: Path, k: int) -> None:
    data = path.read_bytes()
    c = zlib.compressobj(-1, zlib.DEFLATED, -15, 9)
    stream = c.compress(data) + c.flush()
    checksum = (zlib.adler32(data) << 32) | zlib.crc32(data)
    if scenario == "bad-checksum":
        checksum ^= 1
    if scenario == "truncated-stream":
        stream = stream[:len(stream) // 2]
    p = Peer(server=False)
    p.until(lambda: p.ctx.get_state() == CtxState.RUNNING)
    segs = [stream[i:i + p.max_msg] for i in range(0, len(stream), p.max_msg)]
    info = struct.pack(">QI4x", checksum, len(segs))
    if scenario == "short-info":
        p.send(info[:12])
    elif scenario == "long-info":
        p.send(info + b"\0" * 4)
    else:
        p.send(info)
        for i, seg in enumerate(segs):
            if scenario == "pause-after" and i == k:
                p.until(lambda: p.pe.get_num_inflight_tasks() == 0)
                out("stalled")
                break
            if scenario in ("die-after", "stall-after") and i == k:
                p.until(lambda: p.pe.get_num_inflight_tasks() == 0)  # the K segments are on the wire
                out("stalled")
                if scenario == "die-after":
                    os.kill(os.getpid(), signal.SIGKILL)
                while True:
                    time.sleep(1)  # the parent kills us
            p.send(seg)
    p.until(lambda: p.msgs or p.lost())
    out("answer " + p.msgs[0].split(b"\0", 1)[0].decode() if p.msgs else "lost")
    p.ctx.stop()
    p.until(lambda: p.ctx.get_state() == CtxState.IDLE)


if __name__ == "__main__":
    role = sys.argv[1]
    if role == "server":
        serve(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
    else:
        client(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    os._exit(0)
