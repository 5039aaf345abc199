"""What a side of a ``DocaPair`` run is: its role, device and representor (``open_side``), the ``Side`` its
function gets, and ``FnRef``, how a side finds its function by module and name. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from doca_py import Dev, DevRep

__all__ = ["ROLES", "PeerGone", "open_side", "Side", "FnRef"]

ROLES = ("host", "dpu")
"""The two sides, in the order of results."""


class PeerGone(EOFError):
    """``Side.recv`` found the peer side ended: it returned, failed or died."""



PeerGone.__module__ = "doca_py.testing"  # its public name, in reports


def open_side(role: str) -> tuple[Any, Any]:
    """``(dev, rep)`` of one side of the emulated BlueField: the DPU's device (one with a NET
    representor) and its representor of the host PF, or the host's device (that PF) and ``None``."""
    import doca_py as d

    for info in d.devinfo_create_list():
        dev = info.open()
        reps = dev.rep_create_list(d.DevinfoRepFilter.NET)
        if not reps:
            dev.close()
            continue
        host_pci = reps[0].get_pci_addr_str()
        if role == "dpu":
            return dev, dev.open_rep_by_pci_addr(host_pci)
        dev.close()
        return d.Dev.open_by_pci_addr(host_pci), None
    raise LookupError("no emulated device with a host representor (see DOCA_PY_EMU_DEVICES)")


class Side:
    """What a side's function gets: its role, device, representor and a pipe to the peer.

    :ivar role: ``"host"`` or ``"dpu"``.
    :ivar dev: the side's open ``doca_py.Dev`` (closed by the kit when the function returns).
    :ivar rep: on the DPU side, the ``doca_py.DevRep`` of the host PF; ``None`` on the host.
    :ivar args: the ``args`` given to ``DocaPair.run``.
    :ivar token: a string unique to this run, the same on both sides (for comch server names …).
    :ivar seed: the emulator seed of this run.
    :ivar log: a ``logging.Logger`` whose records end up in the side's log.
    """

    def __init__(self, role: str, dev: Dev, rep: DevRep | None, peer: Connection, args: Any, token: str,
                 seed: int) -> None:
        self.role = role
        self.dev = dev
        self.rep = rep
        self.args = args
        self.token = token
        self.seed = seed
        self.log = logging.getLogger(f"doca_pair.{role}")
        self._peer = peer

    @property
    def peer_role(self) -> str:
        """The other side's role."""
        return "dpu" if self.role == "host" else "host"

    def send(self, obj: Any) -> None:
        """Send a picklable object (an export blob, a descriptor, a result) to the peer."""
        try:
            self._peer.send(obj)
        except (BrokenPipeError, ConnectionResetError):
            raise PeerGone(f"{self.role} side: the {self.peer_role} side has ended; nothing can be sent") from None

    def recv(self, timeout: float = 30.0) -> Any:
        """The next object the peer sent; ``TimeoutError`` after *timeout* seconds, ``PeerGone``
        if the peer ended first."""
        try:
            if not self._peer.poll(timeout):
                raise TimeoutError(f"{self.role} side: nothing from the {self.peer_role} side within {timeout} s")
            return self._peer.recv()
        except (EOFError, ConnectionResetError):
            raise PeerGone(f"{self.role} side: the {self.peer_role} side has ended") from None

    def __repr__(self) -> str:
        return f"<Side {self.role} dev={self.dev!r}>"


@dataclasses.dataclass(frozen=True)
class FnRef:
    """A function named by module, file and qualified name: sent to a spawned side instead of pickling."""

    module: str
    qualname: str
    file: str | None

    @classmethod
    def of(cls, fn: Callable[[Side], Any]) -> FnRef | None:
        """The reference to *fn*, or ``None`` if it cannot be found again by name (a closure, a lambda)."""
        qual = getattr(fn, "__qualname__", "")
        mod = getattr(fn, "__module__", None)
        if not qual or mod is None or "<" in qual:
            return None
        file = getattr(sys.modules.get(mod), "__file__", None)
        return cls(mod, qual, file)

    def resolve(self) -> Callable[[Side], Any]:
        """Import the module (by name, else from its file) and look the function up."""
        try:
            obj: Any = importlib.import_module(self.module)
        except ImportError:
            if self.file is None:
                raise
            spec = importlib.util.spec_from_file_location(self.module, self.file)
            assert spec is not None and spec.loader is not None
            obj = importlib.util.module_from_spec(spec)
            sys.modules[self.module] = obj
            spec.loader.exec_module(obj)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        return obj  # type: ignore[no-any-return]
