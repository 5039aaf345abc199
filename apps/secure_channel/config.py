"""The Secure Channel flags: those of NVIDIA's ``doca_secure_channel`` (DOCA argp, ``--json`` too)."""

from __future__ import annotations

from pydantic import field_validator

from apps.storage.cli.config import CommonConfig, flag

from .wire import MAX_MSG_SIZE

__all__ = ["SecureChannelConfig"]

_MAX_MSGS = 0x7FFFFFFF


class SecureChannelConfig(CommonConfig):
    """``doca_secure_channel``: ``-s``, ``-n``, ``-p``, ``-r``."""

    msg_size: int = flag(short="-s", kind="int", help=f"Message size to be sent (1 to {MAX_MSG_SIZE} bytes)")
    num_msgs: int = flag(short="-n", kind="int", help="Number of messages to be sent")
    pci_addr: str = flag(short="-p", metavar="PCI_ADDR",
                         help="DOCA Comch device PCI address (the host's device runs the client, the DPU's the "
                              "server)")
    rep_pci: str = flag("", short="-r", metavar="PCI_ADDR",
                        help="DOCA Comch device representor PCI address (needed only on DPU)")

    @field_validator("msg_size")
    @classmethod
    def _size(cls, v: int) -> int:
        if not 0 < v <= MAX_MSG_SIZE:
            raise ValueError(f"{v}: message size is not supported. Max is {MAX_MSG_SIZE}")
        return v

    @field_validator("num_msgs")
    @classmethod
    def _count(cls, v: int) -> int:
        if not 0 < v <= _MAX_MSGS:
            raise ValueError(f"{v}: the amount of messages to be sent must be from 1 to {_MAX_MSGS}")
        return v

    @field_validator("pci_addr")
    @classmethod
    def _pci(cls, v: str) -> str:
        if not v:
            raise ValueError("the device PCI address must not be empty")
        return v
