"""The Secure Channel control message, byte for byte as NVIDIA's C application sends it.

``struct metadata_msg { enum msg_type type; uint32_t num_msgs; uint32_t msg_size; }``: 12 bytes.
The C app converts the two counts to big endian (``htonl``) but sends the ``enum`` as it is in
memory: a 32-bit little-endian integer on the x86-64 hosts and Arm DPUs DOCA runs on.

Each side first sends ``START_MSG`` with the number and size of the messages its producer will
send; once both sides' fast paths are done the DPU sends ``END_MSG`` (same counts) and the host
waits for it before disconnecting.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from apps.common.errors import ProtocolError

__all__ = ["MsgType", "Metadata", "METADATA_SIZE", "MAX_MSG_SIZE", "pack_metadata", "parse_metadata"]

_TYPE = struct.Struct("<I")  # a struct format has one byte order: the enum and the counts differ
_COUNTS = struct.Struct(">II")
METADATA_SIZE = _TYPE.size + _COUNTS.size
"""``sizeof(struct metadata_msg)``: 12."""
MAX_MSG_SIZE = 65535
"""Largest ``--msg-size`` (the C app's ``MAX_MSG_SIZE``)."""
_MAX_COUNT = 0x7FFFFFFF  # the C app keeps the counts in an int


class MsgType(enum.IntEnum):
    """``enum msg_type``."""

    START = 0
    """``START_MSG``: the sender's producer will send ``num_msgs`` messages of ``msg_size`` bytes."""
    END = 1
    """``END_MSG``: the sender (the DPU) is done."""


@dataclass(frozen=True)
class Metadata:
    """One decoded ``metadata_msg``."""

    type: MsgType
    num_msgs: int
    msg_size: int


def pack_metadata(type: MsgType, num_msgs: int, msg_size: int) -> bytes:
    """The 12-byte message."""
    return _TYPE.pack(int(type)) + _COUNTS.pack(num_msgs, msg_size)


def parse_metadata(msg: bytes | memoryview) -> Metadata:
    """Decode a message; `ProtocolError` for a wrong length, an unknown type, or (``START``) counts
    this side cannot honour: no messages, more than fit an ``int``, a size outside 1..65535."""
    if len(msg) != METADATA_SIZE:
        raise ProtocolError(f"invalid message length detected: {len(msg)} (a metadata message is "
                            f"{METADATA_SIZE} bytes)")
    (raw_type,) = _TYPE.unpack_from(msg, 0)
    num_msgs, msg_size = _COUNTS.unpack_from(msg, _TYPE.size)
    try:
        kind = MsgType(raw_type)
    except ValueError:
        raise ProtocolError(f"unknown metadata message type {raw_type}") from None
    if kind is MsgType.START:
        if not 0 < num_msgs <= _MAX_COUNT:
            raise ProtocolError(f"the peer announces {num_msgs} messages: expected 1 to {_MAX_COUNT}")
        if not 0 < msg_size <= MAX_MSG_SIZE:
            raise ProtocolError(f"the peer announces messages of {msg_size} bytes: expected 1 to {MAX_MSG_SIZE}")
    return Metadata(kind, num_msgs, msg_size)
