"""Builders shared by the comch tests: a server/client pair in one process, bounded waits."""

from __future__ import annotations

import select
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.comch import ComchClient, ComchConnection, ComchServer, ComchTaskSend
from doca_py.types import CtxState

HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"
#: Every wait in these tests is bounded by this deadline (seconds); none sleeps.
DEADLINE = 20.0


def unique_name(tag: str = "t") -> str:
    """A server name no other test (or xdist worker) uses."""
    return f"{tag}-{uuid.uuid4().hex}"


def pump(pes: Sequence[d.Pe], until: Callable[[], bool], deadline: float = DEADLINE,
         fds: Sequence[int] = ()) -> None:
    """Progress *pes* until ``until()`` holds, sleeping on their notification handles (and *fds*)."""
    end = time.monotonic() + deadline
    while not until():
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError("condition not reached before the deadline")
        busy = False
        for pe in pes:
            busy |= pe.progress()
        if busy:
            continue
        for pe in pes:
            pe.request_notification()
        select.select([*pes, *fds], [], [], min(left, 0.2))
        for pe in pes:
            pe.clear_notification()


@dataclass
class Endpoint:
    """A server or client with what its callbacks saw."""

    ctx: Any
    pe: d.Pe
    msgs: list[tuple[bytes, ComchConnection]] = field(default_factory=list)
    sent: list[tuple[str, ComchTaskSend, d.ErrorCode]] = field(default_factory=list)
    events: list[tuple[str, Any]] = field(default_factory=list)

    def ok(self, t: ComchTaskSend, u: Any, c: Any) -> None:
        self.sent.append(("ok", t, t.get_status()))

    def err(self, t: ComchTaskSend, u: Any, c: Any) -> None:
        self.sent.append(("err", t, t.get_status()))

    def on_msg(self, msg: memoryview, conn: ComchConnection) -> None:
        self.msgs.append((bytes(msg), conn))

    def configure(self, num_tasks: int = 16) -> None:
        self.ctx.task_send_set_conf(self.ok, self.err, num_tasks)
        self.ctx.event_msg_recv_register(self.on_msg)
        self.ctx.event_consumer_register(lambda c, i: self.events.append(("new_consumer", i)),
                                         lambda c, i: self.events.append(("expired_consumer", i)))

    def ids(self, kind: str) -> list[int]:
        return [v for k, v in self.events if k == kind]


@dataclass
class Pair:
    dpu: d.Dev
    host: d.Dev
    rep: d.DevRep
    server: Endpoint
    client: Endpoint
    name: str

    @property
    def pes(self) -> list[d.Pe]:
        return [self.server.pe, self.client.pe]

    def pump(self, until: Callable[[], bool]) -> None:
        pump(self.pes, until)

    @property
    def sconn(self) -> ComchConnection:
        conns = [c for k, c in self.server.events if k == "connect"]
        return conns[0]

    @property
    def cconn(self) -> ComchConnection:
        return self.client.ctx.get_connection()  # type: ignore[no-any-return]


@contextmanager
def pair(num_tasks: int = 16, start: bool = True, configure: Callable[[ComchServer, ComchClient], None] | None = None
         ) -> Iterator[Pair]:
    """A started server on the DPU device and a client on the host device, connected."""
    name = unique_name()
    with ExitStack() as st:
        dpu = st.enter_context(d.Dev.open_by_pci_addr(DPU_PCI))
        host = st.enter_context(d.Dev.open_by_pci_addr(HOST_PCI))
        spe = st.enter_context(d.Pe())
        cpe = st.enter_context(d.Pe())
        rep = dpu.open_rep_by_pci_addr(HOST_PCI)
        srv = Endpoint(ComchServer(dpu, rep, name), spe)
        spe.connect_ctx(srv.ctx)
        srv.configure(num_tasks)
        srv.ctx.event_connection_status_changed_register(lambda c, ok: srv.events.append(("connect", c)),
                                                         lambda c, ok: srv.events.append(("disconnect", c)))
        cli = Endpoint(ComchClient(host, name), cpe)
        cpe.connect_ctx(cli.ctx)
        cli.configure(num_tasks)
        if configure is not None:
            configure(srv.ctx, cli.ctx)
        p = Pair(dpu, host, rep, srv, cli, name)
        if start:
            assert srv.ctx.start() == CtxState.RUNNING
            assert cli.ctx.start() == CtxState.STARTING
            p.pump(lambda: cli.ctx.get_state() == CtxState.RUNNING and any(k == "connect" for k, _ in srv.events))
        yield p


def local_mmap(dev: d.Dev, size: int = 1 << 16) -> tuple[d.Mmap, memoryview]:
    mm = d.Mmap()
    mem = mm.allocate(size)
    mm.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
    mm.add_dev(dev)
    mm.start()
    return mm, mem


def free_all(ctx: d.Ctx) -> None:
    """Free every allocated task that is not in flight (so a stopping ctx can go IDLE)."""
    for t in list(ctx._tasks):
        if t._allocated and not t._h.inflight:
            t.free()
