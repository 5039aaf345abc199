"""The compressed-block format stored by the gga targets (storage-apps-spec §6.2).

A block of ``B`` bytes: ``original_size`` u32 BE (= B), ``compressed_size`` u32 BE (= C),
C bytes of LZ4 block stream, zero padding, and a zero u32 trailer at ``B-4``. It must
hold ``C + 12 <= B``. Bytes ``[0, B/2)`` go to data_1, ``[B/2, B)`` to data_2.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from doca_py.errors import ErrorCode

from . import lz4_blocks
from apps.common.errors import ProtocolError, StorageAppError

__all__ = ["HEADER_SIZE", "TRAILER_SIZE", "OVERHEAD", "NotCompressibleError", "CompressedBlock",
           "pack_compressed_block", "compress_block", "parse_compressed_block", "decompress_block",
           "canonical_problem"]

HEADER_SIZE = 8
"""Bytes of the block header (original and compressed sizes, u32 BE)."""
TRAILER_SIZE = 4
"""Bytes of the block trailer."""
OVERHEAD = HEADER_SIZE + TRAILER_SIZE
"""Header plus trailer bytes."""
_HEADER = struct.Struct(">II")


class NotCompressibleError(StorageAppError):
    """A block's LZ4 stream does not fit in the compressed-block format (``C + 12 > B``)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_VALUE, message)


@dataclass(frozen=True, slots=True)
class CompressedBlock:
    """A parsed compressed block: the header fields and the LZ4 stream."""

    original_size: int
    """Size of the data before compression."""
    compressed_size: int
    """Size of the LZ4 stream."""
    stream: bytes
    """The LZ4 stream."""
    trailer: int
    """The trailer word."""


def pack_compressed_block(block_size: int, stream: bytes | bytearray | memoryview) -> bytes:
    """Assemble the ``block_size``-byte compressed block holding *stream*."""
    c = memoryview(stream).nbytes
    if c + OVERHEAD > block_size:
        raise NotCompressibleError(f"Data was not compressible enough: {c} compressed bytes + {OVERHEAD} "
                                   f"header/trailer bytes exceed the block size of {block_size}")
    out = bytearray(block_size)
    _HEADER.pack_into(out, 0, block_size, c)
    out[HEADER_SIZE:HEADER_SIZE + c] = stream
    return bytes(out)


def compress_block(plain: bytes | bytearray | memoryview) -> bytes:
    """Compress one plain block of ``B`` bytes into its ``B``-byte compressed block."""
    return pack_compressed_block(memoryview(plain).nbytes, lz4_blocks.compress(plain))


def parse_compressed_block(block: bytes | bytearray | memoryview) -> CompressedBlock:
    """Parse and check a compressed block; [`ProtocolError`][apps.common.errors.ProtocolError] if its sizes are impossible."""
    view = memoryview(block).cast("B")
    b = view.nbytes
    if b < OVERHEAD:
        raise ProtocolError(f"compressed block of {b} bytes is shorter than its {OVERHEAD}-byte overhead")
    original, c = _HEADER.unpack_from(view, 0)
    if c + OVERHEAD > b:
        raise ProtocolError(f"compressed block claims {c} compressed bytes, at most {b - OVERHEAD} fit in {b}")
    trailer = int.from_bytes(view[b - TRAILER_SIZE:], "big")
    return CompressedBlock(original, c, bytes(view[HEADER_SIZE:HEADER_SIZE + c]), trailer)


def decompress_block(block: bytes | bytearray | memoryview) -> bytes:
    """Software decode of a compressed block into (at most) ``B`` plain bytes.

    Like the service, only ``compressed_size`` is used and the output capacity is the
    block size.
    """
    parsed = parse_compressed_block(block)
    return lz4_blocks.decompress(parsed.stream, memoryview(block).nbytes)


def canonical_problem(block: bytes | bytearray | memoryview) -> str | None:
    """Why *block* is not exactly what the generator writes (``original_size`` ≠ B, non-zero
    padding or trailer, impossible size), or ``None``. Readers do not need this (the
    service only reads ``compressed_size``); verification does, because damage to the
    padding would otherwise go unnoticed."""
    view = memoryview(block).cast("B")
    try:
        parsed = parse_compressed_block(view)
    except ProtocolError as exc:
        return str(exc)
    b = view.nbytes
    if parsed.original_size != b:
        return f"original_size is {parsed.original_size}, expected the block size {b}"
    tail = view[HEADER_SIZE + parsed.compressed_size:]
    if any(tail):
        first = next(i for i, x in enumerate(tail) if x)
        return f"non-zero padding/trailer byte at offset {HEADER_SIZE + parsed.compressed_size + first}"
    return None
