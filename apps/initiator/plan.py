"""What each execution strategy does, and the address pools (storage-apps-spec §5.1, §7.1, §7.2).

Sans-IO: nothing here touches DOCA, so the planning is unit-tested on its own.

>>> [a.name for a in strategy_steps("read_write_data_validity_test")]
['COPY_EXPECTED', 'WRITE', 'CLEAR', 'READ', 'VALIDATE', 'FINISH']
>>> pool = AddressPool.of_segment(base=8192, blocks=3, block_size=4096)
>>> [pool.take() for _ in range(3)]
[8192, 12288, 16384]
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from doca_py.errors import ErrorCode

from apps.storage.wire.addressing import WorkerSegment, segment_workers
from apps.common.cli.config import ExecutionStrategy
from apps.common.errors import StorageAppError

__all__ = ["Action", "STRATEGIES", "strategy_steps", "strategy_io_kinds", "is_validity_test", "AddressPool",
           "PoolExhaustedError", "WorkerPlan", "plan_workers", "synthesize_expected", "load_expected",
           "first_difference"]


class Action(enum.IntFlag):
    """Per-transaction action bits, with the reference's values (§7.1)."""

    READ = 1 << 0
    WRITE = 1 << 1
    COPY_EXPECTED = 1 << 28
    CLEAR = 1 << 29
    VALIDATE = 1 << 30
    FINISH = 1 << 31


#: The fixed execution order of the actions (§7.2).
_ORDER = (Action.COPY_EXPECTED, Action.WRITE, Action.CLEAR, Action.READ, Action.VALIDATE, Action.FINISH)

STRATEGIES: dict[str, Action] = {
    "read_throughput_test": Action.READ | Action.FINISH,
    "write_throughput_test": Action.WRITE | Action.FINISH,
    "read_only_data_validity_test": Action.CLEAR | Action.READ | Action.VALIDATE | Action.FINISH,
    "read_write_data_validity_test": Action.COPY_EXPECTED | Action.WRITE | Action.CLEAR | Action.READ
    | Action.VALIDATE | Action.FINISH,
}
"""The action mask of each ``--execution-strategy``."""


def strategy_steps(strategy: ExecutionStrategy | str) -> tuple[Action, ...]:
    """The actions of one transaction of *strategy*, in execution order."""
    try:
        mask = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown execution strategy {strategy!r}") from None
    return tuple(a for a in _ORDER if a & mask)


def strategy_io_kinds(strategy: ExecutionStrategy | str) -> tuple[str, ...]:
    """The IO directions (``"read"``, ``"write"``) a transaction of *strategy* performs."""
    steps = strategy_steps(strategy)
    return tuple(name for name, a in (("write", Action.WRITE), ("read", Action.READ)) if a in steps)


def is_validity_test(strategy: ExecutionStrategy | str) -> bool:
    """Whether *strategy* checks data (and so needs the expected content)."""
    return Action.VALIDATE in strategy_steps(strategy)


class PoolExhaustedError(StorageAppError):
    """A transaction found an address pool empty (fatal, as in the reference)."""

    def __init__(self, what: str) -> None:
        super().__init__(ErrorCode.NO_MEMORY, f"the {what} address pool is empty")


