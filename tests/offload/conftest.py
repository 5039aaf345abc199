"""A started context of each offload library, with buffers over one local mmap."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import doca_py as d


@dataclass
class Bench:
    """A device, Pe, inventory and a 4 MiB mmap; ``buf(offset, data)`` writes and wraps bytes."""

    dev: d.Dev
    pe: d.Pe
    inv: d.BufInventory
    mm: d.Mmap
    done: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def base(self) -> int:
        return self.mm.get_memrange()[0]

    def src(self, offset: int, data: bytes) -> d.Buf:
        self.mm.buffer[offset:offset + len(data)] = data
        return self.inv.buf_get_by_data(self.mm, self.base + offset, len(data))

    def dst(self, offset: int, size: int) -> d.Buf:
        return self.inv.buf_get_by_addr(self.mm, self.base + offset, size)

    def callbacks(self) -> tuple[Callable[..., None], Callable[..., None]]:
        return (lambda t, u, c: self.done.append(("ok", t)), lambda t, u, c: self.done.append(("err", t)))

    def run(self, task: d.Task) -> str:
        """Submit, progress until it completes, return "ok" or "err"."""
        before = len(self.done)
        task.submit()
        while len(self.done) == before:
            self.pe.wait(10.0)
        return self.done[-1][0]


@pytest.fixture
def bench(backend: str) -> Iterator[Bench]:
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe, d.BufInventory(64) as inv:
        mm = d.Mmap()
        mm.allocate(4 << 20)
        mm.add_dev(dev)
        mm.start()
        yield Bench(dev, pe, inv, mm)
        pe.close()
        inv.close()
        mm.close()
