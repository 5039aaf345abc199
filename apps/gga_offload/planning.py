"""Pure data-path planning of the gga service (storage-apps-spec §4.2, §5.2, §8.2).

Nothing here touches DOCA: the worker asks these functions *what* to do and does it.

* :func:`check_initiator_request` validates one 64-byte io message from the initiator
  before anything is derived from it: the reference trusts the initiator (an unaligned
  offset, a zero-block or oversized IO, an offset past the storage or past the host region
  all lead to out-of-range accesses there); here each gets an error response.
* :class:`RecoverySchedule` is the per-worker countdown of ``--trigger-recovery-read-every-n``:
  every N-th block read is a simulated recovery read, alternating ``recover_b`` (first),
  ``recover_a``, ``recover_b`` … exactly as the reference's even/odd counter does.
* :class:`BlockPlan` gives the target requests and local spans of one block of one
  transaction (thin wrapper over :class:`~apps.storage.wire.addressing.ChunkLayout`).

>>> s = RecoverySchedule(2)
>>> [s.next_mode().value for _ in range(6)]
['normal', 'recover_b', 'normal', 'recover_a', 'normal', 'recover_b']
>>> s.recovery_count
3
"""

from __future__ import annotations

from dataclasses import dataclass

from doca_py.errors import ErrorCode

from apps.storage.wire.addressing import MAX_BLOCKS_PER_IO, ChunkLayout, ReadMode, TargetRole, half_block_size
from apps.storage.wire.compressed_block import OVERHEAD
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessage, IoMessageType

__all__ = ["RequestProblem", "ValidRequest", "check_initiator_request", "RecoverySchedule", "BlockPlan",
           "recovery_roles", "check_compressed_size", "EC_BLOCK_ALIGN", "check_target_geometry"]

EC_BLOCK_ALIGN = 64
"""doca_ec block sizes (here: the half block ``H``) must be a multiple of this."""


@dataclass(frozen=True, slots=True)
class RequestProblem:
    """Why an initiator request cannot be served: the ``doca_error_t`` to answer and a text."""

    code: ErrorCode
    reason: str


@dataclass(frozen=True, slots=True)
class ValidRequest:
    """A checked initiator request: its message, kind and block count."""

    message: IoMessage
    kind: IoMessageType
    blocks: int


def check_initiator_request(raw: bytes | bytearray | memoryview, received_len: int, *, block_size: int,
                            capacity: int, host_size: int, write_flow: bool = True) -> ValidRequest | RequestProblem:
    """Validate the io message the initiator sent (*raw*: the 64-byte slot, *received_len*:
    the bytes the consumer actually received).

    Problems (all answered, none fatal): a message of the wrong length, a type other than
    read/write (``NOT_SUPPORTED`` for writes without the write flow), an ``io_size`` that
    is not 1–255 whole blocks, a storage offset that is not block aligned or reaches past
    the capacity, a requester range outside the host's exported region.
    """
    if received_len != IO_MESSAGE_SIZE:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"io message of {received_len} bytes, expected "
                                                       f"{IO_MESSAGE_SIZE}")
    msg = IoMessage.unpack(raw)
    kind = msg.kind
    if kind not in (IoMessageType.READ, IoMessageType.WRITE):
        return RequestProblem(ErrorCode.NOT_SUPPORTED, f"io message type {msg.type} is not read or write")
    if kind is IoMessageType.WRITE and not write_flow:
        return RequestProblem(ErrorCode.NOT_SUPPORTED, "the write flow is not available")
    b = block_size
    if msg.io_size == 0 or msg.io_size % b:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"io_size {msg.io_size} is not a whole number of "
                                                       f"{b}-byte blocks")
    blocks = msg.io_size // b
    if blocks > MAX_BLOCKS_PER_IO:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"io of {blocks} blocks exceeds the limit of "
                                                       f"{MAX_BLOCKS_PER_IO}")
    if msg.storage_offset % b:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"storage_offset {msg.storage_offset} is not a multiple "
                                                       f"of the block size {b}")
    if msg.storage_offset + msg.io_size > capacity:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"storage range [{msg.storage_offset}, +{msg.io_size}) is "
                                                       f"outside the storage of {capacity} bytes")
    if msg.requester_offset + msg.io_size > host_size:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"requester range [{msg.requester_offset}, +{msg.io_size}) "
                                                       f"is outside the initiator's region of {host_size} bytes")
    return ValidRequest(msg, kind, blocks)


