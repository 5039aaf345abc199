"""Small builders shared by the core tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import doca_py as d

HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"


@dataclass
class Rig:
    """A device, a Pe, an inventory and a started Dma collecting completions."""

    dev: d.Dev
    pe: d.Pe
    inv: d.BufInventory
    dma: d.Dma
    done: list[tuple[str, d.DmaTaskMemcpy, Any, Any]] = field(default_factory=list)

    def drain(self, n: int) -> None:
        """Progress until *n* completions have been collected in total."""
        while len(self.done) < n:
            if not self.pe.progress():
                self.pe.wait(5.0)


@contextmanager
def rig(num_tasks: int = 8, user_data: Any = None, start: bool = True) -> Iterator[Rig]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(32) as inv:
        dma = d.Dma(dev, user_data=user_data)
        pe.connect_ctx(dma)
        r = Rig(dev, pe, inv, dma)
        dma.task_memcpy_set_conf(lambda t, u, c: r.done.append(("ok", t, u, c)),
                                 lambda t, u, c: r.done.append(("err", t, u, c)), num_tasks)
        if start:
            dma.start()
        yield r


def local_mmap(dev: d.Dev, size: int = 1 << 16, perms: d.AccessFlag = d.AccessFlag.LOCAL_READ_WRITE,
               allocate: bool = True) -> d.Mmap:
    mm = d.Mmap()
    if allocate:
        mm.allocate(size)
    else:
        mm.set_memrange(bytearray(size))
    mm.set_permissions(perms)
    mm.add_dev(dev)
    mm.start()
    return mm


def strict_emulator() -> bool:
    """Whether the emulated backend runs in strict mode (the suite's default)."""
    if d.impl != "emulated":
        return False
    from doca_py.emulated import strict

    return strict.STRICT


def in_flight_misuse_error() -> type[Exception]:
    """What freeing or resubmitting a task in flight raises: strict mode names the rule,
    otherwise the backend refuses with BAD_STATE."""
    return d.DocaUsageError if strict_emulator() else d.errors.DocaBadState
