"""What the comch applications (File Compression, Secure Channel) share besides `.comch_utils`:
the device flags (`ComchAppConfig`) and the ``main`` skeleton (`run_application`).

DOCA's C applications give their device flags the same names: ``-p/--pci-addr`` (the comch
device, whose side decides server or client) and ``-r/--rep-pci`` (the host's representor, for
the DPU's server).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pydantic import field_validator

from apps.common.cli.argp import run_main, setup_logging
from apps.common.cli.config import CommonConfig, flag
from apps.common.runtime.signals import abort_on_signals

__all__ = ["ComchAppConfig", "run_application"]


class ComchAppConfig(CommonConfig):
    """``-p/--pci-addr`` and ``-r/--rep-pci``, with DOCA's general flags."""

    pci_addr: str = flag(short="-p", metavar="PCI_ADDR",
                         help="DOCA Comch device PCI address (the host's device runs the client, the DPU's the "
                              "server)")
    rep_pci: str = flag("", short="-r", metavar="PCI_ADDR",
                        help="DOCA Comch device representor PCI address (needed only on the DPU, by the server)")

    @field_validator("pci_addr")
    @classmethod
    def _pci(cls, v: str) -> str:
        if not v:
            raise ValueError("the device PCI address must not be empty")
        return v


def run_application(config: ComchAppConfig, run: Callable[[threading.Event], int]) -> int:
    """Set logging up from *config*, then ``run(abort)`` with *abort* set by SIGINT/SIGTERM; an
    exception ends as ``EXCEPTION: <text>`` and exit status 1."""
    setup_logging(config)
    abort = threading.Event()
    with abort_on_signals(abort):
        return run_main(lambda: run(abort))
