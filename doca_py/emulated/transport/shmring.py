"""Same-host shared-memory rings: one single-producer, single-consumer byte ring per direction.

A ring lives in a ``memfd`` its *consumer* creates and hands to the producer over a Unix socket
(``SCM_RIGHTS``), only after the connection's key exchange. The producer appends records and
publishes its ``head``; the consumer, polling from its progress engine, reads them, writes a
status into each record and publishes its ``tail``; the producer then reads the statuses
(:meth:`Producer.reap`) before it reuses the space. No system call and no thread hand-off per
record: a doorbell (the peer Pe's ``eventfd``) is rung only when the other side sleeps, i.e. set
its ``*_sleeping`` flag before blocking.

Layout (every index a 64-bit byte count that only grows, its own cache line)::

    0    magic u64 | version u32 | size u32          size: data bytes, a power of two
    64   head u64                                    written by the producer
    128  tail u64                                    written by the consumer
    192  consumer_sleeping u32                       the consumer's Pe is (about to be) asleep
    256  producer_sleeping u32                       the producer waits for statuses, asleep
    320  beat u64                                    bumped by the consumer while it polls
    512  data[size]

A record is a 16-byte header ``length u32 | kind u8 | flags u8 | status u16 | a u32 | b u32``
and *length* payload bytes, padded to 16; records never wrap (a ``PAD`` record fills the end).

Everything the peer writes is checked before use (indices, lengths, kinds, statuses):
a hostile or corrupt ring raises :class:`RingError` for that connection, never an access
outside the mapping.

Memory ordering. Each publication point has a barrier: the record bytes before ``head``
(:meth:`Producer.publish`), ``head`` before the record (:meth:`Consumer.head`), the statuses and the
payload reads before ``tail`` (:meth:`Consumer.publish`), ``tail`` before the statuses
(:meth:`Producer.reap`), and the store-then-load of the sleeping-flag handshakes (set a flag, then look
at the indices, against the peer's publish-then-look-at-the-flag) goes through :func:`fence`. On x86
(:data:`WEAK_ORDER` false) stores stay in order and loads stay in order, so only :func:`fence` does
anything (a locked instruction) and the others cost one test of a module constant. On any other CPU
(Arm: BlueField) every one of them is a full barrier, GCC's ``atomic_thread_fence`` from
``libatomic.so.1`` (``dmb ish`` on arm64); without that library :data:`UNAVAILABLE` says why and the
transports keep their sockets.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import mmap
import os
import platform
import socket
import struct
import threading
from collections.abc import Callable, Iterable

from ...log import logger
from ...memory import keep_memory_private

__all__ = ["RingError", "Ring", "Producer", "Consumer", "fence", "WEAK_ORDER", "UNAVAILABLE", "memory_order", "usable", "ring_doorbell", "send_fds", "recv_fds",
           "K_PAD", "REC_HDR", "DEFAULT_SIZE", "MAX_RECORD"]

_MAGIC = 0x676E697279706164  # "dapyring"
_VERSION = 1
_OFF_HEAD, _OFF_TAIL, _OFF_CSLEEP, _OFF_PSLEEP, _OFF_BEAT = 64, 128, 192, 256, 320
DATA = 512
#: length | kind | flags | status | a | b, in the host's byte order (both sides are on this host): the
#: receivers also read the fields through the ring's word views (:attr:`Ring.st16`, :attr:`Ring.st32`).
REC_HDR = struct.Struct("=IBBHII")
_HDR_SIZE = REC_HDR.size  # 16
K_PAD = 0
#: Data bytes of a connection's ring per direction.
DEFAULT_SIZE = 1 << 20
#: Largest record payload: larger messages travel as several records (the transports fragment them).
MAX_RECORD = 64 << 10
_GLOBAL = struct.Struct("<QII")
_pack_hdr = REC_HDR.pack_into
_unpack_hdr = REC_HDR.unpack_from
_U64 = ctypes.c_uint64
_U32 = ctypes.c_uint32
_fence_lock = threading.Lock()
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


class RingError(Exception):
    """The peer's side of a ring is malformed: the connection must go down."""


