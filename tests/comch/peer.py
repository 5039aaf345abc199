"""Child process of the two-process comch tests: ``python -m tests.comch.peer ROLE NAME [RQ]``.

ROLE is ``client`` (host side) or ``server`` (DPU side); RQ the receive-queue size.
Prints ``started`` (or ``error <ERROR_NAME>`` if start fails), then answers one line per
command read from stdin, progressing its Pe between commands:

* ``conn`` → ``conn`` once connected (client RUNNING / first client connected);
* ``send HEX`` → ``sent <status>``; ``msgs N`` → ``msgs HEX,HEX…`` once N messages arrived;
* ``consumer N SIZE [POSTED]`` → ``consumer <id>`` (running, N receive tasks of SIZE bytes, POSTED
  of them — default N — posted and announced to the peer before the answer);
  ``post K`` → ``posted K`` (K more of them posted and announced);
  ``recvd N`` → ``recvd <status>:<producer>:<imm hex>:<data hex> …`` once N receives completed;
  ``drop_consumer`` → ``dropped`` (stopped and closed);
* ``producer`` → ``producer <id>``; ``newcons`` → ``newcons <id>`` (next new_consumer event);
  ``expired`` → ``expired <id>``; ``psend HEX IMMHEX CID`` → ``psent <status>`` (submit is retried
  while it raises ``DocaAgain``, as DOCA's samples do); ``ptry HEX IMMHEX CID`` → ``psent <status>``,
  or ``refused <ERROR_NAME>`` when ``submit`` itself raises;
* ``stall`` → ``stalled``, then never progresses again (the parent kills us);
* ``quit`` → ``bye``.
"""

from __future__ import annotations

import os
import select
import sys
import time
from typing import Any

import doca_py as d
from doca_py.comch import ComchClient, ComchConsumer, ComchProducer, ComchServer
from doca_py.types import CtxState