class RecoverySchedule:
    """The per-worker recovery countdown (§8.2 "recovery decision").

    ``every_n = 0`` never recovers. Otherwise the countdown starts at *every_n*; each block
    read decrements it; at 0 it is reset, the recovery counter increments and the mode is
    ``recover_a`` for an even counter, ``recover_b`` for an odd one (so the first is
    ``recover_b``).
    """

    def __init__(self, every_n: int) -> None:
        if every_n < 0:
            raise ValueError("every_n must be >= 0")
        self.every_n = every_n
        self._countdown = every_n
        self.recovery_count = 0

    def next_mode(self) -> ReadMode:
        """The mode of the next block read."""
        if self.every_n == 0:
            return ReadMode.NORMAL
        self._countdown -= 1
        if self._countdown > 0:
            return ReadMode.NORMAL
        self._countdown = self.every_n
        self.recovery_count += 1
        return ReadMode.RECOVER_A if self.recovery_count % 2 == 0 else ReadMode.RECOVER_B


def recovery_roles(mode: ReadMode) -> tuple[TargetRole, TargetRole]:
    """The two targets read in *mode*, in ascending EC block index (the order a recover task
    built with ``matrix_create_recover`` takes its survivors)."""
    return {ReadMode.NORMAL: (TargetRole.DATA_1, TargetRole.DATA_2),
            ReadMode.RECOVER_A: (TargetRole.DATA_2, TargetRole.DATA_P),
            ReadMode.RECOVER_B: (TargetRole.DATA_1, TargetRole.DATA_P)}[mode]


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """What one block of one transaction touches (offsets relative to the local region)."""

    layout: ChunkLayout
    worker: int
    transaction: int
    request: IoMessage
    block_index: int

    @property
    def chunk_base(self) -> int:
        """Offset of the transaction's chunk in the local region."""
        return self.layout.chunk_base(self.worker, self.transaction)

    @property
    def host_offset(self) -> int:
        """Offset of this block in the host region: ``requester_offset + k·B``."""
        return ChunkLayout.host_offset(self.request.requester_offset, self.block_index, self.layout.block_size)

    def read_requests(self, mode: ReadMode) -> dict[TargetRole, IoMessage]:
        """The two target read requests for *mode*."""
        return self.layout.read_requests(self.request, worker=self.worker, transaction=self.transaction,
                                         block_index=self.block_index, mode=mode)

    def write_requests(self) -> dict[TargetRole, IoMessage]:
        """The three target write requests."""
        return self.layout.write_requests(self.request, worker=self.worker, transaction=self.transaction,
                                          block_index=self.block_index)

    def recover_spans(self, mode: ReadMode) -> tuple[list[tuple[int, int]], tuple[int, int]]:
        """``([(offset, len) of the survivors, in EC index order], (offset, len) of the output)``
        for a recovery read in *mode*."""
        if mode is ReadMode.NORMAL:
            raise ValueError("a normal read recovers nothing")
        where = self.layout.offsets(self.chunk_base)
        h = self.layout.half
        survivors = [(where[r], h) for r in recovery_roles(mode)]
        missing = TargetRole.DATA_1 if mode is ReadMode.RECOVER_A else TargetRole.DATA_2
        return survivors, (where[missing], h)


def check_compressed_size(compressed_size: int, block_size: int) -> str | None:
    """Why a compressed block header read back from storage is impossible, or ``None``."""
    if compressed_size == 0:
        return "the compressed block is empty (compressed_size 0)"
    if compressed_size + OVERHEAD > block_size:
        return (f"the compressed block claims {compressed_size} bytes, at most {block_size - OVERHEAD} fit in a "
                f"{block_size}-byte block")
    return None


def check_target_geometry(total_size: int, half_block: int) -> str | None:
    """Why the targets' common geometry cannot serve a gga initiator, or ``None``."""
    if half_block == 0 or half_block % EC_BLOCK_ALIGN:
        return (f"the targets' block size {half_block} is not a positive multiple of {EC_BLOCK_ALIGN} "
                f"(doca_ec needs it for the half blocks)")
    if total_size == 0 or total_size % half_block:
        return f"the targets' capacity {total_size} is not a positive multiple of their block size {half_block}"
    half_block_size(2 * half_block)
    return None
