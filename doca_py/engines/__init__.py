"""Software kernels for what DOCA's engines compute, usable on any backend.

The emulated ``doca_ec`` and ``doca_compress`` run on them; applications use them
where a DOCA application runs the same computation on the CPU (the storage apps'
sbc generator compresses with `.lz4_stream.compress_stream`, for instance) —
no application imports a backend.

Submodules (import them directly; this package only holds shared buffer helpers):

* `.gf256` -- GF(2^8) arithmetic and ISA-L compatible coding matrices.
* `.ec` -- Reed-Solomon encode/recover over buffers (ISA-L, numpy or pure kernel).
* `.lz4_stream` -- DOCA's LZ4 "stream" (frame data blocks without header/end mark).
* `.deflate` -- raw DEFLATE (and zlib-wrapped) via python-isal.
* `.checksums` -- CRC-32, Adler-32 and xxHash-32 as compress tasks report them.

The kernels take any bytes-like source and any writable, C-contiguous destination, write
only inside the destination they are given, and report problems as [`DocaError`][doca_py.errors.DocaError].
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # collections.abc.Buffer is 3.12+; typing_extensions backports it for the checker.
    from typing_extensions import Buffer

from doca_py.errors import DocaInvalidValue

__all__ = ["byte_view", "writable_view", "view_address"]


def _label(name: str, index: int | None) -> str:
    return name if index is None else f"{name} {index}"


def byte_view(buf: Buffer, name: str = "buffer", index: int | None = None) -> memoryview:
    """A flat unsigned-byte view of *buf* (no copy); raise for non-contiguous buffers.

    *name* and *index* only label the error (formatted lazily: this is on hot paths).
    """
    try:
        mv = memoryview(buf)
    except TypeError as exc:
        raise DocaInvalidValue(f"{_label(name, index)} is not a bytes-like object") from exc
    if not mv.c_contiguous:
        raise DocaInvalidValue(f"{_label(name, index)} is not C-contiguous")
    if mv.format == "B" and mv.ndim == 1:
        return mv
    return mv.cast("B")


def writable_view(buf: Buffer, name: str = "destination", index: int | None = None) -> memoryview:
    """Like [`byte_view`][doca_py.engines.byte_view] but refuse read-only buffers (before anything is written)."""
    mv = byte_view(buf, name, index)
    if mv.readonly:
        raise DocaInvalidValue(f"{_label(name, index)} is read-only")
    return mv


class _PyBuffer(ctypes.Structure):
    # CPython's Py_buffer; only ``buf`` is read. Used for read-only buffers, which
    # ctypes' from_buffer refuses.
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    ]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_tls = threading.local()


def _pybuffer_address(mv: memoryview) -> int:
    pb: _PyBuffer | None = getattr(_tls, "pybuf", None)
    if pb is None:
        pb = _tls.pybuf = _PyBuffer()
    if _get_buffer(mv, pb, 0) != 0:  # pragma: no cover - memoryview always exports
        raise DocaInvalidValue("cannot get the address of a read-only buffer")
    addr = int(pb.buf or 0)
    _release_buffer(pb)
    return addr


def _bytes_data_offset() -> int | None:
    # Where a bytes object's data starts relative to id(): measured, not assumed, and
    # only trusted if it holds for several objects.
    samples = [b"doca", bytes(100), b"x" * 4097]
    offsets = {_pybuffer_address(memoryview(b)) - id(b) for b in samples}
    return offsets.pop() if len(offsets) == 1 else None


_BYTES_OFFSET = _bytes_data_offset()


def view_address(mv: memoryview) -> int:
    """Address of the first byte of *mv*, a flat contiguous view from [`byte_view`][doca_py.engines.byte_view] (0 if empty).

    The address stays valid only while the caller keeps *mv* alive: the view's own
    buffer export is what stops a bytearray from being resized or freed meanwhile.
    """
    if not mv.nbytes:
        return 0
    if not mv.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(mv))
    obj = mv.obj
    if _BYTES_OFFSET is not None and type(obj) is bytes and mv.nbytes == len(obj):
        return id(obj) + _BYTES_OFFSET  # whole bytes object: skip two C-API calls
    return _pybuffer_address(mv)