from .helpers import DEADLINE, DPU_PCI, HOST_PCI


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Peer:
    def __init__(self, role: str, name: str, rq: int) -> None:
        self.role = role
        self.pe = d.Pe()
        self.inv = d.BufInventory(256)
        self.msgs: list[bytes] = []
        self.sent: list[d.ErrorCode] = []
        self.events: list[tuple[str, Any]] = []
        self.recvd: list[Any] = []
        self.psent: list[d.ErrorCode] = []
        self.conns: list[Any] = []
        if role == "client":
            self.dev = d.Dev.open_by_pci_addr(HOST_PCI)
            self.ctx: Any = ComchClient(self.dev, name)
        else:
            self.dev = d.Dev.open_by_pci_addr(DPU_PCI)
            self.ctx = ComchServer(self.dev, self.dev.open_rep_by_pci_addr(HOST_PCI), name)
            self.ctx.event_connection_status_changed_register(lambda c, ok: self.conns.append(c),
                                                              lambda c, ok: self.events.append(("disc", c)))
        self.pe.connect_ctx(self.ctx)
        self.ctx.set_recv_queue_size(rq)
        self.ctx.task_send_set_conf(self._sent, self._sent, 64)
        self.ctx.event_msg_recv_register(lambda m, c: self.msgs.append(bytes(m)))
        self.ctx.event_consumer_register(lambda c, i: self.events.append(("new", i)),
                                         lambda c, i: self.events.append(("expired", i)))
        self.mm = d.Mmap()
        self.mem = self.mm.allocate(1 << 20)
        self.mm.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
        self.mm.add_dev(self.dev)
        self.mm.start()
        self.base = self.mm.get_memrange()[0]
        self.consumer: ComchConsumer | None = None
        self.producer: ComchProducer | None = None
        self.unposted: list[Any] = []
        self.seen = 0

    def post(self, k: int) -> None:
        """Post *k* more receives, and progress until they are announced to the peer."""
        for _ in range(k):
            self.unposted.pop(0).submit()
        while self.pe.progress():
            pass

    def _sent(self, t: Any, u: Any, c: Any) -> None:
        self.sent.append(t.get_status())
        t.free()

    @property
    def conn(self) -> Any:
        return self.ctx.get_connection() if self.role == "client" else self.conns[0]

    def wait(self, cond: Any) -> bool:
        end = time.monotonic() + DEADLINE
        while not cond():
            if time.monotonic() > end:
                return False
            self.pe.wait(0.2)
        return True

    def run(self) -> None:
        try:
            self.ctx.start()
        except d.DocaError as exc:
            out(f"error {d.ErrorCode(exc.code).name}")
            return
        out("started")
        stdin = sys.stdin.fileno()
        buf = b""
        while True:
            self.pe.progress()
            self.pe.request_notification()
            r, _, _ = select.select([stdin, self.pe], [], [], 1.0)
            self.pe.clear_notification()
            if stdin not in r:
                continue
            chunk = os.read(stdin, 65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, _, buf = buf.partition(b"\n")
                if not self.command(line.decode().split()):
                    return

    def command(self, words: list[str]) -> bool:
        cmd, args = words[0], words[1:]
        if cmd == "conn":
            ok = self.wait(lambda: (self.ctx.get_state() == CtxState.RUNNING) if self.role == "client"
                           else bool(self.conns))
            out("conn" if ok else "timeout")
        elif cmd == "send":
            n = len(self.sent)
            self.ctx.task_send_alloc_init(self.conn, bytes.fromhex(args[0] if args else "")).submit()
            out(f"sent {self.sent[n].name}" if self.wait(lambda: len(self.sent) > n) else "timeout")
        elif cmd == "msgs":
            ok = self.wait(lambda: len(self.msgs) >= int(args[0]))
            out("msgs " + ",".join(m.hex() or "-" for m in self.msgs) if ok else "timeout")
            self.msgs.clear()
        elif cmd == "consumer":
            n, size = int(args[0]), int(args[1])
            posted = int(args[2]) if len(args) > 2 else n
            cons = self.consumer = ComchConsumer(self.conn, self.mm)
            self.pe.connect_ctx(cons)
            cons.task_post_recv_set_conf(lambda t, u, c: self.recvd.append(t),
                                         lambda t, u, c: self.recvd.append(t), n)
            cons.start()
            if not self.wait(lambda: cons.get_state() == CtxState.RUNNING):
                out("timeout")
                return True
            self.unposted = [cons.task_post_recv_alloc_init(self.inv.buf_get_by_addr(self.mm, self.base + i * size,
                                                                                     size)) for i in range(n)]
            self.post(posted)
            out(f"consumer {cons.get_id()}")
        elif cmd == "post":
            self.post(int(args[0]))
            out(f"posted {args[0]}")
        elif cmd == "recvd":
            ok = self.wait(lambda: len(self.recvd) >= int(args[0]))
            parts = []
            for t in self.recvd:
                data = bytes(t.get_buf().data_view()) if t.get_status() == 0 else b""
                parts.append(f"{t.get_status().name}:{t.get_producer_id()}:{t.get_imm_data().hex() or '-'}:"
                             f"{data.hex() or '-'}")
            self.recvd.clear()
            out("recvd " + " ".join(parts) if ok else "timeout")
        elif cmd == "drop_consumer":
            assert self.consumer is not None
            self.consumer.close()
            out("dropped")
        elif cmd == "producer":
            prod = self.producer = ComchProducer(self.conn)
            self.pe.connect_ctx(prod)
            prod.task_send_set_conf(lambda t, u, c: self.psent.append(t.get_status()),
                                    lambda t, u, c: self.psent.append(t.get_status()), 64)
            prod.start()
            out(f"producer {prod.get_id()}")
        elif cmd in ("newcons", "expired"):
            kind = "new" if cmd == "newcons" else "expired"
            ok = self.wait(lambda: any(k == kind for k, _ in self.events))
            ids = [i for k, i in self.events if k == kind]
            self.events = [(k, i) for k, i in self.events if k != kind]
            out(f"{cmd} {ids[0]}" if ok else "timeout")
        elif cmd in ("psend", "ptry"):
            assert self.producer is not None
            data, imm, cid = bytes.fromhex(args[0]), bytes.fromhex(args[1]) if args[1] != "-" else b"", int(args[2])
            self.mem[: len(data)] = data
            src = self.inv.buf_get_by_data(self.mm, self.base, len(data))
            n = len(self.psent)
            task = self.producer.task_send_alloc_init(src, imm, cid)
            end = time.monotonic() + DEADLINE
            while True:
                try:
                    task.submit()
                    break
                except d.DocaError as exc:
                    if cmd == "ptry" or exc.code != d.ErrorCode.AGAIN or time.monotonic() > end:
                        task.free()
                        src.close()
                        out(f"refused {d.ErrorCode(exc.code).name}")
                        return True
                    self.pe.wait(0.001)  # the consumer has no receive posted yet
            out(f"psent {self.psent[n].name}" if self.wait(lambda: len(self.psent) > n) else "timeout")
        elif cmd == "stall":
            out("stalled")
            sys.stdin.readline()  # blocks until the parent kills us
            return False
        elif cmd == "quit":
            out("bye")
            return False
        else:
            out(f"unknown {cmd}")
        return True


def main() -> None:
    role, name = sys.argv[1], sys.argv[2]
    rq = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    peer = Peer(role, name, rq)
    peer.run()
    # Exit without tearing down in order: the parent checks that abrupt ends are handled too.
    os._exit(0)


if __name__ == "__main__":
    main()
