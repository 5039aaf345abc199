"""DOCA's LZ4 "stream": the data blocks of an LZ4 frame, without frame header or end mark.

Each block is a little-endian u32 size word (bit 31 set = stored uncompressed, low 31
bits = byte count), the payload, and -- when the stream has block checksums -- the
xxHash-32 (seed 0) of the payload as stored. Blocks are independent, or linked: a
linked block may refer back to the previous 64 KiB of output (storage-apps-spec §6.3,
doca-c-api §7.2 rule 25).

Decompression writes straight into the destination: liblz4's ``LZ4_decompress_safe``
(exported by python-lz4's extension, or the system liblz4) is called through ctypes
with the destination address; without it, ``lz4.block.decompress`` plus one copy.

Errors: output that does not fit in the destination raises [`DocaTooBig`][doca_py.errors.DocaTooBig];
corrupt or truncated input and checksum mismatches raise [`DocaInvalidValue`][doca_py.errors.DocaInvalidValue].
Nothing is ever written outside the destination buffer (bytes inside it past the
reported length may have been scribbled on by a failed block).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import struct
from typing import TYPE_CHECKING

import lz4.block
import lz4.frame

from doca_py.errors import DocaInvalidValue, DocaTooBig

from . import byte_view, view_address, writable_view
from .checksums import xxh32

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "STORED_FLAG",
    "MAX_BLOCK_SIZE",
    "compress_stream",
    "compress_stream_into",
    "decompress_stream_into",
    "decompress_block_into",
    "frame_body_bounds",
]

STORED_FLAG = 0x80000000
"""High bit of an LZ4 frame block size: the block is stored uncompressed."""
MAX_BLOCK_SIZE = 4 << 20  # largest LZ4 frame block (BD block-max-size id 7)
"""The largest LZ4 frame block (4 MiB, block-max-size id 7)."""
_WINDOW = 64 << 10  # how far back a linked block may reference
_LZ4_MAGIC = 0x184D2204
_U32 = struct.Struct("<I")
_BLOCK_SIZE_IDS = {
    64 << 10: lz4.frame.BLOCKSIZE_MAX64KB,
    256 << 10: lz4.frame.BLOCKSIZE_MAX256KB,
    1 << 20: lz4.frame.BLOCKSIZE_MAX1MB,
    4 << 20: lz4.frame.BLOCKSIZE_MAX4MB,
}


# --------------------------------------------------------------------------- compression


def frame_body_bounds(frame: Buffer) -> tuple[int, int]:
    """``(start, end)`` of the data blocks inside a complete LZ4 frame.

    Parses the frame descriptor (optional content size and dictionary id make the
    header 7 to 19 bytes) and drops the end mark and optional content checksum.
    """
    mv = byte_view(frame, "frame")
    if mv.nbytes < 11 or _U32.unpack_from(mv, 0)[0] != _LZ4_MAGIC:
        raise DocaInvalidValue("not an LZ4 frame")
    flg = mv[4]
    if flg >> 6 != 1:
        raise DocaInvalidValue(f"unsupported LZ4 frame version {flg >> 6}")
    start = 4 + 2 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0) + 1
    end = mv.nbytes - 4 - (4 if flg & 0x04 else 0)
    if end < start or _U32.unpack_from(mv, end)[0] != 0:
        raise DocaInvalidValue("LZ4 frame has no end mark where expected")
    return start, end


def compress_stream(
    src: Buffer,
    *,
    block_size: int = 64 << 10,
    block_checksum: bool = False,
    block_linked: bool = False,
    compression_level: int = 1,
) -> bytes:
    """Compress *src* into a DOCA LZ4 stream, as the storage apps' generator does.

    Defaults follow storage-apps-spec §6.3: 64 KiB blocks, independent, no checksums,
    level 1 (liblz4's fast mode), a block stored raw when compression does not shrink it.
    """
    if block_size not in _BLOCK_SIZE_IDS:
        raise DocaInvalidValue(f"block size must be one of {sorted(_BLOCK_SIZE_IDS)}")
    frame = lz4.frame.compress(
        byte_view(src, "source"),
        compression_level=compression_level,
        block_size=_BLOCK_SIZE_IDS[block_size],
        content_checksum=False,
        block_checksum=block_checksum,
        block_linked=block_linked,
        store_size=False,
    )
    start, end = frame_body_bounds(frame)
    return frame[start:end]


def compress_stream_into(
    src: Buffer,
    dst: Buffer,
    *,
    block_size: int = 64 << 10,
    block_checksum: bool = False,
    block_linked: bool = False,
    compression_level: int = 1,
) -> int:
    """[`compress_stream`][doca_py.engines.lz4_stream.compress_stream] into *dst*; return the stream length.

    Raise [`DocaTooBig`][doca_py.errors.DocaTooBig] (writing nothing) if the stream does not fit.
    """
    out = writable_view(dst)
    stream = compress_stream(
        src,
        block_size=block_size,
        block_checksum=block_checksum,
        block_linked=block_linked,
        compression_level=compression_level,
    )
    if len(stream) > out.nbytes:
        raise DocaTooBig(f"LZ4 stream of {len(stream)} bytes does not fit in {out.nbytes}")
    out[: len(stream)] = stream
    return len(stream)


# --------------------------------------------------------------------------- decompression


class _Lz4Lib:
    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        self.path = path
        self.safe = lib.LZ4_decompress_safe
        self.safe.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.safe.restype = ctypes.c_int
        self.using_dict = lib.LZ4_decompress_safe_usingDict
        self.using_dict.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
        self.using_dict.restype = ctypes.c_int


@functools.cache
def _lib() -> _Lz4Lib | None:
    paths: list[str] = []
    spec = importlib.util.find_spec("lz4.block._block")
    if spec and spec.origin:
        paths.append(spec.origin)  # already loaded in this process, statically links liblz4
    system = ctypes.util.find_library("lz4")
    if system:
        paths.append(system)
    for path in paths:
        try:
            return _Lz4Lib(path)
        except (OSError, AttributeError):
            continue
    return None


def _use_ctypes() -> bool:
    # Indirection so tests can force the copying fallback.
    return _lib() is not None


def _fail_block(src: memoryview, history: memoryview, room: int) -> None:
    """A block failed to decode into *room* bytes: raise TooBig if it would decode with
    more room (the error path only, so the scratch allocation does not matter)."""
    try:
        out = lz4.block.decompress(src, uncompressed_size=MAX_BLOCK_SIZE, dict=history.tobytes())
    except lz4.block.LZ4BlockError:
        raise DocaInvalidValue("corrupt LZ4 block") from None
    if len(out) > room:
        raise DocaTooBig(f"LZ4 block decodes to {len(out)} bytes, only {room} left in the destination")
    raise DocaInvalidValue("corrupt LZ4 block")  # pragma: no cover - liblz4 disagreed with itself


def _decode(src: memoryview, src_addr: int, dst: memoryview, dst_addr: int, out: int, linked: bool) -> int:
    """Decode one compressed block from *src* into ``dst[out:]``; return bytes produced."""
    room = dst.nbytes - out
    hist_len = min(out, _WINDOW) if linked else 0
    lib = _lib() if _use_ctypes() else None
    n = src.nbytes
    if lib is not None:
        if n > 0x7FFFFFFF:
            raise DocaInvalidValue("LZ4 block too large")
        cap = min(room, 0x7FFFFFFF)
        if hist_len:
            # The previous output sits right before the write position, so liblz4 sees
            # it as a contiguous prefix dictionary.
            r = lib.using_dict(src_addr, dst_addr + out, n, cap, dst_addr + out - hist_len, hist_len)
        else:
            r = lib.safe(src_addr, dst_addr + out, n, cap)
        if r >= 0:
            return int(r)
    else:
        history = dst[out - hist_len : out].tobytes() if hist_len else b""
        try:
            data = lz4.block.decompress(src, uncompressed_size=max(room, 1), dict=history)
        except lz4.block.LZ4BlockError:
            pass
        else:
            if len(data) <= room:
                dst[out : out + len(data)] = data
                return len(data)
    _fail_block(src, dst[out - hist_len : out], room)
    raise AssertionError("unreachable")  # pragma: no cover


def decompress_block_into(src: Buffer, dst: Buffer) -> int:
    """Decode one raw LZ4 block (no frame, no size prefix) into *dst*; return its length."""
    s = byte_view(src, "source")
    d = writable_view(dst)
    return _decode(s, view_address(s), d, view_address(d), 0, False)


def decompress_stream_into(
    src: Buffer,
    dst: Buffer,
    *,
    has_block_checksum: bool = False,
    are_blocks_independent: bool = True,
) -> int:
    """Decode a DOCA LZ4 stream into *dst*; return the bytes written at ``dst[0:]``.

    A zero size word is taken as an LZ4 end mark and stops decoding (a DOCA stream
    normally has none; the bytes after it are ignored).
    """
    s = byte_view(src, "source")
    d = writable_view(dst)
    return decompress_stream_at(s, view_address(s), d, view_address(d), has_block_checksum=has_block_checksum,
                                are_blocks_independent=are_blocks_independent)


def decompress_stream_at(
    s: memoryview,
    s_addr: int,
    d: memoryview,
    d_addr: int,
    *,
    has_block_checksum: bool = False,
    are_blocks_independent: bool = True,
) -> int:
    """[`decompress_stream_into`][doca_py.engines.lz4_stream.decompress_stream_into] for callers that already hold flat byte views and
    their addresses (the emulated Compress context): no buffer lookups per call."""
    n, cap = s.nbytes, d.nbytes
    tail = 4 if has_block_checksum else 0
    linked = not are_blocks_independent
    # Fast path for the common block: independent, compressed, liblz4 via ctypes.
    safe = lib.safe if (lib := _lib()) is not None and _use_ctypes() else None
    unpack = _U32.unpack_from
    pos = out = 0
    while pos < n:
        if n - pos < 4:
            raise DocaInvalidValue(f"LZ4 stream truncated in a block size word at offset {pos}")
        (word,) = unpack(s, pos)
        pos += 4
        if word == 0:
            break
        size = word & ~STORED_FLAG
        if size + tail > n - pos:
            raise DocaInvalidValue(f"LZ4 stream truncated: block of {size} bytes at offset {pos - 4}, {n - pos} left")
        if has_block_checksum:
            (want,) = unpack(s, pos + size)
            got = xxh32(s[pos : pos + size])
            if got != want:
                raise DocaInvalidValue(f"LZ4 block checksum mismatch at offset {pos - 4}: {got:#010x} != {want:#010x}")
        if word & STORED_FLAG:
            if size > cap - out:
                raise DocaTooBig(f"stored LZ4 block of {size} bytes, only {cap - out} left in the destination")
            d[out : out + size] = s[pos : pos + size]
            out += size
        else:
            r = -1
            if safe is not None and not (linked and out) and cap - out <= 0x7FFFFFFF:
                r = safe(s_addr + pos, d_addr + out, size, cap - out)
            if r < 0:  # linked, fallback, or an error to classify
                r = _decode(s[pos : pos + size], s_addr + pos, d, d_addr, out, linked)
            out += r
        pos += size + tail
    return out
