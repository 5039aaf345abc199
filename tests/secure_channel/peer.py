"""A Secure Channel host written from the wire format alone, for the two-process tests:
``python -m tests.secure_channel.peer SCENARIO ARGS...`` (comch client of ``secure_channel_server``).

Prints ``ready`` once connected, then ``lost`` when the server goes away, and exits 0. Scenarios:

* ``raw HEX``: send that message as the metadata message;
* ``send N SIZE REAL [DIE_AFTER]``: announce N messages of SIZE bytes, then send messages of REAL
  bytes to the server's consumer (all N, or DIE_AFTER of them and then SIGKILL itself).

``python -m tests.secure_channel.peer server-die``: the DPU side instead (server): once the host's
START arrived, answer START (1000 messages of 64 bytes), print ``dying`` and SIGKILL itself.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
import time
from typing import Any

import doca_py as d
from doca_py.comch import ComchClient, ComchProducer, ComchServer
from doca_py.errors import DocaAgain, DocaError
from doca_py.types import CtxState

DEADLINE = 30.0


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def server_die() -> None:
    pe = d.Pe()
    dev = d.Dev.open_by_pci_addr("03:00.0")
    server = ComchServer(dev, dev.open_rep_by_pci_addr("3b:00.0"), "secure_channel_server")
    pe.connect_ctx(server)
    conns: list[Any] = []
    msgs: list[bytes] = []
    server.event_connection_status_changed_register(lambda c, ok: conns.append(c), lambda c, ok: None)
    server.task_send_set_conf(lambda t, u, c: t.free(), lambda t, u, c: t.free(), 16)
    server.event_msg_recv_register(lambda m, c: msgs.append(bytes(m)))
    server.start()
    out("ready")
    end = time.monotonic() + DEADLINE
    while not (conns and msgs) and time.monotonic() < end:
        pe.wait(0.05)
    server.task_send_alloc_init(conns[0], struct.pack("<I", 0) + struct.pack(">II", 1000, 64)).submit()
    while pe.get_num_inflight_tasks():
        pe.wait(0.05)
    out("dying")
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    scenario = sys.argv[1]
    if scenario == "server-die":
        server_die()
    pe = d.Pe()
    dev = d.Dev.open_by_pci_addr("3b:00.0")
    client = ComchClient(dev, "secure_channel_server")
    pe.connect_ctx(client)
    consumers: list[int] = []
    client.task_send_set_conf(lambda t, u, c: t.free(), lambda t, u, c: t.free(), 16)
    client.event_msg_recv_register(lambda m, c: None)
    client.event_consumer_register(lambda c, i: consumers.append(i), lambda c, i: None)
    client.start()

    def until(cond: Any) -> None:
        end = time.monotonic() + DEADLINE
        while not cond():
            if time.monotonic() > end:
                out("deadline")
                os._exit(3)
            pe.wait(0.05)

    until(lambda: client.get_state() == CtxState.RUNNING)
    out("ready")
    conn = client.get_connection()
    if scenario == "raw":
        client.task_send_alloc_init(conn, bytes.fromhex(sys.argv[2])).submit()
    else:
        n, size, real = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        die_after = int(sys.argv[5]) if len(sys.argv) > 5 else None
        client.task_send_alloc_init(conn, struct.pack("<I", 0) + struct.pack(">II", n, size)).submit()
        until(lambda: consumers)
        mm = d.Mmap()
        mm.set_memrange(bytearray(real))
        mm.set_permissions(d.AccessFlag.PCI_READ_ONLY)
        mm.add_dev(dev)
        mm.start()
        inv = d.BufInventory(1)
        buf = inv.buf_get_by_data(mm, mm.get_memrange()[0], real)
        producer = ComchProducer(conn)
        pe.connect_ctx(producer)
        acked: list[int] = []
        producer.task_send_set_conf(lambda t, u, c: acked.append(1), lambda t, u, c: acked.append(0), 1)
        producer.start()
        task = producer.task_send_alloc_init(buf, None, consumers[0])
        for i in range(n if die_after is None else die_after):
            try:
                while True:
                    try:
                        task.submit()
                        break
                    except DocaAgain:
                        pe.wait(0.01)
            except DocaError:
                break  # the server stopped its consumer (it refused a message) or went away
            until(lambda: len(acked) > i or client.get_state() != CtxState.RUNNING)
            if client.get_state() != CtxState.RUNNING or not acked[-1]:
                break
        if die_after is not None:
            out("dying")
            os.kill(os.getpid(), signal.SIGKILL)
    until(lambda: client.get_state() != CtxState.RUNNING)
    out("lost")
    os._exit(0)


if __name__ == "__main__":
    main()
