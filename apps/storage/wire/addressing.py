"""Address maths of the storage apps (storage-apps-spec §5).

Notation: ``B`` the initiator-visible block size, ``H = B/2`` the target block size,
``T`` the initiator's transaction count, ``N = 2·T`` the service's transactions per worker.

Worked example of §5.4 (targets of block size 2048, ``T = 64``, worker 0, transaction 3,
read of block 10 into initiator offset 12288):

```python
>>> layout = ChunkLayout(block_size=4096, transactions_per_worker=128)

```pycon
>>> layout.chunk_size, layout.chunk_base(worker=0, transaction=3)
(10240, 30720)
>>> req = IoMessage(IoMessageType.READ, user_data=3, io_size=4096, requester_offset=12288, storage_offset=40960)
>>> reqs = layout.read_requests(req, worker=0, transaction=3, block_index=0)
>>> [(r.requester_offset, r.storage_offset) for r in reqs.values()]
[(30720, 20480), (32768, 20480)]

```

```

Unlike the reference, inputs from the network are checked: unaligned storage offsets,
zero-block or > 255-block IOs and out-of-range target transfers are reported, not used.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from doca_py.errors import ErrorCode

from apps.storage.wire.control import StorageDetails
from apps.common.errors import StorageAppError
from apps.storage.wire.io_message import IoMessage, IoMessageType

__all__ = [
    "TargetRole", "ReadMode", "MAX_BLOCKS_PER_IO", "half_block_size", "doubled_storage_details",
    "doubled_transaction_count", "merge_target_details", "target_storage_offset", "blocks_in_io", "ChunkLayout",
    "WorkerSegment",
    "split_evenly", "segment_workers", "target_transfer_error", "COMPRESSED_SIZE_OFFSET",
    "COMPRESSED_DATA_OFFSET",
]

MAX_BLOCKS_PER_IO = 255
"""The gga service handles at most this many blocks per io message (u8 counter)."""
COMPRESSED_SIZE_OFFSET = 4
"""Offset of the BE ``compressed_size`` inside a compressed block (= inside a chunk)."""
COMPRESSED_DATA_OFFSET = 8
"""Offset of the LZ4 stream inside a compressed block."""


class TargetRole(enum.IntEnum):
    """The fixed roles of the three gga targets (index = order of every relay)."""

    DATA_1 = 0
    """Holds the first half of each block."""
    DATA_2 = 1
    """Holds the second half of each block."""
    DATA_P = 2
    """Holds the parity of the two halves."""


class ReadMode(enum.Enum):
    """How one block is read: both halves, or one half plus parity (recovery, §8.2)."""

    NORMAL = "normal"
    """Read data_1 and data_2."""
    RECOVER_A = "recover_a"  # data_1 missing: read data_p and data_2
    """data_1 missing: read data_p and data_2."""
    RECOVER_B = "recover_b"  # data_2 missing: read data_1 and data_p
    """data_2 missing: read data_1 and data_p."""


def half_block_size(block_size: int) -> int:
    """``H = B/2``; ``B`` must be even and positive."""
    if block_size <= 0 or block_size % 2:
        raise ValueError(f"block size {block_size} must be a positive even number")
    return block_size // 2


def doubled_storage_details(target: StorageDetails) -> StorageDetails:
    """What the gga service reports to the initiator for identical targets (§5.5)."""
    return StorageDetails(target.total_size * 2, target.block_size * 2)


def merge_target_details(details: Sequence[StorageDetails]) -> StorageDetails:
    """The common details of the three gga targets; ``BAD_STATE`` if they differ (§3.7)."""
    if not details:
        raise ValueError("no target details")
    first = details[0]
    for other in details[1:]:
        if other.total_size != first.total_size:
            raise StorageAppError(ErrorCode.BAD_STATE,
                                  f"Mismatch in storage capacity: {first.total_size} vs {other.total_size}")
        if other.block_size != first.block_size:
            raise StorageAppError(ErrorCode.BAD_STATE,
                                  f"Mismatch in block_size: {first.block_size} vs {other.block_size}")
    return first


def doubled_transaction_count(transaction_count: int) -> int:
    """``N = 2·T``: the transactions per worker the services use and send to targets."""
    n = 2 * transaction_count
    if n > 0xFFFF:
        raise ValueError(f"transaction count {transaction_count} is too large: 2 x T must fit in u16 (<= 65535)")
    return n


def blocks_in_io(io_size: int, block_size: int) -> int:
    """Blocks of one io message (``io_size / B``); must be 1 to [`MAX_BLOCKS_PER_IO`][apps.storage.wire.addressing.MAX_BLOCKS_PER_IO]
    and a whole number (the reference silently truncates)."""
    if io_size <= 0 or io_size % block_size:
        raise ValueError(f"io_size {io_size} is not a positive multiple of the block size {block_size}")
    blocks = io_size // block_size
    if blocks > MAX_BLOCKS_PER_IO:
        raise ValueError(f"io of {blocks} blocks exceeds the limit of {MAX_BLOCKS_PER_IO}")
    return blocks


def target_storage_offset(initiator_storage_offset: int, block_size: int, block_index: int = 0) -> int:
    """Target storage offset of block *block_index* of an IO: ``(s/B)·H + k·H`` (§4.3).

    *initiator_storage_offset* must be a multiple of ``B``.
    """
    if initiator_storage_offset < 0 or initiator_storage_offset % block_size:
        raise ValueError(f"storage offset {initiator_storage_offset} is not a multiple of the block size "
                         f"{block_size}")
    h = half_block_size(block_size)
    return (initiator_storage_offset // block_size) * h + block_index * h


@dataclass(frozen=True, slots=True)
class ChunkLayout:
    """The gga service's local data region: one chunk per (worker, transaction) (§5.2).

    Chunk layout from its base: data_1 half at 0, data_2 half at ``H``, parity at ``B``;
    with the write flow a temporary LZ4 output of ``1.5·B`` also starts at ``B``.
    """

    block_size: int
    """The block size ``B`` (even)."""
    transactions_per_worker: int
    """Transactions (chunks) per worker."""
    write_flow: bool = True
    """Whether chunks hold room for the temporary LZ4 output of writes."""

    def __post_init__(self) -> None:
        half_block_size(self.block_size)
        if self.transactions_per_worker <= 0:
            raise ValueError("transactions per worker must be positive")

    @property
    def half(self) -> int:
        """``H``."""
        return self.block_size // 2

    @property
    def chunk_size(self) -> int:
        """``2.5·B`` with the write flow, ``1.5·B`` without."""
        return 2 * self.block_size + self.half if self.write_flow else self.block_size + self.half

    def region_size(self, cores: int) -> int:
        """Bytes of the whole local region: ``cores × N × chunk``."""
        return cores * self.transactions_per_worker * self.chunk_size

    def chunk_base(self, worker: int, transaction: int) -> int:
        """Offset of the chunk of *transaction* of *worker*: ``(i·N + j) × chunk``."""
        if not 0 <= transaction < self.transactions_per_worker or worker < 0:
            raise ValueError(f"transaction {transaction} of worker {worker} is out of range "
                             f"(N = {self.transactions_per_worker})")
        return (worker * self.transactions_per_worker + transaction) * self.chunk_size

    def offsets(self, chunk_base: int) -> dict[TargetRole, int]:
        """Where each target's half lives in the chunk at *chunk_base*."""
        return {TargetRole.DATA_1: chunk_base, TargetRole.DATA_2: chunk_base + self.half,
                TargetRole.DATA_P: chunk_base + self.block_size}

    @staticmethod
    def host_offset(requester_offset: int, block_index: int, block_size: int) -> int:
        """Host address offset of block *block_index* of an IO: ``requester_offset + k·B``."""
        return requester_offset + block_index * block_size

    def _half_request(self, kind: IoMessageType, request: IoMessage, transaction: int, requester_offset: int,
                      block_index: int) -> IoMessage:
        return IoMessage(int(kind), user_data=transaction, io_size=self.half, requester_offset=requester_offset,
                         storage_offset=target_storage_offset(request.storage_offset, self.block_size, block_index))

    def read_requests(self, request: IoMessage, *, worker: int, transaction: int, block_index: int,
                      mode: ReadMode = ReadMode.NORMAL) -> dict[TargetRole, IoMessage]:
        """The two target read requests for block *block_index* of *request* (§8.2)."""
        base = self.chunk_base(worker, transaction)
        where = self.offsets(base)
        roles = {ReadMode.NORMAL: (TargetRole.DATA_1, TargetRole.DATA_2),
                 ReadMode.RECOVER_A: (TargetRole.DATA_P, TargetRole.DATA_2),
                 ReadMode.RECOVER_B: (TargetRole.DATA_1, TargetRole.DATA_P)}[mode]
        return {r: self._half_request(IoMessageType.READ, request, transaction, where[r], block_index) for r in roles}

    def write_requests(self, request: IoMessage, *, worker: int, transaction: int,
                       block_index: int) -> dict[TargetRole, IoMessage]:
        """The three target write requests for block *block_index* of *request* (§8.2)."""
        where = self.offsets(self.chunk_base(worker, transaction))
        return {r: self._half_request(IoMessageType.WRITE, request, transaction, where[r], block_index)
                for r in TargetRole}


