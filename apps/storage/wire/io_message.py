"""The 64-byte io message (storage-apps-spec §4.1, NEW layout), all fields big endian.

==========  ====  ====================
offset      size  field
==========  ====  ====================
0           4     ``type`` (0 result, 1 read, 2 write)
4           4     padding
8           8     ``user_data``
16          4     ``result`` (``doca_error_t``)
20          4     ``io_size``
24          8     ``requester_offset``
32          8     ``storage_offset``
40          24    padding
==========  ====  ====================

This module always writes the padding as zeros and ignores it when reading. A
response is the request with ``type`` = result and ``result`` set
([`make_response_in_place`][apps.storage.wire.io_message.make_response_in_place]); every other field is echoed.

Two ways in: [`IoMessage`][apps.storage.wire.io_message.IoMessage] (checked, for control code,
tests and error texts) and, for the data path of every worker, functions that allocate nothing
but what ``struct`` returns: [`pack_io_message_into`][apps.storage.wire.io_message.pack_io_message_into]
writes a message in place (into the transaction's own message buffer), and
[`unpack_io_message_from`][apps.storage.wire.io_message.unpack_io_message_from],
[`unpack_io_head_from`][apps.storage.wire.io_message.unpack_io_head_from],
[`user_data_at`][apps.storage.wire.io_message.user_data_at] and
[`result_at`][apps.storage.wire.io_message.result_at] read fields where they lie. They are the
precompiled ``struct.Struct`` methods themselves (no wrapper call per IO).

```pycon
>>> buf = bytearray(2 * IO_MESSAGE_SIZE)
>>> pack_io_message_into(buf, IO_MESSAGE_SIZE, IoMessageType.READ, 7, 0, 4096, 8192, 40960)
>>> unpack_io_message_from(buf, IO_MESSAGE_SIZE)
(1, 7, 0, 4096, 8192, 40960)
>>> make_response_in_place(buf, 5, IO_MESSAGE_SIZE)
>>> unpack_io_head_from(buf, IO_MESSAGE_SIZE), user_data_at(buf, IO_MESSAGE_SIZE), result_at(buf, IO_MESSAGE_SIZE)
((0, 7, 5), 7, 5)

```
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from doca_py.errors import ErrorCode

from apps.common.errors import ProtocolError

__all__ = [
    "IO_MESSAGE_SIZE", "IoMessageType", "IoMessage", "TYPE_OFFSET", "USER_DATA_OFFSET", "RESULT_OFFSET",
    "IO_SIZE_OFFSET", "REQUESTER_OFFSET_OFFSET", "STORAGE_OFFSET_OFFSET", "make_response_in_place",
    "pack_io_message_into", "unpack_io_message_from", "unpack_io_head_from", "user_data_at", "result_at", "io_size_at",
    "set_type_in_place", "pack_u32_into", "RESULT_TYPE",
]

IO_MESSAGE_SIZE = 64
"""Size of an io message in bytes (64)."""
TYPE_OFFSET = 0
"""Byte offset of the type field."""
USER_DATA_OFFSET = 8
"""Byte offset of the user data field."""
RESULT_OFFSET = 16
"""Byte offset of the result field."""
IO_SIZE_OFFSET = 20
"""Byte offset of the io size field."""
REQUESTER_OFFSET_OFFSET = 24
"""Byte offset of the requester offset field."""
STORAGE_OFFSET_OFFSET = 32
"""Byte offset of the storage offset field."""

# type, pad, user_data, result, io_size, requester_offset, storage_offset, pad
_LAYOUT = struct.Struct(">I4xQIIQQ24x")
assert _LAYOUT.size == IO_MESSAGE_SIZE
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_HEAD = struct.Struct(">I4xQI")  # type, pad, user_data, result

pack_io_message_into: Callable[[Any, int, int, int, int, int, int, int], None] = _LAYOUT.pack_into
"""``pack_io_message_into(buffer, offset, type, user_data, result, io_size, requester_offset,
storage_offset)``: write one message (padding zeroed) at *offset* of a writable buffer.
Unchecked: a field out of range raises ``struct.error``."""
unpack_io_message_from: Callable[..., tuple[int, int, int, int, int, int]] = _LAYOUT.unpack_from
"""``unpack_io_message_from(buffer, offset=0)``: ``(type, user_data, result, io_size,
requester_offset, storage_offset)`` of the 64 bytes at *offset* (``struct.error`` if fewer)."""
unpack_io_head_from: Callable[..., tuple[int, int, int]] = _HEAD.unpack_from
"""``unpack_io_head_from(buffer, offset=0)``: ``(type, user_data, result)`` of the message at *offset*."""


def user_data_at(buffer: Any, offset: int = 0) -> int:
    """The ``user_data`` of the message at *offset* of *buffer*."""
    return int(_U64.unpack_from(buffer, offset + USER_DATA_OFFSET)[0])


def result_at(buffer: Any, offset: int = 0) -> int:
    """The ``result`` of the message at *offset* of *buffer*."""
    return int(_U32.unpack_from(buffer, offset + RESULT_OFFSET)[0])


def io_size_at(buffer: Any, offset: int = 0) -> int:
    """The ``io_size`` of the message at *offset* of *buffer*."""
    return int(_U32.unpack_from(buffer, offset + IO_SIZE_OFFSET)[0])


def set_type_in_place(buffer: bytearray | memoryview, type: int, offset: int = 0) -> None:
    """Overwrite the ``type`` of the message at *offset* (the other fields are left)."""
    _U32.pack_into(buffer, offset + TYPE_OFFSET, type)


class IoMessageType(enum.IntEnum):
    """``io_message_type``."""

    RESULT = 0
    """The answer to a read or write."""
    READ = 1
    """Read ``io_size`` bytes from storage."""
    WRITE = 2
    """Write ``io_size`` bytes to storage."""


def _check(name: str, value: int, bits: int) -> None:
    if not 0 <= value < (1 << bits):
        raise ValueError(f"io message {name} {value} does not fit in u{bits}")


@dataclass(frozen=True, slots=True)
class IoMessage:
    """A decoded io message. ``type`` is kept as a raw ``int`` so that a message of an
    unknown type can still be answered (with ``INVALID_VALUE``, §4.3); see [`kind`][apps.storage.wire.io_message.IoMessage.kind]."""

    type: int
    """The raw type ([`IoMessageType`][apps.storage.wire.io_message.IoMessageType] value)."""
    user_data: int = 0
    """Opaque u64 of the requester, echoed in the result."""
    result: int = 0
    """The ``doca_error_t`` of a result message."""
    io_size: int = 0
    """Bytes to transfer."""
    requester_offset: int = 0
    """Offset in the requester's IO region."""
    storage_offset: int = 0
    """Offset in the storage."""

    def __post_init__(self) -> None:
        _check("type", int(self.type), 32)
        _check("user_data", self.user_data, 64)
        _check("result", int(self.result), 32)
        _check("io_size", self.io_size, 32)
        _check("requester_offset", self.requester_offset, 64)
        _check("storage_offset", self.storage_offset, 64)

    @property
    def kind(self) -> IoMessageType | None:
        """[`type`][apps.storage.wire.io_message.IoMessage.type] as an [`IoMessageType`][apps.storage.wire.io_message.IoMessageType], ``None`` for an unknown value."""
        t = int(self.type)
        return IoMessageType(t) if t in IoMessageType._value2member_map_ else None

    def pack(self) -> bytes:
        """The 64 wire bytes (padding zeroed)."""
        return _LAYOUT.pack(int(self.type), self.user_data, int(self.result), self.io_size,
                            self.requester_offset, self.storage_offset)

    def pack_into(self, buffer: bytearray | memoryview, offset: int = 0) -> None:
        """Write the 64 bytes (padding zeroed) at *offset* of a writable buffer."""
        _LAYOUT.pack_into(buffer, offset, int(self.type), self.user_data, int(self.result), self.io_size,
                          self.requester_offset, self.storage_offset)

    @classmethod
    def unpack(cls, buffer: bytes | bytearray | memoryview, offset: int = 0) -> IoMessage:
        """Decode the 64 bytes at *offset*; [`ProtocolError`][apps.common.errors.ProtocolError] if fewer are available."""
        n = memoryview(buffer).nbytes - offset
        if offset < 0 or n < IO_MESSAGE_SIZE:
            raise ProtocolError(f"io message needs {IO_MESSAGE_SIZE} bytes, {max(n, 0)} available")
        t, ud, res, size, req, sto = _LAYOUT.unpack_from(buffer, offset)
        return cls(t, ud, res, size, req, sto)

    def response(self, result: ErrorCode | int = ErrorCode.SUCCESS) -> IoMessage:
        """This message turned into its response (type result, *result*)."""
        return replace(self, type=int(IoMessageType.RESULT), result=int(result))


def make_response_in_place(buffer: bytearray | memoryview, result: ErrorCode | int, offset: int = 0) -> None:
    """Turn the request at *offset* of *buffer* into its response, as the targets do:
    overwrite ``type`` with result and ``result`` with *result*; leave the rest."""
    _pack_u32(buffer, offset + TYPE_OFFSET, _RESULT_TYPE)
    _pack_u32(buffer, offset + RESULT_OFFSET, result)


_RESULT_TYPE = int(IoMessageType.RESULT)
_pack_u32 = _U32.pack_into

RESULT_TYPE = _RESULT_TYPE
"""``int(IoMessageType.RESULT)``, for the data paths that answer in place with :data:`pack_u32_into`."""
pack_u32_into: Callable[[Any, int, int], None] = _U32.pack_into
"""``pack_u32_into(buffer, offset, value)``: write one big-endian u32 field in place (``TYPE_OFFSET``,
``RESULT_OFFSET``). A data path's completion callback makes its response with two of these
(what :func:`make_response_in_place` does) without a function frame of its own."""
