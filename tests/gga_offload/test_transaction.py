"""The gga bridge's per-transaction state machine (apps.gga_offload.transaction), without DOCA."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode

import apps.gga_offload as gga
from apps.gga_offload import transaction as tx
from apps.gga_offload.transaction import ADVANCE, COMMIT, DECOMPRESS, FETCH_FROM_INITIATOR, FETCH_FROM_STORAGE, \
    PRODUCE_EC, READ_ACTIONS, RECOVER, REPLY, WRITE_ACTIONS, Transaction
from apps.storage.wire.addressing import ReadMode, TargetRole

B, H = 4096, 2048
D1, D2, DP = int(TargetRole.DATA_1), int(TargetRole.DATA_2), int(TargetRole.DATA_P)
PKG = Path(gga.__file__).parent


def _txn(alt: bool = True) -> Transaction:
    return Transaction(3, 1000, (1000, 1000 + H, 1000 + B), (1000 + B + H, 1000 + 2 * B, 1000 + B) if alt else None)


def _normal() -> ReadMode:
    return ReadMode.NORMAL


def _out() -> str:
    return "data_1 (lost)"


def test_error_codes_are_doca_error_values() -> None:
    for name in ("SUCCESS", "UNKNOWN", "NOT_PERMITTED", "TIME_OUT", "CONNECTION_RESET", "IO_FAILED", "BAD_STATE",
                 "UNEXPECTED"):
        assert getattr(tx, name) == int(ErrorCode[name]), name


def test_the_state_machine_imports_no_doca_and_no_module_imports_the_emulated_backend() -> None:
    def imported(path: Path) -> set[str]:
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        return names

    assert not {m for m in imported(PKG / "transaction.py") if m.split(".")[0] == "doca_py"}
    for path in PKG.glob("*.py"):
        assert not [m for m in imported(path) if m.startswith("doca_py.emulated")], path.name


def test_a_read_of_two_blocks_goes_through_fetch_decompress_advance_reply() -> None:
    t = _txn()
    t.begin(READ_ACTIONS, 1, 2, 8192, 3 * B)
    seen = []
    for _block in range(2):
        assert t.next_step() == FETCH_FROM_STORAGE
        assert t.plan_read(set(), _normal, _out) == (D1, D2)
        assert t.where == (1000, 1000 + H, 1000 + B) and t.data_base == 1000
        assert t.target_storage_offset(B, H) == (3 + t.block) * H
        t.send_mask = t.resp_mask = (1 << D1) | (1 << D2)
        assert t.next_step() == 0                       # waits for the targets
        assert not t.sent(D1) and not t.sent(D2)
        assert not t.answered(D1, 0, 0, 0)
        assert t.answered(D2, 0, 0, 0)                  # the last completion lets it go on
        step = t.next_step()
        assert step == DECOMPRESS
        t.pending &= ~DECOMPRESS
        seen.append(t.block)
    assert t.next_step() == REPLY and t.pending == 0 and t.error == tx.SUCCESS
    assert seen == [0, 1] and t.block == 2


def test_a_recovery_read_adds_the_recover_step() -> None:
    t = _txn()
    t.begin(READ_ACTIONS, 1, 1, 0, 0)
    assert t.next_step() == FETCH_FROM_STORAGE
    assert t.plan_read(set(), lambda: ReadMode.RECOVER_A, _out) == (DP, D2)
    assert t.next_step() == RECOVER


def test_degraded_reads_use_the_survivors_at_the_alternative_places() -> None:
    t = _txn()
    t.begin(READ_ACTIONS, 1, 1, 0, 0)
    t.next_step()
    assert t.plan_read({TargetRole.DATA_1}, _normal, _out) == (DP, D2)
    assert t.mode is ReadMode.RECOVER_A and t.where == t.alt_offsets and t.data_base == 1000 + B + H
    assert t.pending & RECOVER
    t2 = _txn()
    t2.begin(READ_ACTIONS, 1, 1, 0, 0)
    t2.next_step()
    assert t2.plan_read({TargetRole.DATA_P}, _normal, _out) == (D1, D2) and t2.mode is ReadMode.NORMAL
    t3 = _txn(alt=False)  # no room for the alternative places: cannot serve a data_2-less read
    t3.begin(READ_ACTIONS, 1, 1, 0, 0)
    t3.next_step()
    assert t3.plan_read({TargetRole.DATA_2}, _normal, _out) is None
    assert t3.error == tx.CONNECTION_RESET and "data_1 (lost) out" in t3.error_text
    assert t3.next_step() == REPLY


def test_a_write_goes_dma_ec_commit_and_refuses_a_dead_target() -> None:
    t = _txn()
    t.begin(WRITE_ACTIONS, 2, 1, 0, 0)
    order = []
    for step in (FETCH_FROM_INITIATOR, PRODUCE_EC):
        assert t.next_step() == step
        t.pending &= ~step
        order.append(step)
    assert t.next_step() == COMMIT
    assert t.plan_commit() == (D1, D2, DP) and t.where == t.half_offsets
    assert t.refused_roles((D1, D2, DP), {TargetRole.DATA_P})
    assert t.error == tx.NOT_PERMITTED and t.next_step() == REPLY


def test_the_first_error_wins_and_ends_the_io() -> None:
    t = _txn()
    t.begin(READ_ACTIONS, 1, 3, 0, 0)
    t.next_step()
    t.plan_read(set(), _normal, _out)
    t.send_mask, t.resp_mask = 0, (1 << D1) | (1 << D2)
    t.answered(D1, 0, 5, 0)
    assert t.answered(D2, 7, 0, 0)
    assert t.error == 5 and "data_1 answered with error 5" in t.error_text
    assert t.next_step() == REPLY and t.block == 0     # no further block is read
    t.reset()
    t.set_error(0, "zero is no error code")
    assert t.error == tx.UNKNOWN


def test_a_target_taken_out_refetches_a_read_and_fails_a_write() -> None:
    t = _txn()
    t.begin(READ_ACTIONS, 1, 1, 0, 0)
    t.next_step()
    t.plan_read(set(), _normal, _out)
    t.send_mask, t.resp_mask = 0, (1 << D1) | (1 << D2)
    assert t.write_off(DP, True, tx.CONNECTION_RESET, "x") is None     # nothing waited for data_p
    assert t.write_off(D1, True, tx.CONNECTION_RESET, "x") is False    # fetched again, degraded
    assert t.pending & FETCH_FROM_STORAGE and not t.pending & RECOVER and t.error == tx.SUCCESS
    w = _txn()
    w.begin(WRITE_ACTIONS, 2, 1, 0, 0)
    w.send_mask = w.resp_mask = 0b111
    assert w.write_off(D2, True, tx.TIME_OUT, "stalled") is True
    assert w.error == tx.TIME_OUT and w.resp_mask == 0b101
    assert w.send_failed(D1, tx.CONNECTION_RESET, "gone") is False    # data_p still outstanding
    assert w.error == tx.TIME_OUT


def test_unknown_pending_bits_are_a_bug() -> None:
    t = _txn()
    t.pending = 1 << 30
    with pytest.raises(AssertionError):
        t.next_step()
    assert ADVANCE & READ_ACTIONS and ADVANCE & WRITE_ACTIONS
