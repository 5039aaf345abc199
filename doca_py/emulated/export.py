"""Emulated mmap export blobs and the owner's export table.

A blob is self-describing and versioned::

    magic "DOCAPYMX" | version u16 | kind u8 | 0 u8 | boot id 16B | pid u32 | memfd u32
    | slot u16 | 0 u16 | addr u64 | length u64 | offset u64 | perms u32 | key 16B | crc32 u32

(little endian). ``memfd``/``slot`` are ``NO_FD``/``NO_SLOT`` when the memory is not
shareable; such a blob can be imported only inside the exporting process.

The owner of shareable memory (:class:`doca_py.memory.SharedMemory`) keeps, in the
memfd's first page, a table of live exports: ``state u32 | perms u32 | digest 16B |
offset u64 | length u64``, where the digest is a hash of the key (the key itself is
never stored in the memory it protects). An importer gets the memfd from the owner
(:mod:`.memshare`), maps it and re-reads its slot on every access, so ``Mmap.stop``
in the owner revokes access everywhere at once.

A re-export (a PCI import exported again with ``export_rdma``, D.20) is the
re-exporting process's own export: its blob names that process, a fresh key and a
slot in that process's :class:`ReexportTable`, a memfd holding only such records.
Each record also names the exporter's slot and key digest of the memory it covers,
so an importer checks both on every access: the host revoking its map, or the DPU
destroying the map it re-exported, cuts the importer off.
"""

from __future__ import annotations

import ctypes
import enum
import hashlib
import mmap
import os
import secrets
import struct
import threading
import zlib
from dataclasses import dataclass
from typing import Union
from functools import lru_cache

from ..errors import DocaFull, DocaInvalidValue, DocaUnsupportedVersion
from ..memory import HEADER_SIZE, SharedMemory

__all__ = ["ExportKind", "Blob", "encode", "decode", "boot_id", "ExportTable", "ReexportTable", "reexport_add",
           "NO_FD", "NO_SLOT", "key_digest", "slot_matches", "upstream_of"]

MAGIC = b"DOCAPYMX"
VERSION = 1
_BLOB = struct.Struct("<8sHBx16sIIHxxQQQI16s")
_CRC = struct.Struct("<I")
BLOB_SIZE = _BLOB.size + _CRC.size
NO_FD = 0xFFFFFFFF
NO_SLOT = 0xFFFF

_TABLE_MAGIC = b"DOCAPYHD"
_TABLE_HEAD = struct.Struct("<8sII")
_SLOT = struct.Struct("<II16sQQ")
_UPSTREAM = struct.Struct("<I16s")  # after _SLOT in a re-export record: the covered export's slot and digest
_SLOT_BASE = 64
_SLOT_SIZE = 64
NUM_SLOTS = (HEADER_SIZE - _SLOT_BASE) // _SLOT_SIZE
_LIVE = 1


class ExportKind(enum.IntEnum):
    """Which ``doca_mmap_export_*`` made a blob."""

    PCI = 1
    RDMA = 2