#: CPUs whose ordering the rings need no barrier for, but :func:`fence` (x86: TSO).
STRONG_MACHINES = frozenset({"x86_64", "amd64", "i386", "i486", "i586", "i686", "x86"})
_SEQ_CST = 5  # __ATOMIC_SEQ_CST


def _lock_fence() -> None:
    """A full barrier on x86: an uncontended lock round trip is a locked read-modify-write."""
    _fence_lock.acquire()
    _fence_lock.release()


def memory_order(machine: str, load: Callable[[str], ctypes.CDLL] = ctypes.CDLL
                 ) -> tuple[bool, Callable[[], None] | None, str]:
    """The rings' barriers on *machine* (``platform.machine()``): ``(weak, full barrier, why not)``.

    x86 (``weak`` false): the lock round trip, nothing else needed. Any other CPU: libatomic's
    ``atomic_thread_fence(__ATOMIC_SEQ_CST)`` (loaded with *load*), or ``None`` and the reason the
    rings cannot be used there."""
    if machine.lower() in STRONG_MACHINES:
        return False, _lock_fence, ""
    try:
        lib = load("libatomic.so.1")
        fn = lib.atomic_thread_fence
    except (OSError, AttributeError) as exc:
        return True, None, (f"same-host rings need a full memory barrier on {machine}: GCC's libatomic.so.1 "
                            f"with atomic_thread_fence ({exc}); install libatomic1 (the connections use their "
                            "sockets meanwhile)")
    fn.argtypes = [ctypes.c_int]
    fn.restype = None
    return True, functools.partial(fn, _SEQ_CST), ""


#: Whether this CPU needs a barrier at every publication point (not x86).
WEAK_ORDER: bool
_barrier: Callable[[], None] | None
#: Why the rings cannot be used on this machine ("" when they can): connections stay on their sockets.
UNAVAILABLE: str
WEAK_ORDER, _barrier, UNAVAILABLE = memory_order(platform.machine())
_full = _barrier or _lock_fence  # (unused when UNAVAILABLE: no ring is made)


_warned = False


def usable() -> bool:
    """Whether rings may be made on this machine; if not, says why once (``WARNING`` on the ``doca_py``
    logger) and the caller keeps its socket."""
    global _warned
    if not UNAVAILABLE:
        return True
    if not _warned:
        _warned = True
        logger.warning("%s", UNAVAILABLE)
    return False


def fence() -> None:
    """A full memory barrier (the sleeping-flag handshakes' store-then-load)."""
    _full()


def ring_doorbell(fd: int) -> None:
    """Wake the peer's progress engine (its ``eventfd``); a closed or full one is ignored."""
    try:
        os.eventfd_write(fd, 1)
    except OSError:
        pass


def _align(n: int) -> int:
    return (n + 15) & ~15


