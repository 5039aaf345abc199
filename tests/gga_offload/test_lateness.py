"""Which late storage target the gga bridge blames (apps.gga_offload.lateness), without DOCA or clocks.

The flake these guard against (tests/gga_offload/test_e2e.py and tests/topology, stalled data_2, loaded
machine, results TIME_OUT then CONNECTION_RESET: two targets taken out): a read's requests to data_1
and data_2 share one deadline, so when data_1's answer is late too (or is in but not yet progressed),
the late requests tie, and the old rule (the most late requests, the first role on a tie) took the
healthy data_1 out first, then data_2, instead of serving the reads degraded.
"""

from __future__ import annotations

from apps.gga_offload.lateness import LateTargets, pick_late_target
from apps.gga_offload.transaction import Transaction
from apps.storage.wire.addressing import TargetRole

D1, D2, DP = int(TargetRole.DATA_1), int(TargetRole.DATA_2), int(TargetRole.DATA_P)
BOTH = (1 << D1) | (1 << D2)


def _txns(*pending: tuple[int, float]) -> list[Transaction]:
    """Transactions waiting for the roles of each mask, with that deadline."""
    txns = []
    for i, (mask, deadline) in enumerate(pending):
        t = Transaction(i)
        t.resp_mask, t.deadline = mask, deadline
        txns.append(t)
    return txns


def test_no_request_past_its_deadline_blames_nobody() -> None:
    txns = _txns((BOTH, 5.0), (0, 1.0))
    assert pick_late_target(txns, 4.0, [0.0, 0.0, 0.0]) is None
    assert pick_late_target(_txns(), 4.0, [0.0, 0.0, 0.0]) is None


def test_a_tie_in_late_requests_blames_the_target_silent_the_longest_not_the_first_role() -> None:
    # one read waits for both halves past its deadline; data_1 was heard since (it took the request),
    # data_2 not since before the stall
    txns = _txns((BOTH, 1.0))
    assert pick_late_target(txns, 2.0, [1.5, 0.2, 0.0]) == D2
    assert pick_late_target(txns, 2.0, [0.2, 1.5, 0.0]) == D1


def test_at_equal_silence_the_target_late_the_longest_is_blamed_not_the_one_with_most_late_requests() -> None:
    # data_2's one request is late since 1.0; data_1's three since 3.0 (behind it, merely slow)
    txns = _txns((1 << D2, 1.0), (1 << D1, 3.0), (1 << D1, 3.0), (1 << D1, 3.0))
    assert pick_late_target(txns, 4.0, [0.5, 0.5, 0.5]) == D2


def test_at_equal_silence_and_lateness_the_most_late_requests_decide() -> None:
    txns = _txns((1 << D1 | 1 << DP, 1.0), (1 << DP, 1.0))
    assert pick_late_target(txns, 4.0, [0.5, 0.5, 0.5]) == DP


def test_a_requests_whose_send_is_not_complete_counts_as_waiting() -> None:
    t = Transaction(0)
    t.send_mask, t.deadline = 1 << D2, 1.0
    assert pick_late_target([t], 2.0, [0.0, 0.0, 0.0]) == D2


def test_the_verdict_waits_one_scan_so_an_answer_already_in_is_counted() -> None:
    late = LateTargets()
    late.restart(0.0)
    txns = _txns((BOTH, 1.0))
    late.answers[D1] += 1  # data_1 took the request before the deadline (counted by the worker's callback)
    late.note(0.5)
    # past the deadline: data_1's answer has come in but the worker has not progressed it yet
    assert late.scan(txns, 1.1) is None and late.suspect
    late.answers[D1] += 1  # the worker's progress round between the two scans: data_1's answer
    txns[0].resp_mask &= ~(1 << D1)
    assert late.scan(txns, 1.1) == D2 and not late.suspect


def test_the_verdict_of_a_tie_goes_to_the_target_not_heard_since_the_last_scan() -> None:
    late = LateTargets()
    late.restart(0.0)
    txns = _txns((BOTH, 1.0))
    assert late.scan(txns, 1.1) is None and late.suspect
    late.answers[D1] += 1  # data_1 acknowledged its request meanwhile; its answer is still to come
    assert late.scan(txns, 1.2) == D2


def test_a_suspicion_that_clears_gives_no_verdict() -> None:
    late = LateTargets()
    late.restart(0.0)
    txns = _txns((1 << D1, 1.0))
    assert late.scan(txns, 1.1) is None and late.suspect
    txns[0].resp_mask = 0  # answered in the progress round between
    assert late.scan(txns, 1.2) is None and not late.suspect
    txns[0].resp_mask = 1 << D1
    assert late.scan(txns, 1.3) is None  # a new suspicion starts over
    assert late.scan(txns, 1.4) == D1
