"""A DMA Copy peer written from the C structs of ``dma_copy_core.h`` alone, for the two-process tests:
``python -m tests.dma_copy.peer ROLE FILE SCENARIO``.

It does not use the app's code: raw doca_py comch, mmap and DMA, and ``struct``. The layouts, as an
LP64 little-endian C compiler lays them out:

* direction: ``<I`` type 1, ``?`` file_in_host, 3 pad, ``>Q`` file_size (``htonq``) — 16 bytes;
* export descriptor: ``<I`` type 2, 4 pad, ``>Q`` host_addr, ``>Q`` export_desc_len, the export — 24 + n;
* status: ``<I`` type 3, ``?`` is_success, 3 pad — 8 bytes.

Prints ``ready`` once its comch ctx is started, ``recv <hex>`` for every message it receives, then
``lost`` when the app went away or ``done`` when its part is over, and exits 0.

``dpu FILE SCENARIO``: the server ``dma copy server``; FILE is its file (sent when it exists,
written otherwise). ``good``: the C DPU (answer, import, DMA, write, success status); ``fail``: a
failure status as the answer; ``die-after-export``: SIGKILL itself once the export arrived; ``stall-after-export``: print
``stalled`` then, and only wait for a message;
``raw:HEX``: answer the direction with those bytes; ``then:HEX``: answer properly, then send those
bytes instead of doing the DMA.

``host FILE SCENARIO``: the client, FILE as for the DPU. ``good``: the C host (direction, export,
status, write); ``die-after-direction``: SIGKILL itself once the DPU answered; ``stall-after-direction``: print
``stalled`` then, and only wait for a message; ``raw:HEX``: send
those bytes as the first message; ``then:HEX``: send the direction, then those bytes instead of the
export; ``announce:N``: announce a file of N bytes on the host without having it; ``shift:N``: as ``good``, with
the buffer's address moved by N bytes in the export descriptor.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
import time
from pathlib import Path
from typing import Any

import doca_py as d
from doca_py.comch import ComchClient, ComchServer, cap_get_max_msg_size
from doca_py.errors import DocaNoMemory
from doca_py.types import CtxState

from tests.deadlines import hang

HOST_PCI, DPU_PCI = "3b:00.0", "03:00.0"
NAME = "dma copy server"
DEADLINE = hang(30.0)


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def direction(file_in_host: bool, size: int) -> bytes:
    return struct.pack("<I?3x", 1, file_in_host) + struct.pack(">Q", size)


def status(ok: bool) -> bytes:
    return struct.pack("<I?3x", 3, ok)


def export(addr: int, desc: bytes) -> bytes:
    return struct.pack("<I4x", 2) + struct.pack(">QQ", addr, len(desc)) + desc


class Peer:
    def __init__(self, server: bool) -> None:
        self.server = server
        self.pe = d.Pe()
        self.msgs: list[bytes] = []
        self.conns: list[Any] = []
        self.gone = False
        self.dev = d.Dev.open_by_pci_addr(DPU_PCI if server else HOST_PCI)
        max_msg = cap_get_max_msg_size(self.dev.as_devinfo())
        if server:
            self.rep = self.dev.open_rep_by_pci_addr(HOST_PCI)
            self.ctx: Any = ComchServer(self.dev, self.rep, NAME)
            self.ctx.event_connection_status_changed_register(lambda c, ok: self.conns.append(c),
                                                              lambda c, ok: setattr(self, "gone", True))
        else:
            self.ctx = ComchClient(self.dev, NAME)
        self.ctx.set_max_msg_size(max_msg)
        self.pe.connect_ctx(self.ctx)
        self.ctx.task_send_set_conf(lambda t, u, c: t.free(), lambda t, u, c: t.free(), 64)
        self.ctx.event_msg_recv_register(lambda m, c: self.msgs.append(bytes(m)))
        self.ctx.start()
        out("ready")
        self.until(lambda: self.conns if server else self.ctx.get_state() == CtxState.RUNNING)

    def until(self, cond: Any) -> None:
        end = time.monotonic() + DEADLINE
        while not cond():
            if time.monotonic() > end:
                out("deadline")
                sys.exit(3)
            self.pe.wait(0.05)

    def lost(self) -> bool:
        return self.gone if self.server else self.ctx.get_state() != CtxState.RUNNING

    def send(self, data: bytes) -> None:
        conn = self.conns[0] if self.server else self.ctx.get_connection()
        while True:
            try:
                task = self.ctx.task_send_alloc_init(conn, data)
                break
            except DocaNoMemory:
                self.pe.wait(0.05)
        task.submit()
        self.until(lambda: self.ctx.get_num_inflight_tasks() == 0)

    def recv(self) -> bytes | None:
        """The next message (printed), or ``None`` (``lost`` printed) once the app went away."""
        self.until(lambda: self.msgs or self.lost())
        if not self.msgs:
            out("lost")
            return None
        msg = self.msgs.pop(0)
        out("recv " + msg.hex())
        return msg

    def finish(self) -> None:
        """Wait for the app to go (it does once it has what it waited for), then leave."""
        out("done")
        if self.server:
            self.until(lambda: self.gone)
        else:
            self.ctx.stop()
            self.until(lambda: self.ctx.get_state() == CtxState.IDLE)


def local_size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def dma(dev: d.Dev, path: Path, size: int, to_host: bool, addr: int, desc: bytes) -> None:
    """The DPU's copy: one memcpy task between its buffer and the host's export."""
    pe = d.Pe()
    engine = d.Dma(dev)
    results: list[Any] = []
    engine.task_memcpy_set_conf(lambda t, u, c: results.append(True), lambda t, u, c: results.append(t.get_status()),
                                1)
    pe.connect_ctx(engine)
    engine.start()
    inv = d.BufInventory(2)
    mine = d.Mmap()
    mine.add_dev(dev)
    mem = mine.allocate(size)
    mine.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
    mine.start()
    if to_host:
        mem[:] = path.read_bytes()
    remote = d.Mmap.create_from_export(desc, dev)
    rbuf = inv.buf_get_by_addr(remote, addr, size)
    lbuf = inv.buf_get_by_addr(mine, mine.get_memrange()[0], size)
    src, dst = (lbuf, rbuf) if to_host else (rbuf, lbuf)
    src.set_data(src.get_data(), size)
    task = engine.task_memcpy_alloc_init(src, dst)
    task.submit()
    end = time.monotonic() + DEADLINE
    while not results and time.monotonic() < end:
        pe.wait(0.05)
    assert results == [True], results
    task.free()
    if not to_host:
        path.write_bytes(bytes(mem))
    lbuf.dec_refcount()
    rbuf.dec_refcount()
    engine.stop()
    for obj in (remote, mine, inv, engine, pe):
        obj.close()


def dpu(path: Path, scenario: str) -> None:
    p = Peer(server=True)
    local = local_size(path)
    msg = p.recv()
    if msg is None:
        return
    if scenario == "fail":
        p.send(status(False))
        return p.finish()
    if scenario.startswith("raw:"):
        p.send(bytes.fromhex(scenario[4:]))
        p.recv()
        return p.finish()
    file_in_host = msg[4] != 0
    size = local if local is not None else struct.unpack(">Q", msg[8:16])[0]
    p.send(direction(local is None, local or 0))
    msg = p.recv()
    if msg is None or msg[:4] != struct.pack("<I", 2):
        return p.finish()
    if scenario == "die-after-export":
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario == "stall-after-export":
        out("stalled")
        p.recv()
        return p.finish()
    if scenario.startswith("then:"):
        p.send(bytes.fromhex(scenario[5:]))
        p.recv()
        return p.finish()
    addr, n = struct.unpack(">QQ", msg[8:24])
    assert file_in_host == (local is None)
    dma(p.dev, path, size, local is not None, addr, msg[24:24 + n])
    p.send(status(True))
    p.finish()


def host(path: Path, scenario: str) -> None:
    p = Peer(server=False)
    local = local_size(path)
    if scenario.startswith("raw:"):
        p.send(bytes.fromhex(scenario[4:]))
        p.recv()
        return p.finish()
    if scenario.startswith("announce:"):
        p.send(direction(True, int(scenario[9:])))
        p.recv()
        return p.finish()
    p.send(direction(local is not None, local or 0))
    msg = p.recv()
    if msg is None or msg[:4] != struct.pack("<I", 1):
        return p.finish()
    if scenario == "die-after-direction":
        os.kill(os.getpid(), signal.SIGKILL)
    if scenario == "stall-after-direction":
        out("stalled")
        p.recv()
        return p.finish()
    if scenario.startswith("then:"):
        p.send(bytes.fromhex(scenario[5:]))
        p.recv()
        return p.finish()
    size = local if local is not None else struct.unpack(">Q", msg[8:16])[0]
    mm = d.Mmap()
    mm.add_dev(p.dev)
    mem = mm.allocate(size)
    mm.set_permissions(d.AccessFlag.PCI_READ_ONLY if local is not None else d.AccessFlag.PCI_READ_WRITE)
    if local is not None:
        mem[:] = path.read_bytes()
    mm.start()
    shift = int(scenario[6:]) if scenario.startswith("shift:") else 0
    p.send(export(mm.get_memrange()[0] + shift, mm.export_pci(p.dev)))
    msg = p.recv()
    if msg == status(True) and local is None:
        path.write_bytes(bytes(mem))
    mm.close()
    p.finish()


if __name__ == "__main__":
    role, file, scenario = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    (dpu if role == "dpu" else host)(file, scenario)
    os._exit(0)
