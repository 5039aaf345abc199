"""The value of an emulated ``doca_sync_event`` and its export blob: a 64-bit cell in shareable memory,
locked across threads and processes, and the checked blob format of its exports. Part of
:mod:`.sync_event`, which re-exports every name."""

from __future__ import annotations

import enum
import fcntl
import struct
import threading
import weakref
import zlib
from collections.abc import Callable

from ..errors import DocaInvalidValue, DocaNotPermitted, DocaUnsupportedVersion
from . import export as ex
from .mmap import EmuMmap

__all__ = ["BlobKind", "encode_blob", "decode_blob", "holds", "MAGIC", "VERSION"]

MAGIC = b"DOCAPYSE"
VERSION = 1
_HEAD = struct.Struct("<8sHBxI")
_CRC = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_MASK = (1 << 64) - 1


class BlobKind(enum.IntEnum):
    """Which ``doca_sync_event_export_to_remote_*`` made a blob."""

    PCI = 1
    NET = 2


def encode_blob(kind: BlobKind, inner: bytes) -> bytes:
    """A sync-event blob around the mmap export blob *inner*."""
    body = _HEAD.pack(MAGIC, VERSION, kind, len(inner)) + inner
    return body + _CRC.pack(zlib.crc32(body))


def decode_blob(data: bytes, want: BlobKind) -> ex.Blob:
    """Check a sync-event blob of kind *want*; the decoded mmap blob inside (anything malformed is
    ``DocaInvalidValue``, another format version ``DocaUnsupportedVersion``)."""
    if len(data) < _HEAD.size or data[:8] != MAGIC:
        raise DocaInvalidValue("not a doca_py sync event export blob (bad magic or truncated)")
    _, version, kind, n = _HEAD.unpack_from(data)
    if version != VERSION:
        raise DocaUnsupportedVersion(f"sync event blob version {version}, this build reads version {VERSION}")
    if len(data) != _HEAD.size + n + _CRC.size:
        raise DocaInvalidValue(f"sync event blob is {len(data)} bytes, its header says {_HEAD.size + n + _CRC.size}")
    if zlib.crc32(data[:-_CRC.size]) != _CRC.unpack_from(data, len(data) - _CRC.size)[0]:
        raise DocaInvalidValue("sync event blob is corrupt (checksum mismatch)")
    if kind != want:
        other = {BlobKind.PCI: "export_to_remote_pci", BlobKind.NET: "export_to_remote_net"}
        raise DocaInvalidValue(f"the blob was made by {other.get(kind, f'kind {kind}')}; this import needs one "
                               f"from {other[want]}")
    inner = ex.decode(bytes(data[_HEAD.size:_HEAD.size + n]))
    if inner.length != 8 or inner.kind is not (ex.ExportKind.PCI if want is BlobKind.PCI else ex.ExportKind.RDMA):
        raise DocaInvalidValue("the sync event blob does not describe an exported 64-bit value")
    return inner


class _Cell:
    """The 64-bit value and its locks. *at(write)* is a view of its 8 bytes after the access checks; *fd* is
    the memfd other processes map the value from (``-1``: memory only this process reaches, the thread lock
    is enough)."""

    __slots__ = ("at", "fd", "off", "lock")

    def __init__(self, at: Callable[[bool], memoryview], fd: int, off: int, lock: threading.Lock) -> None:
        self.at, self.fd, self.off, self.lock = at, fd, off, lock

    def _locked(self, write: bool, fn: Callable[[memoryview], int]) -> int:
        with self.lock:
            view = self.at(write)  # first: a revoked import fails here, before touching the memfd
            if self.fd < 0:
                return fn(view)
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_EX, 8, self.off)
            except OSError as exc:
                raise DocaNotPermitted(f"the sync event's memory is gone: {exc}") from None
            try:
                return fn(view)
            finally:
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 8, self.off)

    def read(self) -> int:
        return self._locked(False, lambda v: int(_U64.unpack_from(v)[0]))

    def write(self, value: int) -> None:
        def put(v: memoryview) -> int:
            _U64.pack_into(v, 0, value & _MASK)
            return 0

        self._locked(True, put)

    def add(self, value: int) -> int:
        def rmw(v: memoryview) -> int:
            old = int(_U64.unpack_from(v)[0])
            _U64.pack_into(v, 0, (old + value) & _MASK)
            return old

        return self._locked(True, rmw)


# The owner's cell of each internal mmap: a same-process import shares its locks.
_owner_cells: weakref.WeakKeyDictionary[EmuMmap, _Cell] = weakref.WeakKeyDictionary()


def holds(op: str, current: int, value: int, mask: int) -> bool:
    """Whether ``wait_<op>`` on *current* is satisfied."""
    v = current & mask
    if op == "gt":
        return v > value
    if op == "eq":
        return v == value
    return v != value
