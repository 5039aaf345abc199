"""Builders shared by the comch tests: a server/client pair in one process, bounded waits."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import doca_py as d
from doca_py.comch import ComchClient, ComchConnection, ComchServer, ComchTaskSend
from doca_py.errors import DocaAgain
from doca_py.types import CtxState

from tests.deadlines import hang

HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"
#: Every wait in these tests is bounded by this deadline (seconds); none sleeps.
DEADLINE = hang(20.0)
ROOT = Path(__file__).resolve().parents[2]


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


def submit_when_posted(task: Any, pes: Sequence[d.Pe], deadline: float = DEADLINE) -> int:
    """Submit a producer send, progressing *pes* while ``submit`` raises ``DocaAgain`` (the remote
    consumer has no receive posted yet), as DOCA's samples loop on ``DOCA_ERROR_AGAIN``.

    Returns how many times ``submit`` refused. Credits reach the producer on the I/O thread,
    which does not wake a ``Pe``, so the idle wait is short."""
    end = time.monotonic() + deadline
    refused = 0
    while True:
        try:
            task.submit()
            return refused
        except DocaAgain:
            refused += 1
        if time.monotonic() > end:
            raise AssertionError("the remote consumer never posted a receive before the deadline")
        busy = False
        for pe in pes:
            busy |= pe.progress()
        if not busy:
            select.select([], [], [], 0.001)


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


# -- two processes (the child is ``python -m tests.comch.peer``) -------------------------------
class Child:
    """The child process; every answer is awaited with a deadline while our Pes progress."""

    def __init__(self, role: str, name: str, pes: list[d.Pe], rq: int = 1024) -> None:
        env = dict(os.environ, DOCA_PY_IMPL="emulated")
        self.p = subprocess.Popen([sys.executable, "-m", "tests.comch.peer", role, name, str(rq)], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.pes = pes
        self.buf = b""
        self.first = self.line()

    def line(self) -> str:
        assert self.p.stdout is not None
        fd = self.p.stdout.fileno()
        while b"\n" not in self.buf:
            got: list[bytes] = []

            def ready() -> bool:
                if select.select([fd], [], [], 0)[0]:
                    got.append(os.read(fd, 1 << 20))
                    return True
                return False

            pump(self.pes, ready, fds=[fd])
            if not got[0]:
                raise AssertionError(f"the child exited (rc={self.p.poll()})")
            self.buf += got[0]
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode().strip()

    def ask(self, cmd: str) -> str:
        assert self.p.stdin is not None
        self.p.stdin.write(cmd.encode() + b"\n")
        self.p.stdin.flush()
        return self.line()

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait(DEADLINE)

    def close(self) -> None:
        if self.p.poll() is None:
            try:
                self.ask("quit")
            except AssertionError:
                pass
        self.kill()
        for f in (self.p.stdin, self.p.stdout):
            if f is not None:
                f.close()


@contextmanager
def server_side(name: str, num_tasks: int = 64) -> Iterator[tuple[Endpoint, d.Dev]]:
    with ExitStack() as st:
        dev = st.enter_context(d.Dev.open_by_pci_addr(DPU_PCI))
        pe = st.enter_context(d.Pe())
        srv = Endpoint(ComchServer(dev, dev.open_rep_by_pci_addr(HOST_PCI), name), pe)
        pe.connect_ctx(srv.ctx)
        srv.configure(num_tasks)
        srv.ctx.event_connection_status_changed_register(lambda c, ok: srv.events.append(("connect", c)),
                                                         lambda c, ok: srv.events.append(("disconnect", c)))
        assert srv.ctx.start() == CtxState.RUNNING
        yield srv, dev


def emulated_connection(conn: ComchConnection) -> Any:
    """The emulator's connection behind *conn*: the emulated backend's handle, or on the native path over
    libdoca (the emulator serving DOCA's C API in this process) the object behind its C handle."""
    h: Any = conn._h
    ptr = getattr(h, "ptr", None)
    if ptr is None:
        return h
    from doca_py.libdoca.serve._core import HANDLES

    e = HANDLES.get(ptr)
    if e is None:
        pytest.skip("needs the emulator's connection: this native backend is not libdoca")
    return e


def until_loss_queued(conn: ComchConnection, deadline: float = DEADLINE) -> None:
    """Wait, without progressing any Pe, until the emulated I/O thread has torn *conn* down (its peer
    died) and posted every event of the loss: they wait in the Pe undelivered, so what the application
    submits now is launched after the ctxs of the connection learnt of the loss (the order a worker's
    send has when the loss lands while a callback submits it). Each round trip to the I/O thread is one
    turn of its loop, which reads what the socket holds; no sleep."""
    from doca_py.emulated.transport.reactor import reactor

    h = emulated_connection(conn)
    r = reactor()

    def turn() -> None:
        done = threading.Event()
        r.call(done.set)  # queued behind the events of the I/O thread's current turn
        assert done.wait(deadline), "the I/O thread did not answer"

    end = time.monotonic() + deadline
    while not h.torn_down:
        if time.monotonic() > end:
            raise AssertionError("the connection was not dropped before the deadline")
        turn()
    turn()  # the teardown that set torn_down has posted all its events


@contextmanager
def child(role: str, name: str, pes: list[d.Pe], rq: int = 1024) -> Iterator[Child]:
    c = Child(role, name, pes, rq)
    try:
        yield c
    finally:
        c.close()


@contextmanager
def client_of_child_server(name: str, num_tasks: int,
                           spawn: Callable[[str, str, list[d.Pe]], AbstractContextManager[Child]] = child
                           ) -> Iterator[tuple[Endpoint, Child]]:
    """A client in this process (its Pe is the endpoint's), RUNNING and connected to the server *name* of
    a child that *spawn* starts (:func:`child` by default)."""
    with d.Dev.open_by_pci_addr(HOST_PCI) as host, d.Pe() as pe:
        cli = Endpoint(ComchClient(host, name), pe)
        pe.connect_ctx(cli.ctx)
        cli.configure(num_tasks)
        with spawn("server", name, [pe]) as ch:
            assert ch.first == "started"
            assert cli.ctx.start() == CtxState.STARTING
            pump([pe], lambda: cli.ctx.get_state() == CtxState.RUNNING)
            assert ch.ask("conn") == "conn"
            yield cli, ch
