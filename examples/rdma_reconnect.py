"""Reconnect after a failed RDMA task: the recipe, in a two-process ping-pong on the emulator.

Each round the host posts a receive and sends ``ping <n>``; the DPU answers ``pong <n>``. Faults
(``--faults``) fail tasks on either side. A failed task ends the connection, not the application: both
sides move to a new connection (a new *generation*), and the round that failed runs again. Run it::

    python examples/rdma_reconnect.py --rounds 30 --faults rdma_send=0.05,rdma_receive=0.05 --seed 3

The recipe (``Link.reconnect``), on each side, whichever side failed first:

1. **Release the old connection** while the ctx still runs: ``conn.disconnect()``. A connection that
   failed keeps its slot of ``max_num_connections`` until it is disconnected, as in DOCA (whose samples
   disconnect from the disconnection callback); disconnecting works whether or not this side has seen
   the loss yet. A ctx that stopped released every connection itself: nothing to disconnect.
2. **Drain**: progress until every task started on the old connection has completed. A task that fails
   (``CONNECTION_RESET`` once the connection is gone) stops its ctx, as any failed task does, so this
   step decides whether the ctx still runs. Receives belong to the ctx, not to a connection: on a ctx that
   still runs they stay posted and take the next message, whichever connection brings it.
3. **Restart a stopped ctx**: progress until IDLE (every task freed), then ``start()`` again.
4. **Export, exchange, connect**: ``export()`` a new connection, send its blob to the peer out of band,
   ``connect()`` with the peer's blob of the same generation.

Step 2 comes before step 4: a side that exports while tasks of the old connection are still in flight can
see its ctx stop *after* its blob went out, when one of them fails, and the new connection dies at once.
``connect`` itself does not fail when the peer went away meanwhile (as ``doca_rdma_connect``, which only
sets up the local side): the connection fails, its tasks report it, and the next reconnection follows.

The sides meet out of band through ``DocaPair``'s pipe: ``("blob", generation, blob)`` both announces a
reconnection and carries the connection blob; ``("done",)`` and ``("bye",)`` end the run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaConnection
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

MSG = 64
"""Bytes of a message buffer."""
TIMEOUT = 30.0
"""Seconds any one wait may take."""
MAX_RECONNECTS = 100
"""Generations after which a side gives up."""


class Finished(Exception):
    """The host said the run is over."""


class Link:
    """One side's RDMA ctx and its current connection, with the bookkeeping the recipe needs."""

    def __init__(self, side: Any, pe: d.Pe, inv: d.BufInventory, mm: d.Mmap, mem: memoryview) -> None:
        self.side, self.pe, self.inv, self.mm, self.mem = side, pe, inv, mm, mem
        self.base = mm.get_memrange()[0]
        self.rdma = Rdma(side.dev)
        pe.connect_ctx(self.rdma)
        self.rdma.set_permissions(A.LOCAL_READ_WRITE)
        self.rdma.task_receive_set_conf(self._ok, self._err, 2)
        self.rdma.task_send_set_conf(self._ok, self._err, 2)
        self.rdma.start()
        self.conn: RdmaConnection | None = None
        self.gen = -1  # the connection's generation (0: the first one)
        self.sends = 0  # send tasks in flight
        self.posted = False  # a receive is posted
        self.got: list[str] = []  # messages received, oldest first
        self.failed: str | None = None  # the first task failure since the last reconnection
        self.peer_blobs: dict[int, bytes] = {}  # the peer's blobs, by generation
        self.refused: list[str] = []  # connects that raised, and why (a forged or replayed blob: never here)
        self.bye = False  # the DPU acknowledged the end of the run
        self.stale = 0  # messages of an old connection, dropped

    # -- completions --------------------------------------------------------------------------
    def _ok(self, task: Any, user_data: Any, ctx_user_data: Any) -> None:
        self._finish(task, user_data, None)

    def _err(self, task: Any, user_data: Any, ctx_user_data: Any) -> None:
        self._finish(task, user_data, task.get_status().name)

    def _finish(self, task: Any, user_data: Any, status: str | None) -> None:
        kind, buf = user_data
        if kind == "receive":
            self.posted = False
            # A receive posted before a reconnection may take a message the old connection delivered
            # before it was released: only the current connection's messages count.
            if status is None and task.get_result_rdma_connection() is self.conn:
                self.got.append(bytes(buf.data_view()).decode())
            elif status is None:
                self.stale += 1
        else:
            self.sends -= 1
        if status is not None and self.failed is None:
            self.failed = f"{kind} failed with {status}"
        buf.dec_refcount()
        task.free()

    # -- tasks --------------------------------------------------------------------------------
    def post_receive(self) -> None:
        """Post a receive unless one is posted (one that survived a reconnection counts)."""
        if not self.posted:
            buf = self.inv.buf_get_by_addr(self.mm, self.base, MSG)
            self.rdma.task_receive_allocate_init(buf, user_data=("receive", buf)).submit()
            self.posted = True
            self.pe.progress()  # posted now (a fault is decided at launch)

    def send(self, text: str) -> None:
        assert self.conn is not None
        word = text.encode()
        buf = self.inv.buf_get_by_data(self.mm, self.base + MSG, MSG)
        self.mem[MSG:MSG + len(word)] = word
        buf.set_data(buf.get_data(), len(word))
        self.rdma.task_send_allocate_init(self.conn, buf, user_data=("send", buf)).submit()
        self.sends += 1

    # -- waiting ------------------------------------------------------------------------------
    def poll_peer(self) -> None:
        """Take what the peer sent meanwhile: blobs are kept by generation; ``done`` raises ``Finished``."""
        while not self.bye:
            try:
                msg = self.side.recv(0)
            except TimeoutError:
                return
            if msg[0] == "bye":  # the DPU's last word: it is ending
                self.bye = True
                return
            if msg[0] == "done":
                self.side.send(("bye",))
                raise Finished
            if msg[0] == "blob" and msg[1] >= self.gen:
                self.peer_blobs[msg[1]] = msg[2]

    def wait(self, cond: Callable[[], bool], what: str) -> None:
        """Progress until *cond()*, taking the peer's messages meanwhile (no sleeping: ``Pe.wait``)."""
        end = time.monotonic() + TIMEOUT
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(f"{self.side.role}: no {what} within {TIMEOUT} s (generation {self.gen})")
            self.pe.wait(0.01)
            self.poll_peer()

    def trouble(self) -> bool:
        """A task failed here, or the peer moved to a new connection."""
        return self.failed is not None or self.gen + 1 in self.peer_blobs

    # -- the recipe ---------------------------------------------------------------------------
    def reconnect(self) -> None:
        """Move both sides to a new connection (the module docstring's four steps)."""
        if self.gen >= MAX_RECONNECTS:
            raise RuntimeError(f"{self.side.role}: gave up after {self.gen} reconnections (last: {self.failed})")
        if self.failed is not None:
            self.side.log.info("generation %d: %s", self.gen, self.failed)
        self.gen += 1
        rdma = self.rdma
        # 1. Release the old connection's slot (a stopped ctx released it already).
        if self.conn is not None and rdma.get_state() == CtxState.RUNNING:
            self.conn.disconnect()
        self.conn = None
        # 2. Drain: the old connection's tasks complete; a failed one stops the ctx.
        self.wait(lambda: self.sends == 0, "completion of the old connection's sends")
        # 3. Restart a stopped ctx.
        if rdma.get_state() in (CtxState.STOPPING, CtxState.IDLE):
            self.wait(lambda: rdma.get_state() == CtxState.IDLE, "IDLE")
            rdma.start()
        self.wait(lambda: rdma.get_state() == CtxState.RUNNING, "RUNNING")
        self.failed = None
        # 4. Export, exchange, connect.
        blob, self.conn = rdma.export()
        self.side.send(("blob", self.gen, blob))
        self.wait(lambda: self.gen in self.peer_blobs, f"connection blob of generation {self.gen} from the peer")
        try:
            rdma.connect(self.peer_blobs.pop(self.gen), self.conn)
        except d.DocaError as exc:  # DOCA: "connection failed"; treated as any failure
            self.refused.append(f"generation {self.gen}: {exc}")
            self.failed = f"connect failed: {exc}"

    def close(self) -> None:
        self.rdma.close()  # stops the ctx: a posted receive is flushed and freed by its callback


