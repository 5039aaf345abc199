"""The DMA Copy application's comch messages, byte for byte as NVIDIA's C app sends them.

Each message is one C struct of ``dma_copy_core.h`` sent as it lies in memory (LP64, the host
x86-64 and the DPU's Arm both little endian). The type is a C ``enum`` in the host's byte
order; the 64-bit values went through ``htonq`` (big endian); a ``bool`` is one byte, and
the compiler's padding follows it:

=====================  ======  ================================================================
message                bytes   layout
=====================  ======  ================================================================
direction (type 1)     16      ``u32 type`` (LE), ``bool file_in_host``, 3 pad, ``u64 file_size`` (BE)
export desc. (type 2)  24 + n  ``u32 type`` (LE), 4 pad, ``u64 host_addr`` (BE),
                               ``u64 export_desc_len`` (BE), the ``n`` bytes of the export
status (type 3)        8       ``u32 type`` (LE), ``bool is_success``, 3 pad
=====================  ======  ================================================================

Padding is sent as zeros and ignored when read (the C host builds its export message in an
uninitialised buffer, so its four pad bytes are whatever was there). The checks of
`parse` are those of the C receive callbacks, with the messages they log.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from apps.common.errors import ProtocolError

__all__ = ["MsgType", "Direction", "ExportDescriptor", "Status", "Message", "TYPE_SIZE", "DIRECTION_SIZE",
           "EXPORT_HEADER_SIZE", "STATUS_SIZE", "pack_direction", "pack_export_descriptor", "pack_status", "peek_type", "parse"]


class MsgType(enum.IntEnum):
    """``enum comch_msg_type``."""

    DIRECTION = 1
    EXPORT_DESCRIPTOR = 2
    STATUS = 3


_TYPE = struct.Struct("<I")
_DIRECTION_HEAD = struct.Struct("<I?3x")
_U64_BE = struct.Struct(">Q")
_STATUS = struct.Struct("<I?3x")
_EXPORT_HEAD = struct.Struct("<I4x")

TYPE_SIZE = _TYPE.size
"""``sizeof(enum comch_msg_type)``: the shortest message a receiver looks at (4)."""
DIRECTION_SIZE = _DIRECTION_HEAD.size + _U64_BE.size
"""``sizeof(struct comch_msg_dma_direction)``: 16."""
EXPORT_HEADER_SIZE = _EXPORT_HEAD.size + 2 * _U64_BE.size
"""``sizeof(struct comch_msg_dma_export_discriptor)`` (the export bytes follow): 24."""
STATUS_SIZE = _STATUS.size
"""``sizeof(struct comch_msg_dma_status)``: 8."""


@dataclass(frozen=True)
class Direction:
    """``struct comch_msg_dma_direction``: where the file is and, from the side that has it, its size."""

    file_in_host: bool
    file_size: int


@dataclass(frozen=True)
class ExportDescriptor:
    """``struct comch_msg_dma_export_discriptor``: the host's PCI export and the file's address in it."""

    host_addr: int
    export_desc: bytes


@dataclass(frozen=True)
class Status:
    """``struct comch_msg_dma_status``."""

    is_success: bool


Message = Direction | ExportDescriptor | Status


def pack_direction(file_in_host: bool, file_size: int) -> bytes:
    """The 16-byte direction message."""
    if not 0 <= file_size < 1 << 64:
        raise ValueError(f"file size {file_size} does not fit in a u64")
    return _DIRECTION_HEAD.pack(MsgType.DIRECTION, file_in_host) + _U64_BE.pack(file_size)


def pack_export_descriptor(host_addr: int, export_desc: bytes) -> bytes:
    """The export descriptor message: its 24-byte header and *export_desc*."""
    if not 0 <= host_addr < 1 << 64:
        raise ValueError(f"host address {host_addr:#x} does not fit in a u64")
    return (_EXPORT_HEAD.pack(MsgType.EXPORT_DESCRIPTOR) + _U64_BE.pack(host_addr) + _U64_BE.pack(len(export_desc))
            + bytes(export_desc))


def pack_status(is_success: bool) -> bytes:
    """The 8-byte status message."""
    return _STATUS.pack(MsgType.STATUS, is_success)


def peek_type(msg: bytes | memoryview) -> int | None:
    """The type field of *msg*, ``None`` when it is too short to have one."""
    return _TYPE.unpack_from(msg)[0] if len(msg) >= TYPE_SIZE else None


def parse(msg: bytes | memoryview) -> Message:
    """Decode one message; `ProtocolError` (with the C app's wording) when it is too short, of the
    wrong length for its type, of an unknown type, or an export descriptor whose declared length
    runs past the message or is zero."""
    raw = bytes(msg)
    n = len(raw)
    if n < TYPE_SIZE:
        raise ProtocolError(f"Received a message that is too small. Length: {n}")
    (kind,) = _TYPE.unpack_from(raw)
    if kind == MsgType.DIRECTION:
        if n != DIRECTION_SIZE:
            raise ProtocolError(f"Direction message has bad length. Length: {n}, expected: {DIRECTION_SIZE}")
        # a C bool read back: any byte but 0 is true
        return Direction(raw[4] != 0, _U64_BE.unpack_from(raw, 8)[0])
    if kind == MsgType.EXPORT_DESCRIPTOR:
        if n <= EXPORT_HEADER_SIZE:
            raise ProtocolError(f"Export descriptor message has bad length. Length: {n}, expected at least: "
                                f"{EXPORT_HEADER_SIZE + 1}")
        host_addr = _U64_BE.unpack_from(raw, 8)[0]
        desc_len = _U64_BE.unpack_from(raw, 16)[0]
        # The C app lets the declared length reach the whole message length (and copies past its end):
        # here it must fit in what follows the header.
        if desc_len > n - EXPORT_HEADER_SIZE:
            raise ProtocolError(f"Export descriptor message validation failed: declared length: {desc_len} exceeds "
                                f"the {n - EXPORT_HEADER_SIZE} bytes after the header (message size: {n})")
        if desc_len == 0:
            raise ProtocolError("Export descriptor message declares an empty export descriptor")
        return ExportDescriptor(host_addr, raw[EXPORT_HEADER_SIZE:EXPORT_HEADER_SIZE + desc_len])
    if kind == MsgType.STATUS:
        if n != STATUS_SIZE:
            raise ProtocolError(f"Status message has bad length. Length: {n}, expected: {STATUS_SIZE}")
        return Status(raw[4] != 0)
    raise ProtocolError(f"Received bad message type. Type: {kind}")
