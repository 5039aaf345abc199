"""``.sbc`` "storage binary content" files (storage-apps-spec §6.6).

Header: magic u64 BE ``0xDEADF00D1337FADE``, ``block_size`` u32 BE, ``block_count``
u32 BE; then ``block_size × block_count`` content bytes (at most 2 GiB). Trailing
bytes after the content are ignored by readers, as in the reference.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from doca_py.errors import ErrorCode

from apps.common.errors import StorageAppError

__all__ = ["SBC_MAGIC", "SBC_HEADER_SIZE", "MAX_CONTENT_SIZE", "SbcFormatError", "SbcFile", "is_sbc_file",
           "read_sbc", "read_sbc_header", "write_sbc", "encode_sbc", "load_storage_content"]

SBC_MAGIC = 0xDEADF00D1337FADE
"""The magic number an ``.sbc`` file starts with."""
SBC_HEADER_SIZE = 16
"""Size of the ``.sbc`` header in bytes."""
MAX_CONTENT_SIZE = 2 << 30
"""Largest content of an ``.sbc`` file (2 GiB)."""
_HEADER = struct.Struct(">QII")
_MAGIC_BYTES = SBC_MAGIC.to_bytes(8, "big")


class SbcFormatError(StorageAppError):
    """A ``.sbc`` file that cannot be read or written (bad magic, sizes, short content)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_VALUE, message)


@dataclass(frozen=True, slots=True)
class SbcFile:
    """The contents of a ``.sbc`` file."""

    block_size: int
    """Block size in bytes."""
    block_count: int
    """Number of blocks."""
    content: bytes
    """The blocks, ``block_size * block_count`` bytes."""

    @property
    def storage_size(self) -> int:
        """``block_size × block_count``."""
        return self.block_size * self.block_count


def _check_sizes(block_size: int, block_count: int, where: str) -> int:
    if not 0 <= block_size <= 0xFFFFFFFF or not 0 <= block_count <= 0xFFFFFFFF:
        raise SbcFormatError(f"{where}: block size {block_size} / block count {block_count} must fit in u32")
    size = block_size * block_count
    if size > MAX_CONTENT_SIZE:
        raise SbcFormatError(f"{where}: content of {block_size} x {block_count} = {size} bytes exceeds the "
                             f"{MAX_CONTENT_SIZE}-byte limit")
    return size


def encode_sbc(block_size: int, block_count: int, content: bytes | bytearray | memoryview) -> bytes:
    """The bytes of a ``.sbc`` file; *content* must be exactly ``block_size × block_count``."""
    size = _check_sizes(block_size, block_count, "sbc")
    n = memoryview(content).nbytes
    if n != size:
        raise SbcFormatError(f"sbc content is {n} bytes, expected {block_size} x {block_count} = {size}")
    return _HEADER.pack(SBC_MAGIC, block_size, block_count) + bytes(content)


def write_sbc(path: str | os.PathLike[str], block_size: int, block_count: int,
              content: bytes | bytearray | memoryview) -> None:
    """Write a ``.sbc`` file atomically (a temporary file renamed into place)."""
    data = encode_sbc(block_size, block_count, content)
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SbcFormatError(f"Failed to write sbc file {str(path)!r}: {exc.strerror or exc}") from None


def is_sbc_file(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with the sbc magic (a shorter file is not sbc)."""
    with open(path, "rb") as f:
        return f.read(8) == _MAGIC_BYTES


def read_sbc_header(path: str | os.PathLike[str]) -> tuple[int, int]:
    """``(block_size, block_count)`` from a ``.sbc`` header, checked."""
    try:
        with open(path, "rb") as f:
            head = f.read(SBC_HEADER_SIZE)
    except OSError as exc:
        raise SbcFormatError(f"Failed to open sbc file {str(path)!r}: {exc.strerror or exc}") from None
    if len(head) < SBC_HEADER_SIZE:
        raise SbcFormatError(f"{str(path)!r} is not an sbc file: {len(head)} bytes, shorter than the "
                             f"{SBC_HEADER_SIZE}-byte header")
    magic, block_size, block_count = _HEADER.unpack(head)
    if magic != SBC_MAGIC:
        raise SbcFormatError(f"{str(path)!r} is not an sbc file: magic {magic:#018x}, expected {SBC_MAGIC:#018x}")
    _check_sizes(block_size, block_count, repr(str(path)))
    return block_size, block_count


def read_sbc(path: str | os.PathLike[str]) -> SbcFile:
    """Read and check a ``.sbc`` file (the size is checked before the content is read)."""
    block_size, block_count = read_sbc_header(path)
    size = block_size * block_count
    with open(path, "rb") as f:
        have = os.fstat(f.fileno()).st_size - SBC_HEADER_SIZE
        if have < size:
            raise SbcFormatError(f"Failed to read content from sbc file {str(path)!r}: header says {block_size} x "
                                 f"{block_count} = {size} bytes, the file holds {max(have, 0)}")
        f.seek(SBC_HEADER_SIZE)
        content = f.read(size)
    if len(content) != size:
        raise SbcFormatError(f"Failed to read content from sbc file {str(path)!r}")
    return SbcFile(block_size, block_count, content)


def load_storage_content(path: str | os.PathLike[str] | None, block_size: int,
                         block_count: int) -> SbcFile:
    """A storage target's initial content (storage-apps-spec §2.4).

    An ``.sbc`` file (detected by magic) gives block size, count and content; any other
    file must be exactly ``block_size × block_count`` bytes. Without a file the content is
    empty (``b""``: the caller allocates zeroed storage) and both sizes must be non-zero.
    """
    if path is None or str(path) == "":
        if block_size <= 0 or block_count <= 0:
            raise SbcFormatError("block size and block count must both be non-zero without --binary-content")
        _check_sizes(block_size, block_count, "storage")
        return SbcFile(block_size, block_count, b"")
    try:
        sbc = is_sbc_file(path)
    except OSError as exc:
        raise SbcFormatError(f"Failed to open {str(path)!r}: {exc.strerror or exc}") from None
    if sbc:
        return read_sbc(path)
    size = block_size * block_count
    actual = os.stat(path).st_size
    if actual != size:
        raise SbcFormatError(f"Content file {str(path)!r} of {actual} bytes does not match the storage size of "
                             f"{size} bytes ({block_size} x {block_count})")
    with open(path, "rb") as f:
        return SbcFile(block_size, block_count, f.read())