class Ring:
    """A mapped ring (either side)."""

    def __init__(self, fd: int, size: int, mm: mmap.mmap) -> None:
        self.fd = fd
        self.size = size
        self.mask = size - 1
        #: The mapping, kept open until :meth:`close`. No field below holds an export of it: each is
        #: addressed by address. (An export — ``from_buffer``, a memoryview of ``mm`` — freed by another
        #: thread is freed late on a free-threaded build, and ``mm.close()`` then refuses.)
        self.mm = mm
        probe = ctypes.c_char.from_buffer(mm)  # one export, dropped by this thread right away
        self.base = base = ctypes.addressof(probe)
        del probe
        #: The data bytes, viewed through a ctypes array at their address (its views export the
        #: array, not the mapping).
        self.data = memoryview((ctypes.c_ubyte * size).from_address(base + DATA)).cast("B")
        #: The data as 16-bit words: a record's status (offset 6 of a 16-byte-aligned record) is word
        #: ``(off >> 1) + 3``, read and written without :mod:`struct`.
        self.st16 = self.data.cast("H")
        #: The data as 32-bit words: a record's length, *a* and *b* (offsets 0, 8 and 12) are words
        #: ``off >> 2``, ``+ 2`` and ``+ 3``, read without a :mod:`struct` call (a receiver's hot loop).
        self.st32 = self.data.cast("I")
        self.head = _U64.from_address(base + _OFF_HEAD)
        self.tail = _U64.from_address(base + _OFF_TAIL)
        self.csleep = _U32.from_address(base + _OFF_CSLEEP)
        self.psleep = _U32.from_address(base + _OFF_PSLEEP)
        self.beat = _U64.from_address(base + _OFF_BEAT)

    @classmethod
    def create(cls, size: int = DEFAULT_SIZE, sealed: bool = True) -> Ring:
        """A new ring in a fresh ``memfd`` (the consumer's side creates it), its size sealed so that no
        holder of the descriptor can shrink it under a mapping (``SIGBUS``). *sealed* false makes a
        ring :meth:`attach` refuses (tests of that refusal)."""
        if size < 4096 or size & (size - 1) or size > 1 << 30:
            raise ValueError(f"ring size {size} is not a power of two in 4 KiB..1 GiB")
        keep_memory_private()  # the messages in flight must not be readable through our /proc/PID/fd
        fd = os.memfd_create("doca_py-ring", os.MFD_CLOEXEC | (os.MFD_ALLOW_SEALING if sealed else 0))
        try:
            os.ftruncate(fd, DATA + size)
            if sealed:
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
            mm = mmap.mmap(fd, DATA + size)
        except BaseException:
            os.close(fd)
            raise
        _GLOBAL.pack_into(mm, 0, _MAGIC, _VERSION, size)
        return cls(fd, size, mm)

    @classmethod
    def attach(cls, fd: int) -> Ring:
        """Map a ring the peer created (takes ownership of *fd*); :class:`RingError` if it is not one,
        or if its size is not sealed (a peer could shrink it under our mapping, see :meth:`create`)."""
        keep_memory_private()  # as in create: the peer's ring is now reachable through our /proc too
        try:
            if fcntl.fcntl(fd, fcntl.F_GET_SEALS) & _SEALS != _SEALS:
                raise RingError("the peer's ring is not sealed against resizing")
            total = os.fstat(fd).st_size
            if total < DATA + 4096:
                raise RingError(f"the peer's ring is {total} bytes, too small")
            mm = mmap.mmap(fd, total)
        except OSError as exc:
            os.close(fd)
            raise RingError(f"cannot map the peer's ring: {exc}") from None
        except BaseException:
            os.close(fd)
            raise
        magic, version, size = _GLOBAL.unpack_from(mm, 0)
        if magic != _MAGIC or version != _VERSION or size & (size - 1) or DATA + size != total:
            mm.close()
            os.close(fd)
            raise RingError(f"the peer's ring header is malformed (magic {magic:#x}, version {version}, "
                            f"size {size}, file {total} bytes)")
        return cls(fd, size, mm)

    def close(self) -> None:
        """Unmap and close (idempotent). The peer's mapping stays valid until it closes its own."""
        if self.fd < 0:
            return
        # Our own views first, so that a late use of the ring raises instead of touching unmapped memory.
        del self.head, self.tail, self.csleep, self.psleep, self.beat
        self.st16.release()
        self.st32.release()
        self.data.release()
        self.mm.close()
        os.close(self.fd)
        self.fd = -1


