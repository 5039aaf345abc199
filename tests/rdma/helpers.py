"""Builders shared by the rdma tests: a connected pair of contexts in one process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaConnection
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from tests.deadlines import hang

DPU_PCI = "03:00.0"
PERMS = A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC
TASK_TYPES = ("receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cmp_swp", "atomic_fetch_add")
#: Every wait in these tests is bounded by this deadline (seconds); none sleeps.
DEADLINE = hang(20.0)


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
    if conn_cbs:
        r.set_connection_state_callbacks(
            None,
            lambda c, u, cu: s.events.append(("established", c)),
            lambda c, u, cu: s.events.append(("failure", c)),
            lambda c, u, cu: s.events.append(("disconnection", c)))
    return s


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


def close_side(s: Side) -> None:
    s.rdma.close()
    s.mm.close()
