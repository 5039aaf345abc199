"""Host memory helpers: addresses of Python buffers and shareable allocations.

[`SharedMemory`][doca_py.memory.SharedMemory] is page-aligned memory backed by a ``memfd``. An ``Mmap``
over it can be exported to another process on the same host, which maps the same
pages (zero-copy) — what DOCA's PCI/RDMA export gives on hardware. The first page
of the memfd is a header the exporting process writes and importers read: it holds
the keys, ranges and permissions of the live exports, so the owner stays the
authority on what an importer may touch.

A process that holds such memory — its own or an imported one — marks itself non-dumpable
([`keep_memory_private`][doca_py.memory.keep_memory_private]): a memfd is otherwise open to every process of
the same user through ``/proc/<pid>/fd``. ``DOCA_PY_EMU_DUMPABLE=1`` keeps the process dumpable
(for a debugger or core dumps) at the price of that isolation.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap as _mmap
import os
import threading
import weakref
from typing import Any

from .errors import DocaInvalidValue, DocaNoMemory, DocaTypeError
from .log import logger

__all__ = ["PAGE_SIZE", "SharedMemory", "buffer_address", "find_shared", "keep_memory_private", "DUMPABLE_ENV"]

PAGE_SIZE = _mmap.PAGESIZE
"""The system page size (``mmap.PAGESIZE``)."""
HEADER_SIZE = PAGE_SIZE  # the memfd starts with one header page, then the data


DUMPABLE_ENV = "DOCA_PY_EMU_DUMPABLE"
"""Set to ``1`` to keep processes that hold shareable memory dumpable (see
[`keep_memory_private`][doca_py.memory.keep_memory_private])."""
_PR_SET_DUMPABLE = 4
_private_pid = 0


def keep_memory_private() -> None:
    """Mark this process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``), once per process.

    Its ``/proc/<pid>`` entries (``fd``, ``mem``, ``maps``) then belong to root, so no other process
    of the same user can open the memfds it holds. Skipped when :data:`DUMPABLE_ENV` is ``1``;
    a failure is logged as a warning, never raised.
    """
    global _private_pid
    if _private_pid == os.getpid():
        return
    _private_pid = os.getpid()
    if os.environ.get(DUMPABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            logger.warning("prctl(PR_SET_DUMPABLE, 0) failed (errno %d): shared memory stays reachable "
                           "through /proc by processes of the same user", ctypes.get_errno())
    except (OSError, AttributeError) as exc:
        logger.warning("cannot make this process non-dumpable (%s): shared memory stays reachable "
                       "through /proc by processes of the same user", exc)


def buffer_address(buf: Any, what: str = "buffer") -> tuple[int, int, memoryview]:
    """Address, length and a pinning byte view of a writable buffer-protocol object.

    The returned memoryview keeps the exporter pinned (a ``bytearray`` cannot be
    resized while it lives). An object without the buffer protocol is a ``DocaTypeError``
    naming *what*; read-only and non-contiguous buffers are refused (``DocaInvalidValue``):
    DOCA devices write through the addresses they are given.
    """
    try:
        mv = memoryview(buf)
    except TypeError:
        raise DocaTypeError(f"{what} must be a writable buffer (bytearray, mmap, numpy array ...), not "
                            f"{type(buf).__name__}") from None
    if not mv.contiguous or mv.readonly:
        why = "read-only" if mv.readonly else "not contiguous"
        mv.release()
        raise DocaInvalidValue(f"{type(buf).__name__} is {why}; DOCA memory must be writable and contiguous")
    mv = mv.cast("B")
    n = mv.nbytes
    if n == 0:
        return 0, 0, mv
    c_view = (ctypes.c_char * n).from_buffer(mv)
    addr = ctypes.addressof(c_view)
    del c_view  # the memoryview keeps the pin; the ctypes view would block mmap.close()
    return addr, n, mv


class _Registry:
    """Address ranges of live SharedMemory allocations, for lookup by address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starts: list[int] = []
        self._items: list[weakref.ref[SharedMemory]] = []

    def add(self, shm: SharedMemory) -> None:
        with self._lock:
            i = bisect.bisect(self._starts, shm.address)
            self._starts.insert(i, shm.address)
            self._items.insert(i, weakref.ref(shm))

    def remove(self, address: int) -> None:
        with self._lock:
            i = bisect.bisect_left(self._starts, address)
            if i < len(self._starts) and self._starts[i] == address:
                del self._starts[i]
                del self._items[i]

    def find(self, address: int, length: int) -> SharedMemory | None:
        with self._lock:
            i = bisect.bisect(self._starts, address) - 1
            if i < 0:
                return None
            shm = self._items[i]()
        if shm is None or shm.closed:
            return None
        if address + length <= shm.address + shm.size:
            return shm
        return None


_registry = _Registry()


def find_shared(address: int, length: int) -> SharedMemory | None:
    """The live [`SharedMemory`][doca_py.memory.SharedMemory] containing ``[address, address+length)``, if any."""
    return _registry.find(address, length)


class SharedMemory:
    """Page-aligned, zero-filled memory that other local processes can map.

    Use it like any buffer (``memoryview(shm.buffer)``) and register it with
    ``Mmap.set_memrange``. ``close()`` unmaps it; it fails with ``BufferError``
    while an ``Mmap`` or a memoryview still uses the memory.
    """

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise DocaInvalidValue(f"size must be positive, got {size}")
        self.size = size
        """The usable size in bytes."""
        mapped = -(-size // PAGE_SIZE) * PAGE_SIZE
        keep_memory_private()
        try:
            self._fd = os.memfd_create("doca_py", os.MFD_CLOEXEC)
        except OSError as exc:
            raise DocaNoMemory(f"memfd_create failed: {exc}") from exc
        try:
            os.ftruncate(self._fd, HEADER_SIZE + mapped)
            self._header = _mmap.mmap(self._fd, HEADER_SIZE)
            self._map = _mmap.mmap(self._fd, mapped, offset=HEADER_SIZE)
        except OSError as exc:
            os.close(self._fd)
            raise DocaNoMemory(f"cannot map {size} bytes of shared memory: {exc}") from exc
        self.buffer: memoryview = memoryview(self._map)[:size]
        """A writable view of the memory."""
        c_view = ctypes.c_char.from_buffer(self._map)
        self.address: int = ctypes.addressof(c_view)
        """The address of the memory in this process."""
        del c_view
        self.closed = False
        """Whether [`close`][doca_py.memory.SharedMemory.close] was called."""
        self.pid = os.getpid()
        """The process that created the memory."""
        self._exports_lock = threading.Lock()
        _registry.add(self)

    @property
    def fd(self) -> int:
        """The memfd; handed to importers by the owner for a valid export blob (``SCM_RIGHTS``)."""
        return self._fd

    @property
    def header(self) -> _mmap.mmap:
        """The owner-written export table (see `doca_py.emulated.export`)."""
        return self._header

    def __len__(self) -> int:
        return self.size

    def close(self) -> None:
        """Unmap and free the memory (``BufferError`` while still in use)."""
        if self.closed:
            return
        self.buffer.release()
        try:
            self._map.close()
        except BufferError:
            self.buffer = memoryview(self._map)[: self.size]
            raise
        self._header.close()
        os.close(self._fd)
        _registry.remove(self.address)
        self.closed = True

    def __enter__(self) -> SharedMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "closed", True) and os.getpid() == self.pid:
            try:
                self.close()
            except BufferError:
                pass