def _side(side: Any, body: Callable[[Link], dict[str, Any]]) -> dict[str, Any]:
    from doca_py.emulated import strict

    with d.Pe() as pe, d.BufInventory(4) as inv:
        mm = d.Mmap()
        link = Link(side, pe, inv, mm, mm.allocate(2 * MSG))
        mm.add_dev(side.dev)
        mm.start()
        try:
            out = body(link)
        finally:
            link.close()
            link.mem.release()
            mm.close()
    out.update(generation=link.gen, refused=link.refused, stale=link.stale, faults=strict.injected())
    return out


def _host(link: Link) -> dict[str, Any]:
    rounds = link.side.args
    link.reconnect()
    n = 1
    while n <= rounds:
        if link.trouble():
            link.reconnect()
            continue
        link.got.clear()
        link.post_receive()
        if link.trouble():
            continue
        link.send(f"ping {n}")
        while not (link.got or link.trouble()):
            link.post_receive()  # again, if a stale message took the posted one
            link.wait(lambda: link.got or link.trouble() or not link.posted, f"pong {n}")
        if link.got:
            if link.got != [f"pong {n}"]:
                raise AssertionError(f"host: round {n} got {link.got}")
            link.wait(lambda: link.sends == 0, "the ping's completion")  # success, or a failure seen next round
            n += 1
    link.side.send(("done",))
    link.wait(lambda: link.bye, "the DPU's bye")
    return {"rounds": rounds}