@dataclass(frozen=True, slots=True)
class WorkerSegment:
    """One initiator worker's share (§5.1): contiguous local and storage block ranges."""

    local_offset: int
    """Offset of the worker's range in the local IO region."""
    local_blocks: int
    """Blocks in the local range."""
    storage_offset: int
    """Offset of the worker's range in the storage."""
    storage_blocks: int
    """Blocks in the storage range."""
    transaction_count: int
    """Transactions of the worker."""


def split_evenly(count: int, parts: int) -> list[int]:
    """*count* items over *parts*: the remainder goes one each to the first parts."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    base, extra = divmod(count, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def segment_workers(local_region_size: int, capacity: int, effective_block_size: int, workers: int,
                    transaction_count: int) -> list[WorkerSegment]:
    """Initiator worker segmentation of §5.1 (``T_w = min(T, local_i, storage_i)``).

    Raise ``ValueError`` if some worker would get no block.
    """
    if effective_block_size <= 0:
        raise ValueError("effective block size must be positive")
    local = split_evenly(local_region_size // effective_block_size, workers)
    storage = split_evenly(capacity // effective_block_size, workers)
    if min(local) == 0:
        raise ValueError(f"Local IO region of {local_region_size} bytes is to small to give each worker at least "
                         f"one block each ({workers} workers, block size {effective_block_size})")
    if min(storage) == 0:
        raise ValueError(f"Storage capacity of {capacity} bytes is to small to give each worker at least one "
                         f"block each ({workers} workers, block size {effective_block_size})")
    out, lo, so = [], 0, 0
    for nl, ns in zip(local, storage):
        out.append(WorkerSegment(lo * effective_block_size, nl, so * effective_block_size, ns,
                                 min(transaction_count, nl, ns)))
        lo, so = lo + nl, so + ns
    return out


def target_transfer_error(msg: IoMessage, storage_size: int, remote_size: int) -> str | None:
    """Why a target must refuse *msg* (type, or a range outside either region), or ``None``.

    The reference does no bounds checking; a Python target answers ``INVALID_VALUE``.
    """
    if msg.kind not in (IoMessageType.READ, IoMessageType.WRITE):
        return f"io message type {msg.type} is not read or write"
    if msg.io_size == 0:
        return "io_size is 0"
    if msg.storage_offset + msg.io_size > storage_size:
        return (f"storage range [{msg.storage_offset}, +{msg.io_size}) is outside the storage of "
                f"{storage_size} bytes")
    if msg.requester_offset + msg.io_size > remote_size:
        return (f"requester range [{msg.requester_offset}, +{msg.io_size}) is outside the remote region of "
                f"{remote_size} bytes")
    return None
