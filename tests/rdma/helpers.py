"""Builders shared by the rdma tests: a connected pair of contexts in one process."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.rdma import Rdma, RdmaConnection
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from tests.deadlines import hang

DPU_PCI = "03:00.0"
PERMS = A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC
TASK_TYPES = ("receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cmp_swp", "atomic_fetch_add")
#: Every wait in these tests is bounded by this deadline (seconds); none sleeps.
DEADLINE = hang(20.0)


def backing(x: Any) -> Any:
    """The emulator's object behind *x* (a public object or its backend handle), for the tests that look at
    the emulator's state: the handle itself on the emulated backend; on the native backend over libdoca the
    object libdoca serves the handle's C pointer from (the emulator runs in this process). Skips on a real DOCA."""
    h = getattr(x, "_h", x)
    if type(h).__module__.startswith("doca_py.emulated"):
        return h
    from doca_py.libdoca.serve._core import HANDLES

    o = HANDLES.get(getattr(h, "ptr", None))
    if o is None:
        pytest.skip("the emulator's state behind a native handle: the native backend is not libdoca here")
    return o


def reason(t: d.Task) -> str:
    """Why the emulator failed *t* (``Task.reason``; over libdoca, the reason of the emulator's task behind it:
    DOCA's C API carries only the status)."""
    return str(backing(t).reason)


@dataclass
class Side:
    """One Rdma context with its completions and a 2 MiB shareable mmap."""

    rdma: Rdma
    mm: d.Mmap
    mem: memoryview
    done: list[tuple[str, Any]] = field(default_factory=list)
    events: list[tuple[str, RdmaConnection]] = field(default_factory=list)
    conn: RdmaConnection | None = None

    @property
    def base(self) -> int:
        return self.mm.get_memrange()[0]

    def ok(self, t: Any, u: Any, c: Any) -> None:
        self.done.append(("ok", t))

    def err(self, t: Any, u: Any, c: Any) -> None:
        self.done.append(("err", t))


def make_side(dev: d.Dev, pe: d.Pe, perms: A = PERMS, mm_perms: A = PERMS, num: int = 16,
              conn_cbs: bool = True) -> Side:
    r = Rdma(dev)
    pe.connect_ctx(r)
    r.set_permissions(perms)
    mm = d.Mmap()
    mem = mm.allocate(2 << 20)
    mm.set_permissions(mm_perms)
    mm.add_dev(dev)
    mm.start()
    s = Side(r, mm, mem)
    for name in TASK_TYPES:
        getattr(r, f"task_{name}_set_conf")(s.ok, s.err, num)
    if conn_cbs and has_connection_objects():
        r.set_connection_state_callbacks(
            None,
            lambda c, u, cu: s.events.append(("established", c)),
            lambda c, u, cu: s.events.append(("failure", c)),
            lambda c, u, cu: s.events.append(("disconnection", c)))
    return s


def has_connection_objects() -> bool:
    """Whether the DOCA in use has rdma connection objects and their callbacks (3.0+): DOCA 2.6 has one implicit
    connection per ctx and no ``doca_rdma_set_connection_state_callbacks``."""
    if d.impl == "emulated":
        from doca_py.emulated import version

        return version.VERSION >= (3, 0)
    from doca_py.native.rdma_connection import has_connection_api

    return has_connection_api()


def wait_for(pe: d.Pe, cond: Any, what: str = "condition", deadline: float = DEADLINE) -> None:
    """Progress *pe* until ``cond()`` holds; fail after *deadline* seconds (no sleeping)."""
    end = time.monotonic() + deadline
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        pe.wait(0.5)


def run(pe: d.Pe, side: Side, *tasks: d.Task) -> list[str]:
    """Submit *tasks*, progress until they all completed; their outcomes in completion order."""
    before = len(side.done)
    for t in tasks:
        t.submit()
    wait_for(pe, lambda: len(side.done) >= before + len(tasks), "task completions")
    return [k for k, _ in side.done[before:]]


def connect_pair(pe: d.Pe, a: Side, b: Side) -> None:
    for s in (a, b):
        if s.rdma.get_state() == CtxState.IDLE:
            s.rdma.start()
    blob_a, a.conn = a.rdma.export()
    blob_b, b.conn = b.rdma.export()
    a.rdma.connect(blob_b, a.conn)
    b.rdma.connect(blob_a, b.conn)
    wait_for(pe, lambda: a.rdma.get_state() == CtxState.RUNNING and b.rdma.get_state() == CtxState.RUNNING, "RUNNING")


@contextmanager
def rig(num_bufs: int = 64) -> Iterator[tuple[d.Dev, d.Pe, d.BufInventory]]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(num_bufs) as inv:
        yield dev, pe, inv
        pe.close()
        inv.close()


def listen(rdma: Rdma) -> int:
    """Start listening for RDMA-CM requests on a free port of *rdma*; the port.

    The emulated backend picks one for port 0 and says which. DOCA's C API cannot report the port it
    picked, so on the native backend take a random port below the ephemeral range (no connection is ever
    given one of those by the kernel) and another if a listener has it already (``DocaInUse``, reported
    by the listen itself)."""
    if d.impl == "emulated":
        return rdma.start_listen_to_port(0)
    rng = random.Random()
    for _ in range(64):
        port = rng.randrange(20000, 32768)
        try:
            return rdma.start_listen_to_port(port)
        except e.DocaInUse:
            continue
    raise AssertionError("no free port in [20000, 32768) after 64 tries")


def close_side(s: Side) -> None:
    s.rdma.close()
    s.mm.close()
