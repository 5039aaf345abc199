"""The File Compression flags: those of NVIDIA's ``doca_file_compression`` (DOCA argp, ``--json`` too)."""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator

from apps.storage.cli.config import CommonConfig, flag

__all__ = ["FileCompressionConfig", "DEFAULT_TIMEOUT", "MAX_FILE_NAME"]

DEFAULT_TIMEOUT = 10
"""``--timeout`` when not given (the C app's ``DEFAULT_TIMEOUT``; its help text says 5)."""
MAX_FILE_NAME = 255
"""Longest ``--file`` path (``USER_MAX_FILE_NAME``)."""


class FileCompressionConfig(CommonConfig):
    """``doca_file_compression``: ``-p``, ``-r``, ``-f``, ``-t``."""

    pci_addr: str = flag(short="-p", metavar="PCI_ADDR",
                         help="DOCA Comch device PCI address (the host's device runs the client, the DPU's the "
                              "server)")
    rep_pci: str = flag("", short="-r", metavar="PCI_ADDR",
                        help="DOCA Comch device representor PCI address (needed by the server)")
    file: Path = flag(short="-f", metavar="FILE", help="File to send by the client / File to write by the server")
    timeout: int = flag(DEFAULT_TIMEOUT, short="-t", kind="int",
                        help="Application timeout for receiving file content messages, in seconds (the server "
                             "fails when no message arrives for that long during a transfer)")

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"{v}: the timeout parameter must be a positive value")
        return v

    @field_validator("file")
    @classmethod
    def _file(cls, v: Path) -> Path:
        if not str(v):
            raise ValueError("the file name must not be empty")
        if len(str(v).encode()) > MAX_FILE_NAME:
            raise ValueError(f"the file name is too long - MAX={MAX_FILE_NAME}")
        return v

    @field_validator("pci_addr")
    @classmethod
    def _pci(cls, v: str) -> str:
        if not v:
            raise ValueError("the device PCI address must not be empty")
        return v