def _dpu(link: Link) -> dict[str, Any]:
    answered = 0
    link.reconnect()
    try:
        while True:
            if link.trouble():
                link.reconnect()
                continue
            link.post_receive()
            link.wait(lambda: link.got or link.trouble() or not link.posted, "ping")
            if not link.got:
                continue
            ping = link.got.pop(0)
            if not ping.startswith("ping "):
                raise AssertionError(f"dpu: got {ping!r}")
            link.send("pong " + ping.split()[1])
            link.wait(lambda: link.sends == 0 or link.trouble(), "the pong's completion")
            answered += 1
    except Finished:
        return {"answered": answered}


def host(side: Any) -> dict[str, Any]:
    """The host's function for ``DocaPair.run`` (``side.args``: the number of rounds)."""
    return _side(side, _host)


def dpu(side: Any) -> dict[str, Any]:
    """The DPU's function for ``DocaPair.run``."""
    return _side(side, _dpu)


def main(argv: list[str] | None = None) -> int:
    from doca_py.testing import DocaPair, Knobs

    parser = argparse.ArgumentParser(description="RDMA ping-pong that reconnects after every failed task")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--faults", default=None, help="DOCA_PY_EMU_FAULTS spec, e.g. rdma_send=0.05")
    parser.add_argument("--seed", type=int, default=None, help="DOCA_PY_EMU_SEED (random when not given)")
    args = parser.parse_args(argv)
    knobs = Knobs.resolve(seed=args.seed, faults=args.faults)
    print(f"knobs: {knobs.describe()}")
    h, p = DocaPair(knobs).run(host, dpu, timeout=300, args=args.rounds)
    print(f"host: {h['rounds']} rounds passed over {h['generation'] + 1} connection(s); "
          f"faults injected: {len(h['faults'])}; connects refused: {h['refused']}; stale messages dropped: {h['stale']}")
    print(f"dpu: answered {p['answered']} pings; faults injected: {len(p['faults'])}; connects refused: "
          f"{p['refused']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
