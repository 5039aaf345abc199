"""The DMA Copy flags: those of NVIDIA's ``doca_dma_copy`` (DOCA argp, ``--json`` too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import field_validator

from doca_py.types import DEVINFO_PCI_ADDR_SIZE

from apps.common.cli.config import flag
from apps.common.comch_app import ComchAppConfig

__all__ = ["DmaCopyConfig", "MAX_ARG_SIZE"]

MAX_ARG_SIZE = 128
"""``MAX_ARG_SIZE``: the C buffer of ``--file``, so the path has at most 127 bytes."""


class DmaCopyConfig(ComchAppConfig):
    """``doca_dma_copy``: ``-f``, ``-p``, ``-r``."""

    file: Path = flag(short="-f", metavar="FILE",
                      help="Full path to file to be copied/created after a successful DMA copy (the side where it "
                           "is a readable file sends it, the other side creates it)")
    pci_addr: str = flag(short="-p", metavar="PCI_ADDR",
                         help="DOCA Comch device PCI address (also the DMA device; the host's device runs the "
                              "client, the DPU's the server)")
    rep_pci: str = flag("", short="-r", metavar="PCI_ADDR",
                        help="DOCA Comch device representor PCI address (needed only on DPU)")

    @field_validator("pci_addr", "rep_pci")
    @classmethod
    def _pci_size(cls, v: str) -> str:
        if len(v.encode()) >= DEVINFO_PCI_ADDR_SIZE:
            raise ValueError(f"entered device PCI address exceeding the maximum size of {DEVINFO_PCI_ADDR_SIZE - 1}")
        return v

    @field_validator("file", mode="before")
    @classmethod
    def _file_text(cls, v: Any) -> Any:
        # before Path(): Path("") is "." and a trailing "/" is dropped, hiding what the user wrote
        if isinstance(v, str):
            if not v:
                raise ValueError("the file name must not be empty")
            if "\0" in v:
                raise ValueError("the file name must not contain a NUL character")
            if len(v.encode()) >= MAX_ARG_SIZE:
                raise ValueError(f"entered file path exceeded buffer size - MAX={MAX_ARG_SIZE - 1}")
            if v.endswith("/"):
                raise ValueError(f"{v!r} names a directory, not a file")
        return v

    @field_validator("file")
    @classmethod
    def _file(cls, v: Path) -> Path:
        if v.is_dir():
            raise ValueError(f"{str(v)!r} is a directory, not a file")
        if v.exists() and not v.is_file():
            raise ValueError(f"{str(v)!r} is not a regular file")
        if not v.exists() and not v.parent.is_dir():
            # not here, so this side would create it: its directory must exist
            raise ValueError(f"the directory of {str(v)!r} does not exist")
        return v
