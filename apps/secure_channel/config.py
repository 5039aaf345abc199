"""The Secure Channel flags: those of NVIDIA's ``doca_secure_channel`` (DOCA argp, ``--json`` too)."""

from __future__ import annotations

from pydantic import field_validator

from apps.common.comch_app import ComchAppConfig
from apps.common.cli.config import flag

from .wire import MAX_MSG_SIZE

__all__ = ["SecureChannelConfig"]

_MAX_MSGS = 0x7FFFFFFF


class SecureChannelConfig(ComchAppConfig):
    """``doca_secure_channel``: ``-p``, ``-r``, ``-s``, ``-n``."""

    msg_size: int = flag(short="-s", kind="int", help=f"Message size to be sent (1 to {MAX_MSG_SIZE} bytes)")
    num_msgs: int = flag(short="-n", kind="int", help="Number of messages to be sent")

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
