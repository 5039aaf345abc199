"""The per-transaction state machine of the gga bridge (storage-apps-spec §8.2), as pure logic.

Nothing here touches DOCA: a :class:`Transaction` holds what one of a worker's ``N``
transactions is doing — its pending steps, the block in progress, where its halves go in
its chunk, the target requests and engine step still outstanding, its first error — and
answers "what next?" (:meth:`Transaction.next_step`) and "what does this event change?"
(:meth:`~Transaction.sent`, :meth:`~Transaction.answered`, :meth:`~Transaction.write_off`,
:meth:`~Transaction.plan_read`). The worker does the steps with DOCA objects (``targets``,
``engines``) and feeds the completions back.

Steps, in the §8.2 priority order: fetch from storage (two half-block reads, the read mode
decided here), fetch from the initiator (DMA), recover (EC), decompress (LZ4), produce the
parity (EC create), commit (three half-block writes), advance to the next block, reply.
A transaction with an error only replies: the first failure is what the initiator gets.

Error codes are ``doca_error_t`` values, the ``result`` field of an io message (§4.1).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from apps.storage.wire.addressing import ReadMode, TargetRole

__all__ = ["Transaction", "REPLY", "ADVANCE", "FETCH_FROM_STORAGE", "RECOVER", "DECOMPRESS",
           "FETCH_FROM_INITIATOR", "PRODUCE_EC", "COMMIT", "READ_ACTIONS", "WRITE_ACTIONS", "READ_ROLES",
           "WRITE_ROLES", "SUCCESS", "NOT_PERMITTED", "TIME_OUT", "CONNECTION_RESET", "IO_FAILED", "BAD_STATE",
           "UNEXPECTED", "UNKNOWN"]

# doca_error_t values this module answers with itself (tests check them against doca_py.errors.ErrorCode).
SUCCESS = 0
UNKNOWN = 1
NOT_PERMITTED = 2
TIME_OUT = 9
CONNECTION_RESET = 11
IO_FAILED = 17
BAD_STATE = 18
UNEXPECTED = 22

# action bits (§8.2; recover_a/recover_b are one bit plus the transaction's read mode)
REPLY = 1 << 0
ADVANCE = 1 << 2
FETCH_FROM_STORAGE = 1 << 8
RECOVER = 1 << 9
DECOMPRESS = 1 << 11
FETCH_FROM_INITIATOR = 1 << 16
PRODUCE_EC = 1 << 17
COMMIT = 1 << 18
READ_ACTIONS = FETCH_FROM_STORAGE | DECOMPRESS | ADVANCE | REPLY
WRITE_ACTIONS = FETCH_FROM_INITIATOR | PRODUCE_EC | COMMIT | ADVANCE | REPLY
# The first pending step wins, in this order (§8.2 "progress").
_ORDER = (FETCH_FROM_STORAGE, FETCH_FROM_INITIATOR, RECOVER, DECOMPRESS, PRODUCE_EC, COMMIT)

_D1, _D2, _DP = int(TargetRole.DATA_1), int(TargetRole.DATA_2), int(TargetRole.DATA_P)
READ_ROLES = {ReadMode.NORMAL: (_D1, _D2), ReadMode.RECOVER_A: (_DP, _D2), ReadMode.RECOVER_B: (_D1, _DP)}
"""The two targets a block read asks, per read mode."""
WRITE_ROLES = (_D1, _D2, _DP)
_NAMES = ("data_1", "data_2", "data_p")


class Transaction:
    """One transaction's progress. Offsets are relative to the worker's local region."""

    __slots__ = ("index", "chunk_base", "half_offsets", "alt_offsets", "alt_base", "pending", "actions", "kind",
                 "requester_offset", "storage_offset", "blocks", "block", "mode", "error", "error_text",
                 "send_mask", "resp_mask", "op_busy", "busy", "where", "data_base", "deadline")

    def __init__(self, index: int, chunk_base: int = 0, half_offsets: tuple[int, int, int] = (0, 0, 0),
                 alt_offsets: tuple[int, int, int] | None = None) -> None:
        self.index = index
        self.chunk_base = chunk_base          # this transaction's chunk in the local region
        self.half_offsets = half_offsets      # where data_1 / data_2 / data_p halves live in it
        # Degraded recovery reads put the halves at 1.5·B (data_1) and 2·B (data_2) of the chunk (the
        # parity stays at B): a stalled target's late RDMA write lands at its normal place, never there.
        self.alt_offsets = alt_offsets
        self.alt_base = alt_offsets[0] if alt_offsets is not None else chunk_base
        self.reset()

    def reset(self) -> None:
        """Idle again (after the reply completed)."""
        self.pending = 0
        self.actions = 0
        self.kind = 0
        self.requester_offset = 0
        self.storage_offset = 0
        self.blocks = 0
        self.block = 0
        self.mode = ReadMode.NORMAL
        self.error = SUCCESS
        self.error_text = ""
        self.send_mask = 0                    # target requests not yet sent (bit = role)
        self.resp_mask = 0                    # target requests not yet answered
        self.op_busy = False                  # an engine step (or the reply) is running
        self.busy = False                     # a request was received and not answered yet
        self.where = self.half_offsets        # the data_1 / data_2 / data_p places of the current block
        self.data_base = self.chunk_base      # where the current block's compressed form starts
        self.deadline = 0.0                   # when the current target requests are overdue

    # ------------------------------------------------------------------ starting and ending
    def begin(self, actions: int, kind: int, blocks: int, requester_offset: int, storage_offset: int) -> None:
        """Serve a checked request: *actions* is ``READ_ACTIONS`` or ``WRITE_ACTIONS``."""
        self.actions = self.pending = actions
        self.kind = kind
        self.blocks = blocks
        self.block = 0
        self.requester_offset = requester_offset
        self.storage_offset = storage_offset

    def refuse(self, code: int, text: str) -> None:
        """Answer at once with *code*."""
        self.set_error(code, text)
        self.pending = REPLY

    def set_error(self, code: int, text: str) -> None:
        """Record the first failure; the transaction then only replies."""
        if self.error == SUCCESS:
            self.error = int(code) or UNKNOWN
            self.error_text = text

    @property
    def outstanding(self) -> bool:
        """Whether an asynchronous step is still running."""
        return self.op_busy or bool(self.send_mask or self.resp_mask)

    @property
    def reading(self) -> bool:
        """Whether this is a read whose blocks can still be served (no error yet)."""
        return self.actions == READ_ACTIONS and self.error == SUCCESS

    def next_step(self) -> int:
        """The step to do now (one action bit), or 0 while something is outstanding or when done.

        Advancing to the next block happens here; ``REPLY`` is returned once, the caller then
        sends the answer (and calls :meth:`reset` when it is sent)."""
        while not (self.op_busy or self.send_mask or self.resp_mask):
            p = self.pending
            if p == 0:
                return 0
            if self.error != SUCCESS and p != REPLY:
                self.pending = REPLY
                continue
            for bit in _ORDER:
                if p & bit:
                    return bit
            if p & ADVANCE:
                self.block += 1
                self.pending = self.actions if self.block < self.blocks else REPLY
                continue
            if p & REPLY:
                self.pending = 0
                return REPLY
            raise AssertionError(f"unknown pending actions {p:#x}")
        return 0

    # ------------------------------------------------------------------ target requests
    def plan_read(self, dead: Collection[TargetRole], next_mode: Callable[[], ReadMode],
                  describe_out: Callable[[], str]) -> tuple[int, ...] | None:
        """Decide how block ``block`` is read: the roles to ask, or ``None`` (error set).

        No target out: the recovery schedule (*next_mode*) picks the mode, halves at their normal
        places. One out: the two survivors — data_p out: a plain read; data_1 / data_2 out: the
        other half and the parity, recovered into the alternative places of the chunk."""
        self.pending &= ~(FETCH_FROM_STORAGE | RECOVER)
        if not dead:
            self.mode = mode = next_mode()
            self.where, self.data_base = self.half_offsets, self.chunk_base
        else:
            lost = next(iter(dead))
            if len(dead) > 1 or (lost is not TargetRole.DATA_P and self.alt_offsets is None):
                self.set_error(CONNECTION_RESET, f"storage target(s) {describe_out()} out")
                return None
            if lost is TargetRole.DATA_P:
                self.mode = mode = ReadMode.NORMAL
                self.where, self.data_base = self.half_offsets, self.chunk_base
            else:
                self.mode = mode = ReadMode.RECOVER_A if lost is TargetRole.DATA_1 else ReadMode.RECOVER_B
                self.where, self.data_base = self.alt_offsets, self.alt_base  # type: ignore[assignment]
        if mode is not ReadMode.NORMAL:
            self.pending |= RECOVER
        return READ_ROLES[mode]

    def plan_commit(self) -> tuple[int, ...]:
        """The three half-block writes of the current block (halves at their normal places)."""
        self.pending &= ~COMMIT
        self.where = self.half_offsets
        return WRITE_ROLES

    def refused_roles(self, roles: tuple[int, ...], dead: Collection[TargetRole]) -> bool:
        """Whether *roles* include a target that is out (the error is then set)."""
        for r in roles:
            if TargetRole(r) in dead:
                self.set_error(NOT_PERMITTED if self.actions == WRITE_ACTIONS else CONNECTION_RESET,
                               f"storage target {_NAMES[r]} is out (degraded mode)")
                return True
        return False

    def target_storage_offset(self, block_size: int, half: int) -> int:
        """``(s / B)·H + k·H`` (``s`` is a multiple of ``B``: checked on arrival)."""
        return (self.storage_offset // block_size + self.block) * half

    def sent(self, role: int) -> bool:
        """The request to *role* was sent; whether the transaction can progress now."""
        bit = 1 << role
        if not self.send_mask & bit:
            return False  # written off: its target was taken out meanwhile
        self.send_mask &= ~bit
        return not (self.op_busy or self.send_mask or self.resp_mask)

    def answered(self, role: int, typ: int, result: int, result_type: int) -> bool:
        """*role* answered (io message *typ*, *result*); whether the transaction can progress now."""
        self.resp_mask &= ~(1 << role)
        if typ != result_type:
            self.set_error(UNEXPECTED, f"{_NAMES[role]} answered with io message type {typ}")
        elif result != SUCCESS:
            self.set_error(result, f"{_NAMES[role]} answered with error {result}")
        return not (self.op_busy or self.send_mask or self.resp_mask)

    def send_failed(self, role: int, code: int, text: str) -> bool:
        """Sending to *role* failed (no answer will come); whether the transaction can progress now."""
        bit = 1 << role
        self.send_mask &= ~bit
        self.resp_mask &= ~bit
        self.set_error(code, text)
        return not (self.op_busy or self.send_mask or self.resp_mask)

    def write_off(self, role: int, readable: bool, code: int, text: str) -> bool | None:
        """Target *role* was taken out: forget its requests. A read fetches the block again from the
        others when *readable* (one target out); anything else fails with *code*.

        ``None`` if nothing of this transaction waited for *role*; else whether it failed."""
        bit = 1 << role
        if not (self.send_mask | self.resp_mask) & bit:
            return None
        self.send_mask &= ~bit
        self.resp_mask &= ~bit
        if readable and self.reading:
            self.pending = (self.pending | FETCH_FROM_STORAGE) & ~RECOVER  # this block again, degraded
            return False
        self.set_error(code, text)
        return True