class Producer:
    """The writing side: append records, publish them, read back their statuses in order."""

    def __init__(self, ring: Ring) -> None:
        self.ring = ring
        self.pos = ring.head.value  # next write position (published or not)
        self.reaped = self.pos  # statuses read up to here: the space before it is free
        #: (start, end, tag) awaiting a status, in order: a list, so that :meth:`reap` takes the finished ones
        #: as one slice (no call per record).
        self.records: list[tuple[int, int, object]] = []

    def free(self) -> int:
        return self.ring.size - (self.pos - self.reaped)

    def room(self, length: int) -> bool:
        """Whether a record of *length* payload bytes fits now (counting a wrap's padding)."""
        rec = _HDR_SIZE + _align(length)
        end_room = self.ring.size - (self.pos & self.ring.mask)
        need = rec if rec <= end_room else rec + end_room
        return need <= self.free()

    def put(self, kind: int, flags: int, a: int, b: int, parts: Iterable[memoryview | bytes], length: int,
            tag: object) -> None:
        """Append one record (its room checked by :meth:`room` first); published by :meth:`publish`.

        *tag* comes back from :meth:`reap` with the record's status."""
        ring = self.ring
        size, data = ring.size, ring.data
        rec = _HDR_SIZE + _align(length)
        off = self.pos & ring.mask
        if rec > size - off:  # no wrap inside a record: pad to the end
            _pack_hdr(data, off, 0, K_PAD, 0, 0, 0, 0)
            self.pos += size - off
            off = 0
        _pack_hdr(data, off, length, kind, flags, 0xFFFF, a, b)
        p = off + _HDR_SIZE
        for s in parts:
            n = len(s)
            data[p:p + n] = s
            p += n
        start = self.pos
        self.pos += rec
        self.records.append((start, self.pos, tag))

    def put_one(self, kind: int, flags: int, a: int, b: int, part: memoryview | bytes, length: int,
                tag: object) -> bool:
        """:meth:`room` and :meth:`put` in one call for a payload of one part holding exactly *length*
        bytes (the common small send: no parts list). False, with nothing written, if it does not fit now."""
        ring = self.ring
        pos = self.pos
        size = ring.size
        off = pos & ring.mask
        rec = (length + 31) & ~15  # _HDR_SIZE + _align(length)
        end_room = size - off
        free = size - (pos - self.reaped)
        data = ring.data
        if rec > end_room:  # no wrap inside a record: pad to the end
            if rec + end_room > free:
                return False
            _pack_hdr(data, off, 0, K_PAD, 0, 0, 0, 0)
            pos += end_room
            off = 0
        elif rec > free:
            return False
        _pack_hdr(data, off, length, kind, flags, 0xFFFF, a, b)
        if length:
            data[off + _HDR_SIZE:off + _HDR_SIZE + length] = part
        self.pos = end = pos + rec
        self.records.append((pos, end, tag))
        return True

    def publish(self) -> None:
        if WEAK_ORDER:
            _full()  # the record bytes before the head
        self.ring.head.value = self.pos

    def reap(self, statuses: frozenset[int]) -> list[tuple[object, int]]:
        """Records the consumer has finished: ``(tag, status)`` in order. A status outside
        *statuses*, or a tail outside what was published, is :class:`RingError`."""
        ring = self.ring
        tail = ring.tail.value
        if tail == self.reaped:
            return []
        if not self.reaped <= tail <= ring.head.value or tail > self.pos:
            raise RingError(f"the peer's ring tail {tail} is outside [{self.reaped}, {self.pos}]")
        if WEAK_ORDER:
            _full()  # the tail before the statuses it covers
        recs = self.records
        st16, mask = ring.st16, ring.mask
        k = 0
        for rec in recs:
            if rec[1] > tail:
                if rec[0] < tail:
                    raise RingError(f"the peer's ring tail {tail} ends inside a record")
                break
            k += 1
        out = [(tag, st16[((start & mask) >> 1) + 3]) for start, _end, tag in recs[:k]]
        for _tag, st in out:
            if st not in statuses:
                raise RingError(f"the peer wrote status {st} into a ring record")
        del recs[:k]
        self.reaped = tail
        return out