class AddressPool:
    """A FIFO ring of block offsets: a transaction takes the head and gives the offset
    back at the tail when it finishes, so addresses are used round-robin from the base."""

    __slots__ = ("_ring", "capacity", "what")

    def __init__(self, offsets: Sequence[int], *, what: str = "address") -> None:
        self._ring: deque[int] = deque(offsets)
        self.capacity = len(offsets)
        self.what = what

    @classmethod
    def of_segment(cls, base: int, blocks: int, block_size: int, *, what: str = "address") -> AddressPool:
        """The offsets ``base, base+E, …`` of a segment of *blocks* blocks."""
        return cls([base + i * block_size for i in range(blocks)], what=what)

    def __len__(self) -> int:
        return len(self._ring)

    @property
    def ring(self) -> deque[int]:
        """The offsets, head first: a data path takes (``popleft``) and gives back (``append``) inline,
        with :meth:`take`'s and :meth:`put`'s checks, instead of calling them per IO."""
        return self._ring

    def take(self) -> int:
        """The head offset; :class:`PoolExhaustedError` if empty."""
        try:
            return self._ring.popleft()
        except IndexError:
            raise PoolExhaustedError(self.what) from None

    def put(self, offset: int) -> None:
        """Give *offset* back (at the tail); refuses to grow past the capacity."""
        if len(self._ring) >= self.capacity:
            raise StorageAppError(ErrorCode.BAD_STATE, f"the {self.what} address pool is already full")
        self._ring.append(offset)


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    """One worker's share: its segments, transaction count ``T_w`` and run limit."""

    index: int
    cpu: int
    segment: WorkerSegment
    transaction_count: int
    run_limit: int

    @property
    def initial_transactions(self) -> int:
        """Transactions started at once: ``min(T_w, run limit)``."""
        return min(self.transaction_count, self.run_limit)

    def local_pool(self, block_size: int) -> AddressPool:
        """The worker's local (requester) offsets."""
        s = self.segment
        return AddressPool.of_segment(s.local_offset, s.local_blocks, block_size, what="local")

    def storage_pool(self, block_size: int) -> AddressPool:
        """The worker's storage offsets (the whole storage segment; see the module docs of
        :mod:`apps.initiator` for the reference's fill quirk)."""
        s = self.segment
        return AddressPool.of_segment(s.storage_offset, s.storage_blocks, block_size, what="storage")


def plan_workers(cpus: Sequence[int], local_region_size: int, capacity: int, effective_block_size: int,
                 transaction_count: int, run_limit: int) -> list[WorkerPlan]:
    """Split the local region and the storage between the workers (§5.1).

    *transaction_count* is the value sent to the service (``min(T, run limit)``).
    Raise :class:`StorageAppError` (``INVALID_VALUE``) if a worker gets no block.
    """
    try:
        segments = segment_workers(local_region_size, capacity, effective_block_size, len(cpus),
                                   transaction_count)
    except ValueError as exc:
        raise StorageAppError(ErrorCode.INVALID_VALUE, str(exc)) from None
    return [WorkerPlan(i, cpu, seg, seg.transaction_count, run_limit)
            for i, (cpu, seg) in enumerate(zip(cpus, segments))]


def synthesize_expected(capacity: int) -> bytes:
    """The read/write validity test's default content: byte *i* = *i* mod 256."""
    pattern = bytes(range(256))
    whole, rest = divmod(capacity, 256)
    return pattern * whole + pattern[:rest]


def load_expected(strategy: ExecutionStrategy | str, plain_file: Path | None, capacity: int) -> bytes | None:
    """The expected storage content of a validity test (``None`` for throughput tests).

    The file (or, for the read/write test without a file, the synthesized pattern) must be
    exactly *capacity* bytes long.
    """
    if not is_validity_test(strategy):
        return None
    if plain_file is None:
        if strategy == "read_only_data_validity_test":
            raise StorageAppError(ErrorCode.INVALID_VALUE,
                                  "--storage-plain-content is required for read_only_data_validity_test")
        return synthesize_expected(capacity)
    try:
        data = plain_file.read_bytes()
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED,
                              f"Failed to read {str(plain_file)!r}: {exc.strerror or exc}") from None
    if len(data) != capacity:
        raise StorageAppError(ErrorCode.INVALID_VALUE,
                              f"Validation tests require that the plain data: {len(data)} size is the same as the "
                              f"storage capacity: {capacity}")
    return data


def first_difference(got: bytes | memoryview, expected: bytes | memoryview) -> int | None:
    """Index of the first differing byte (``None`` if equal)."""
    a, b = bytes(got), bytes(expected)
    if a == b:
        return None
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on prefix equality: O(log n) slices compared in C
    while lo < hi:
        mid = (lo + hi) // 2
        if a[lo:mid + 1] == b[lo:mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo
