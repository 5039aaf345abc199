"""The File Compression application's messages, byte for byte as NVIDIA's C app sends them.

The client (host) sends, on one comch connection:

1. one **file info** message: ``struct file_info_message { uint64_t checksum; uint32_t num_segs; }``
   — 16 bytes with the compiler's 4 bytes of tail padding (zero), both fields big endian
   (``htonq`` / ``htonl``);
2. ``num_segs`` **segments** of the raw DEFLATE stream, each as large as a comch message may be
   (the device's ``doca_comch_cap_get_max_msg_size``), the last one shorter.

The checksum is of the *uncompressed* file: Adler-32 in the upper 32 bits, CRC-32 in the lower
(``calculate_checksum`` of DOCA's compress samples, as the compress tasks report both, or zlib's
``adler32``/``crc32`` in the software path).

The server (DPU) answers with one text message when it is done: `FINISH_MSG` (the C string with
its NUL). The C server sends that same text whatever the outcome; this one sends it only on
success and `failure_message` otherwise, which a C client prints as it prints any answer.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

from apps.common.errors import ProtocolError

__all__ = ["FILE_INFO_SIZE", "FINISH_MSG", "FAILURE_PREFIX", "FileInfo", "pack_file_info", "parse_file_info",
           "file_checksum", "split_checksum", "segment_count", "segments", "failure_message", "parse_finish"]

_FILE_INFO = struct.Struct(">QI4x")
FILE_INFO_SIZE = _FILE_INFO.size
"""``sizeof(struct file_info_message)``: 16 (8 + 4 + 4 bytes of padding)."""
FINISH_MSG = b"Server was done receiving messages\0"
"""The server's answer once the file was received, decompressed, checked and written."""
FAILURE_PREFIX = "Server failed: "
"""Start of this server's answer when it could not deliver the file (not sent by the C server)."""


class FileInfo:
    """The first message of a transfer: the checksum of the original file and the segment count."""

    __slots__ = ("checksum", "num_segs")

    def __init__(self, checksum: int, num_segs: int) -> None:
        self.checksum = checksum
        """Adler-32 << 32 | CRC-32 of the uncompressed file."""
        self.num_segs = num_segs
        """Segments of compressed data that follow."""

    def __repr__(self) -> str:
        return f"FileInfo(checksum=0x{self.checksum:016x}, num_segs={self.num_segs})"


def pack_file_info(checksum: int, num_segs: int) -> bytes:
    """The 16-byte file info message."""
    if not 0 <= checksum < 1 << 64 or not 0 <= num_segs < 1 << 32:
        raise ValueError(f"checksum must fit in u64 and num_segs in u32, got {checksum}, {num_segs}")
    return _FILE_INFO.pack(checksum, num_segs)


def parse_file_info(msg: bytes | memoryview) -> FileInfo:
    """Decode a file info message; `ProtocolError` unless it is exactly 16 bytes with segments to follow."""
    if len(msg) != FILE_INFO_SIZE:
        raise ProtocolError(f"unexpected file info message received: size {len(msg)}, expected size "
                            f"{FILE_INFO_SIZE}")
    checksum, num_segs = _FILE_INFO.unpack(msg)
    if num_segs == 0:
        # The C server would take the next message as a file info again; nothing sensible follows.
        raise ProtocolError("file info message announces 0 segments: a file is never empty")
    return FileInfo(checksum, num_segs)


def file_checksum(data: bytes | bytearray | memoryview) -> int:
    """Adler-32 << 32 | CRC-32 of *data*, as the C app computes it (zlib's functions)."""
    return (zlib.adler32(data) << 32) | zlib.crc32(data)


def split_checksum(checksum: int) -> tuple[int, int]:
    """``(adler32, crc32)`` of a 64-bit file checksum."""
    return checksum >> 32, checksum & 0xFFFFFFFF


def segment_count(size: int, max_msg: int) -> int:
    """Segments of at most *max_msg* bytes that carry *size* bytes."""
    if max_msg <= 0:
        raise ValueError("the comch max message size is zero")
    return (size + max_msg - 1) // max_msg


def segments(data: bytes | memoryview, max_msg: int) -> Iterator[memoryview]:
    """*data* cut into `segment_count` views of at most *max_msg* bytes."""
    view = memoryview(data)
    for start in range(0, len(view), max_msg):
        yield view[start:start + max_msg]


def failure_message(reason: str, limit: int) -> bytes:
    """This server's answer when it failed: ``Server failed: <reason>`` and a NUL, cut to *limit* bytes."""
    text = (FAILURE_PREFIX + reason).encode(errors="replace")[:max(limit - 1, 0)]
    return text + b"\0"


def parse_finish(msg: bytes | memoryview) -> tuple[bool, str]:
    """``(success, text)`` of the server's answer (the text without its NUL and what follows it)."""
    raw = bytes(msg)
    text = raw.split(b"\0", 1)[0].decode(errors="replace")
    return raw == FINISH_MSG, text