class Consumer:
    """The reading side: validate and read records in order, give each a status, publish."""

    def __init__(self, ring: Ring, kinds: frozenset[int]) -> None:
        self.ring = ring
        self.kinds = kinds
        self.pos = ring.tail.value
        self.published = self.pos
        self.cur = 0  # size of the record :meth:`read` returned (read once: the peer may rewrite it)

    def pending(self) -> bool:
        return self.ring.head.value != self.pos

    def peek(self) -> tuple[int, int, int, int, int, memoryview] | None:
        """The next record: ``(kind, flags, length, a, b, payload)``, or ``None`` when none is published.

        The payload view is valid until :meth:`done`."""
        if self.ring.head.value == self.pos:
            return None
        rec = self.read(self.head())
        if rec is None:
            return None
        off = (self.pos & self.ring.mask) + _HDR_SIZE
        return (*rec, self.ring.data[off:off + rec[2]])

    def head(self) -> int:
        """The published head, checked (:class:`RingError` if it is not within one ring of our
        position): read it once per batch and pass it to :meth:`read`."""
        ring = self.ring
        head = ring.head.value
        if not 0 <= head - self.pos <= ring.size:
            raise RingError(f"the peer's ring head {head} is outside [{self.pos}, {self.pos + ring.size}]")
        if WEAK_ORDER:
            _full()  # the head before the records it covers
        return head

    def read(self, head: int) -> tuple[int, int, int, int, int] | None:
        """The next record before *head* (from :meth:`head`), validated: ``(kind, flags, length, a, b)``,
        or ``None`` when there is none. :attr:`pos` is then at the record: its payload is the *length*
        bytes after its header, at ``ring.data[(pos & mask) + REC_HDR.size:]``, until :meth:`done`."""
        pos = self.pos
        if head == pos:
            return None
        ring = self.ring
        size, data = ring.size, ring.data
        off = pos & ring.mask
        length, kind, flags, _st, a, b = _unpack_hdr(data, off)
        if kind == K_PAD:
            skip = size - off
            if pos + skip > head:
                raise RingError("the peer's ring pads past its head")
            self.pos = pos = pos + skip
            if head == pos:
                return None
            off = 0
            length, kind, flags, _st, a, b = _unpack_hdr(data, 0)
        rec = (length + 31) & ~15  # _HDR_SIZE + _align(length)
        if kind not in self.kinds or length > MAX_RECORD or off + rec > size or pos + rec > head:
            raise RingError(f"malformed ring record at {pos}: kind {kind}, length {length} "
                            f"(head {head}, ring {size} bytes)")
        self.cur = rec
        return kind, flags, length, a, b

    def done(self, status: int) -> None:
        """Finish the record :meth:`read` (or :meth:`peek`) returned: write its status, move past it
        (unpublished)."""
        ring = self.ring
        ring.st16[((self.pos & ring.mask) >> 1) + 3] = status
        self.pos += self.cur

    def publish(self) -> bool:
        """Make the finished records' statuses visible; whether anything was published."""
        if self.pos == self.published:
            return False
        if WEAK_ORDER:
            _full()  # the statuses written and the payloads read before the tail
        self.ring.tail.value = self.published = self.pos
        return True


def attach_with_bell(fds: list[int]) -> tuple[Ring, int]:
    """The peer's ring and doorbell as a handshake carried them (takes ownership of *fds*):
    :class:`RingError` unless they are exactly a ring and a descriptor, which is made non-blocking (a
    doorbell must never block us, whatever the peer sent)."""
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        raise RingError(f"the peer's handshake carried {len(fds)} descriptors, expected 2")
    ring_fd, bell = fds
    try:
        os.set_blocking(bell, False)
    except OSError:
        pass
    try:
        return Ring.attach(ring_fd), bell
    except RingError:
        os.close(bell)
        raise


def send_fds(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    """Send *data* with *fds* attached (``SCM_RIGHTS``), blocking until it is written."""
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])


def recv_fds(sock: socket.socket, n: int, maxfds: int) -> tuple[bytes, list[int]]:
    """Receive up to *n* bytes and up to *maxfds* descriptors (the caller owns them)."""
    data, fds, _flags, _addr = socket.recv_fds(sock, n, maxfds)
    return data, list(fds)
