"""Child process of the two-process rdma tests: ``python -m tests.rdma.peer``.

A scripted peer driven by lines on stdin; every answer is one line on stdout.
Start: prints ``hello <conn blob hex> <mmap blob hex>``; expects ``connect <conn hex>
<mmap hex>`` and answers ``running`` once the ctx runs. Then commands:

* ``recv N`` — post N receives, answer ``posted``, then one ``rcv <status> <opcode> <len>
  <imm> <hex>`` line per completion;
* ``send HEX IMM|-`` → ``sent <status>``; ``write OFF HEX`` / ``writeimm OFF HEX IMM`` →
  ``wrote <status>`` (into the parent's exported memory); ``read OFF LEN`` → ``read
  <status> <hex>``;
* ``dump OFF LEN`` → ``dump <hex>`` and ``fill OFF HEX`` → ``filled`` (own memory);
* ``hang`` — stop answering (the parent kills us); ``quit`` → ``bye``.

Every wait is bounded; a test that goes wrong ends with ``timeout``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma
from doca_py.types import CtxState

from .helpers import DPU_PCI, PERMS, TASK_TYPES

DEADLINE = 20.0
SLOT = 1 << 16
RECV_BASE = 1 << 20  # receive slots live in the upper MiB of our memory


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> int:
    done: list[tuple[str, Any]] = []
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(256) as inv:
        rdma = Rdma(dev)
        pe.connect_ctx(rdma)
        rdma.set_permissions(PERMS)
        for name in TASK_TYPES:
            getattr(rdma, f"task_{name}_set_conf")(lambda t, u, c: done.append(("ok", t)),
                                                   lambda t, u, c: done.append(("err", t)), 64)
        mm = d.Mmap()
        mem = mm.allocate(2 << 20)
        mm.set_permissions(PERMS)
        mm.add_dev(dev)
        mm.start()
        base = mm.get_memrange()[0]
        rdma.start()
        blob, conn = rdma.export()
        out(f"hello {blob.hex()} {mm.export_rdma(dev).hex()}")
        cmd, peer_conn, peer_mm = sys.stdin.readline().split()
        assert cmd == "connect"
        rdma.connect(bytes.fromhex(peer_conn), conn)
        remote = d.Mmap.create_from_export(bytes.fromhex(peer_mm), dev)
        rbase = remote.get_memrange()[0]

        def wait(cond: Any) -> bool:
            end = time.monotonic() + DEADLINE
            while not cond():
                if time.monotonic() > end:
                    return False
                pe.wait(0.5)
            return True

        if not wait(lambda: rdma.get_state() == CtxState.RUNNING):
            out("timeout")
            return 1
        out("running")

        def one(task: d.Task) -> str:
            n = len(done)
            task.submit()
            if not wait(lambda: len(done) > n):
                return "timeout"
            return done[n][1].get_status().name

        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            op = words[0]
            if op == "recv":
                n = int(words[1])
                bufs = [inv.buf_get_by_addr(mm, base + RECV_BASE + i * SLOT, SLOT) for i in range(n)]
                tasks = [rdma.task_receive_allocate_init(b) for b in bufs]
                start = len(done)
                for t in tasks:
                    t.submit()
                out("posted")
                if not wait(lambda: len(done) >= start + n):
                    out("timeout")
                    return 1
                for t in tasks:  # receives take the messages in the order they were posted (RC)
                    data = bytes(t.get_dst_buf().data_view()) if t.get_dst_buf() is not None else b""
                    out(f"rcv {t.get_status().name} {int(t.get_result_opcode())} {t.get_result_len()} "
                        f"{t.get_result_immediate_data()} {data.hex() or '-'}")
                for t, b in zip(tasks, bufs):
                    t.free()
                    b.dec_refcount()
            elif op == "send":
                data = bytes.fromhex(words[1])
                mem[:len(data)] = data
                src = inv.buf_get_by_data(mm, base, len(data))
                t = rdma.task_send_allocate_init(conn, src) if words[2] == "-" else \
                    rdma.task_send_imm_allocate_init(conn, src, int(words[2]))
                out(f"sent {one(t)}")
                t.free()
                src.dec_refcount()
            elif op in ("write", "writeimm"):
                off, data = int(words[1]), bytes.fromhex(words[2])
                mem[:len(data)] = data
                src = inv.buf_get_by_data(mm, base, len(data))
                dst = inv.buf_get_by_addr(remote, rbase + off, len(data))
                t = rdma.task_write_allocate_init(conn, src, dst) if op == "write" else \
                    rdma.task_write_imm_allocate_init(conn, src, dst, int(words[3]))
                out(f"wrote {one(t)}")
                t.free()
                src.dec_refcount()
                dst.dec_refcount()
            elif op == "read":
                off, n = int(words[1]), int(words[2])
                src = inv.buf_get_by_data(remote, rbase + off, n)
                dst = inv.buf_get_by_addr(mm, base + 4096, n)
                t = rdma.task_read_allocate_init(conn, src, dst)
                status = one(t)
                out(f"read {status} {bytes(dst.data_view()).hex() or '-'}")
                t.free()
                src.dec_refcount()
                dst.dec_refcount()
            elif op == "dump":
                off, n = int(words[1]), int(words[2])
                out(f"dump {bytes(mem[off:off + n]).hex() or '-'}")
            elif op == "fill":
                data = bytes.fromhex(words[2])
                mem[int(words[1]):int(words[1]) + len(data)] = data
                out("filled")
            elif op == "hang":
                sys.stdin.readline()  # the parent kills us while we wait here
                return 0
            elif op == "quit":
                break
            else:
                out(f"unknown {op}")
        inv.close()
        remote.close()
        rdma.close()
        del mem
        mm.close()
    out("bye")
    return 0


if __name__ == "__main__":
    sys.exit(main())