@lru_cache(maxsize=1)
def boot_id() -> bytes:
    """16 bytes naming this host and boot: blobs from elsewhere are not mappable."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return bytes.fromhex(f.read().strip().replace("-", ""))[:16].ljust(16, b"\0")
    except (OSError, ValueError):
        import socket

        return socket.gethostname().encode()[:16].ljust(16, b"\0")


@dataclass(frozen=True)
class Blob:
    """The decoded contents of an export blob."""

    kind: ExportKind
    boot_id: bytes
    pid: int
    fd: int
    slot: int
    addr: int
    length: int
    offset: int
    perms: int
    key: bytes


def encode(b: Blob) -> bytes:
    body = _BLOB.pack(MAGIC, VERSION, b.kind, b.boot_id, b.pid, b.fd, b.slot, b.addr, b.length,
                      b.offset, b.perms, b.key)
    return body + _CRC.pack(zlib.crc32(body))


def decode(data: bytes) -> Blob:
    """Parse and validate a blob; anything malformed is ``DocaInvalidValue``."""
    if len(data) < 10 or data[:8] != MAGIC:
        raise DocaInvalidValue("not a doca_py mmap export blob (bad magic or truncated)")
    (version,) = struct.unpack_from("<H", data, 8)
    if version != VERSION:
        raise DocaUnsupportedVersion(f"export blob version {version}, this build reads version {VERSION}")
    if len(data) != BLOB_SIZE:
        raise DocaInvalidValue(f"export blob is {len(data)} bytes, expected {BLOB_SIZE}")
    body = data[: _BLOB.size]
    if zlib.crc32(body) != _CRC.unpack_from(data, _BLOB.size)[0]:
        raise DocaInvalidValue("export blob is corrupt (checksum mismatch)")
    _, _, kind, bid, pid, fd, slot, addr, length, offset, perms, key = _BLOB.unpack(body)
    try:
        k = ExportKind(kind)
    except ValueError:
        raise DocaInvalidValue(f"export blob has unknown kind {kind}") from None
    if length == 0 or addr + length > 1 << 64:
        raise DocaInvalidValue("export blob describes an empty or impossible range")
    return Blob(k, bid, pid, fd, slot, addr, length, offset, perms, key)


class _Table:
    """A page of export records: one writer (the exporting process), any number of readers."""

    def __init__(self, header: mmap.mmap, lock: threading.Lock) -> None:
        self.header = header
        self._lock = lock
        if self.header[:8] != _TABLE_MAGIC:
            _TABLE_HEAD.pack_into(self.header, 0, _TABLE_MAGIC, VERSION, NUM_SLOTS)

    def add(self, perms: int, offset: int, length: int, upstream: tuple[int, bytes] | None = None) -> tuple[int, bytes]:
        """Publish an export; returns (slot, key). *upstream*: (slot, digest) of the export it covers."""
        key = secrets.token_bytes(16)
        with self._lock:
            for slot in range(NUM_SLOTS):
                pos = _SLOT_BASE + slot * _SLOT_SIZE
                if _SLOT.unpack_from(self.header, pos)[0] != _LIVE:
                    # Fields first, state last: a reader never sees a live slot half-written.
                    _SLOT.pack_into(self.header, pos, 0, perms, key_digest(key), offset, length)
                    _UPSTREAM.pack_into(self.header, pos + _SLOT.size, *(upstream or (NO_SLOT, bytes(16))))
                    struct.pack_into("<I", self.header, pos, _LIVE)
                    return slot, key
        raise DocaFull(f"more than {NUM_SLOTS} live exports in one export table")

    def revoke(self, slot: int) -> None:
        pos = _SLOT_BASE + slot * _SLOT_SIZE
        with self._lock:
            _SLOT.pack_into(self.header, pos, 0, 0, bytes(16), 0, 0)
            _UPSTREAM.pack_into(self.header, pos + _SLOT.size, NO_SLOT, bytes(16))


class ExportTable(_Table):
    """The owner-side export table in a SharedMemory header page."""

    def __init__(self, shm: SharedMemory) -> None:
        super().__init__(shm.header, shm._exports_lock)


class ReexportTable(_Table):
    """A page of this process's re-export records, in a memfd of its own that importers map read-only."""

    def __init__(self) -> None:
        self.fd = os.memfd_create("doca_py-reexports", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, HEADER_SIZE)
        self.pid = os.getpid()
        super().__init__(mmap.mmap(self.fd, HEADER_SIZE), threading.Lock())


_reexport_tables: list[ReexportTable] = []
_reexport_lock = threading.Lock()


def reexport_add(perms: int, offset: int, length: int, upstream: tuple[int, bytes]) -> tuple[ReexportTable, int, bytes]:
    """Publish a re-export of the export *upstream* (its slot, its key's digest); (table, slot, key)."""
    with _reexport_lock:
        if _reexport_tables and _reexport_tables[0].pid != os.getpid():
            _reexport_tables.clear()  # a forked child writes its own records, never its parent's
        for table in _reexport_tables:
            try:
                return (table, *table.add(perms, offset, length, upstream))
            except DocaFull:
                continue
        table = ReexportTable()  # tables live as long as the process: importers hold their fds
        _reexport_tables.append(table)
        return (table, *table.add(perms, offset, length, upstream))


def key_digest(key: bytes) -> bytes:
    """What the export table stores for a key: a hash, useless to whoever reads the page."""
    return hashlib.blake2b(key, digest_size=16, person=b"doca_py-export").digest()


#: What the slot readers take: a mapping of an export table or a ctypes view of it (thread-safe to share).
Readable = Union[bytes, memoryview, mmap.mmap, "ctypes.Array[ctypes.c_char]"]


def slot_matches(header: Readable, blob: Blob, digest: bytes) -> bool:
    """Whether *blob*'s slot (its key hashed to *digest*) is still live in a view of the header."""
    if blob.slot >= NUM_SLOTS:
        return False
    state, perms, stored, offset, length = _SLOT.unpack_from(header, _SLOT_BASE + blob.slot * _SLOT_SIZE)
    return bool(state == _LIVE and stored == digest and perms == blob.perms
            and offset == blob.offset and length == blob.length)


def slot_probe(header: Readable, blob: Blob, digest: bytes
               ) -> tuple[Readable, int, tuple[int, int, bytes, int, int]]:
    """What :func:`slot_matches` reads and expects, precomputed: *blob*'s slot is live while
    ``SLOT_UNPACK(view, pos) == want`` (*blob*'s slot must be in range)."""
    assert blob.slot < NUM_SLOTS
    return header, _SLOT_BASE + blob.slot * _SLOT_SIZE, (_LIVE, blob.perms, digest, blob.offset, blob.length)


#: ``unpack_from`` of a slot record, for :func:`slot_probe`'s probes.
SLOT_UNPACK = _SLOT.unpack_from


def upstream_of(table: Readable, blob: Blob, digest: bytes) -> tuple[int, bytes] | None:
    """(slot, digest) of the export that *blob*'s live re-export record covers (None: not live)."""
    if not slot_matches(table, blob, digest):
        return None
    slot, up = _UPSTREAM.unpack_from(table, _SLOT_BASE + blob.slot * _SLOT_SIZE + _SLOT.size)
    return (int(slot), bytes(up)) if slot != NO_SLOT else None
