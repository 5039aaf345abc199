"""Unit tests of the gga service's data-path planning (no processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import doca_py as d
from doca_py.errors import ErrorCode

from apps.gga_offload import build_parser, parse_args
from apps.gga_offload.planning import (
    BlockPlan, RecoverySchedule, RequestProblem, ValidRequest, check_compressed_size, check_initiator_request,
    check_target_geometry, recovery_roles,
)
from apps.storage.wire.addressing import ChunkLayout, ReadMode, TargetRole, doubled_storage_details, \
    doubled_transaction_count
from apps.storage.wire.control import StorageDetails
from apps.storage.wire.io_message import IoMessage, IoMessageType
from apps.storage.runtime.offload import EcJob, OffloadSession, matrix_type_from_name

B = 4096
H = B // 2
R, W = IoMessageType.READ, IoMessageType.WRITE
CAP = 64 * B
HOST = 16 * B


# ------------------------------------------------------------------ doubling
def test_doubling_of_query_init_and_region() -> None:
    assert doubled_storage_details(StorageDetails(128 * H, H)) == StorageDetails(128 * B, B)
    assert doubled_transaction_count(64) == 128
    with pytest.raises(ValueError):
        doubled_transaction_count(0x8000)
    layout = ChunkLayout(block_size=B, transactions_per_worker=doubled_transaction_count(64))
    assert layout.chunk_size == 10240  # 2.5·B with the write flow
    assert layout.region_size(cores=3) == 3 * 128 * 10240


@pytest.mark.parametrize(("total", "half", "ok"), [(128 * 2048, 2048, True), (64 * 512, 512, True),
                                                   (100 * 96, 96, False), (0, 2048, False), (2048 * 3 + 5, 2048,
                                                                                            False)])
def test_target_geometry(total: int, half: int, ok: bool) -> None:
    assert (check_target_geometry(total, half) is None) == ok


# ------------------------------------------------------------------ half-block addressing
def test_worked_example_of_the_spec() -> None:
    """§5.4: worker 0, transaction 3, block 10 read into initiator offset 12288 (T = 64)."""
    layout = ChunkLayout(block_size=B, transactions_per_worker=128)
    req = IoMessage(R, user_data=3, io_size=B, requester_offset=12288, storage_offset=10 * B)
    plan = BlockPlan(layout, worker=0, transaction=3, request=req, block_index=0)
    assert plan.chunk_base == 30720
    assert plan.host_offset == 12288
    normal = plan.read_requests(ReadMode.NORMAL)
    assert {r: (m.requester_offset, m.storage_offset, m.io_size, m.user_data, m.type)
            for r, m in normal.items()} == {TargetRole.DATA_1: (30720, 20480, H, 3, R),
                                            TargetRole.DATA_2: (32768, 20480, H, 3, R)}
    rec_b = plan.read_requests(ReadMode.RECOVER_B)
    assert {r: m.requester_offset for r, m in rec_b.items()} == {TargetRole.DATA_1: 30720,
                                                                  TargetRole.DATA_P: 30720 + B}
    rec_a = plan.read_requests(ReadMode.RECOVER_A)
    assert {r: m.requester_offset for r, m in rec_a.items()} == {TargetRole.DATA_2: 32768,
                                                                  TargetRole.DATA_P: 34816}


def test_multi_block_io_and_other_workers() -> None:
    layout = ChunkLayout(block_size=B, transactions_per_worker=8)
    req = IoMessage(W, user_data=5, io_size=3 * B, requester_offset=7 * B, storage_offset=20 * B)
    plan = BlockPlan(layout, worker=2, transaction=5, request=req, block_index=2)
    base = (2 * 8 + 5) * layout.chunk_size
    assert plan.chunk_base == base
    assert plan.host_offset == 9 * B                       # requester_offset + k·B
    writes = plan.write_requests()
    assert list(writes) == list(TargetRole)
    for role, off in ((TargetRole.DATA_1, base), (TargetRole.DATA_2, base + H), (TargetRole.DATA_P, base + B)):
        m = writes[role]
        assert (m.type, m.requester_offset, m.storage_offset, m.io_size) == (W, off, (20 + 2) * H, H)


def test_recover_spans_are_in_ec_index_order() -> None:
    layout = ChunkLayout(block_size=B, transactions_per_worker=4)
    plan = BlockPlan(layout, 0, 1, IoMessage(R, 1, 0, B, 0, 0), 0)
    base = plan.chunk_base
    assert plan.recover_spans(ReadMode.RECOVER_A) == ([(base + H, H), (base + B, H)], (base, H))
    assert plan.recover_spans(ReadMode.RECOVER_B) == ([(base, H), (base + B, H)], (base + H, H))
    assert recovery_roles(ReadMode.RECOVER_A) == (TargetRole.DATA_2, TargetRole.DATA_P)
    with pytest.raises(ValueError):
        plan.recover_spans(ReadMode.NORMAL)


# ------------------------------------------------------------------ recovery alternation
@pytest.mark.parametrize(("every_n", "expect"), [
    (0, "nnnnnn"),
    (1, "bababa"),
    (2, "nbnanb"),
    (3, "nnbnna"),
])
def test_recovery_alternation(every_n: int, expect: str) -> None:
    s = RecoverySchedule(every_n)
    got = "".join({ReadMode.NORMAL: "n", ReadMode.RECOVER_A: "a", ReadMode.RECOVER_B: "b"}[s.next_mode()]
                  for _ in expect)
    assert got == expect
    assert s.recovery_count == expect.count("a") + expect.count("b")


def test_recovery_schedule_rejects_negative() -> None:
    with pytest.raises(ValueError):
        RecoverySchedule(-1)


# ------------------------------------------------------------------ malformed initiator messages
def _check(msg: IoMessage | bytes, length: int | None = None, **kw: object) -> ValidRequest | RequestProblem:
    raw = msg.pack() if isinstance(msg, IoMessage) else bytes(msg).ljust(64, b"\0")
    n = (64 if isinstance(msg, IoMessage) else len(msg)) if length is None else length
    args = {"block_size": B, "capacity": CAP, "host_size": HOST, **kw}
    return check_initiator_request(raw, n, **args)  # type: ignore[arg-type]


def test_valid_requests() -> None:
    ok = _check(IoMessage(R, 1, 0, 3 * B, 13 * B, 61 * B))
    assert isinstance(ok, ValidRequest) and (ok.kind, ok.blocks) == (R, 3)
    ok2 = _check(IoMessage(W, 2, 0, B, HOST - B, CAP - B))
    assert isinstance(ok2, ValidRequest) and ok2.kind is W


@pytest.mark.parametrize(("msg", "code"), [
    (IoMessage(0, 1, 0, B, 0, 0), ErrorCode.NOT_SUPPORTED),
    (IoMessage(3, 1, 0, B, 0, 0), ErrorCode.NOT_SUPPORTED),
    (IoMessage(0xFFFFFFFF, 1, 0, B, 0, 0), ErrorCode.NOT_SUPPORTED),
    (IoMessage(R, 1, 0, 0, 0, 0), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, B - 1, 0, 0), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, 256 * B, 0, 0), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, 0xFFFFFFFF, 0, 0), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, B, 0, 1), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, B, 0, CAP), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, 2 * B, 0, CAP - B), ErrorCode.INVALID_VALUE),
    (IoMessage(R, 1, 0, B, 0, 2**64 - B), ErrorCode.INVALID_VALUE),
    (IoMessage(W, 1, 0, B, HOST - B + 1, 0), ErrorCode.INVALID_VALUE),
    (IoMessage(W, 1, 0, B, 2**64 - 1, 0), ErrorCode.INVALID_VALUE),
])
def test_malformed_requests_get_an_error(msg: IoMessage, code: ErrorCode) -> None:
    p = _check(msg)
    assert isinstance(p, RequestProblem) and p.code == code, p


@pytest.mark.parametrize("length", [0, 1, 20, 63, 65, 4096])
def test_wrong_length(length: int) -> None:
    p = _check(IoMessage(R, 1, 0, B, 0, 0), length)
    assert isinstance(p, RequestProblem) and p.code == ErrorCode.INVALID_VALUE


def test_write_without_the_write_flow() -> None:
    p = _check(IoMessage(W, 1, 0, B, 0, 0), write_flow=False)
    assert isinstance(p, RequestProblem) and p.code == ErrorCode.NOT_SUPPORTED


def test_compressed_size_check() -> None:
    assert check_compressed_size(285, B) is None
    assert check_compressed_size(B - 12, B) is None
    assert check_compressed_size(B - 11, B) is not None
    assert check_compressed_size(0, B) is not None
    assert check_compressed_size(0xFFFFFFFF, B) is not None


# ------------------------------------------------------------------ real recover matrices
@pytest.mark.parametrize("matrix", ["vandermonde", "cauchy"])
def test_recover_matrix_restores_either_half(matrix: str) -> None:
    """What the worker does: parity by EC create over the B-byte block, recovery with
    ``matrix_create_recover`` and the survivors in index order — correct for both types."""
    h = 512
    data = bytes((i * 37 + (i >> 9) * 11) & 0xFF for i in range(2 * h))
    with d.Dev.open_by_pci_addr("03:00.0") as dev, OffloadSession(dev, 8 * h) as sess:
        assert sess.ec is not None
        arena = sess.arena
        arena[:2 * h] = data
        coding = sess.ec.matrix_create(matrix_type_from_name(matrix), 2, 1)
        assert not sess.ec_batch(coding, [EcJob(((0, 2 * h),), 2 * h, h)])     # parity at [2h, 3h)
        rec_a = sess.ec.matrix_create_recover(coding, [0])
        rec_b = sess.ec.matrix_create_recover(coding, [1])
        assert not sess.ec_batch(rec_a, [EcJob(((h, h), (2 * h, h)), 3 * h, h)], recover=True)
        assert not sess.ec_batch(rec_b, [EcJob(((0, h), (2 * h, h)), 4 * h, h)], recover=True)
        assert bytes(arena[3 * h:4 * h]) == data[:h]
        assert bytes(arena[4 * h:5 * h]) == data[h:]
        # The reference recovers with the coding matrix itself, which only works when the parity is
        # the XOR of the halves (vandermonde 2+1), not for cauchy.
        xor = bytes(a ^ b for a, b in zip(data[:h], data[h:]))
        assert (bytes(arena[2 * h:3 * h]) == xor) == (matrix == "vandermonde")


# ------------------------------------------------------------------ command line
def test_flags_and_json(tmp_path: Path) -> None:
    cfg = tmp_path / "gga.json"
    cfg.write_text(json.dumps({
        "doca_general_flags": {"log-level": "debug"},
        "doca_program_flags": {"device": "03:00.0", "representor": "3b:00.0", "cpu": [0, 1],
                               "data-1-storage": "10.0.0.1:1234", "data-2-storage": "10.0.0.2:1234",
                               "data-p-storage": "10.0.0.3:1234", "matrix-type": "cauchy",
                               "trigger-recovery-read-every-n": 3}}))
    c = parse_args(["--json", str(cfg), "--control-timeout", "7"])
    assert (c.cpu, c.matrix_type, c.trigger_recovery_read_every_n, c.control_timeout) == ([0, 1], "cauchy", 3, 7)
    assert str(c.data_p_storage) == "10.0.0.3:1234"
    assert c.command_channel_name == "doca_storage_comch"
    help_text = build_parser().format_help()
    for flag in ("--representor", "--data-1-storage", "--trigger-recovery-read-every-n", "--matrix-type"):
        assert flag in help_text


@pytest.mark.parametrize("bad", [["--matrix-type", "raid6"], ["--data-1-storage", "host:1"],
                                 ["--control-timeout", "0"], ["--trigger-recovery-read-every-n", "70000"]])
def test_bad_flags_exit_2(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    base = ["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--data-1-storage", "1.2.3.4:5",
            "--data-2-storage", "1.2.3.4:6", "--data-p-storage", "1.2.3.4:7"]
    with pytest.raises(SystemExit) as exc:
        parse_args(base + bad)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_doctests() -> None:
    import doctest

    import apps.gga_offload.planning as planning

    result = doctest.testmod(planning)
    assert result.attempted > 0 and result.failed == 0


def test_target_io_timeout_flag_is_validated() -> None:
    base = ["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--data-1-storage", "127.0.0.1:1",
            "--data-2-storage", "127.0.0.1:2", "--data-p-storage", "127.0.0.1:3"]
    assert parse_args(base).target_io_timeout == 5
    assert parse_args([*base, "--target-io-timeout", "0"]).target_io_timeout == 0
    for bad in ("-1", "3601", "x"):
        with pytest.raises(SystemExit):
            parse_args([*base, "--target-io-timeout", bad])
    assert "--target-io-timeout" in build_parser().format_help()


def test_target_connect_timeout_flag_is_validated_and_documented() -> None:
    base = ["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--data-1-storage", "127.0.0.1:1",
            "--data-2-storage", "127.0.0.1:2", "--data-p-storage", "127.0.0.1:3"]
    assert parse_args(base).target_connect_timeout == 60
    assert parse_args([*base, "--target-connect-timeout", "0"]).target_connect_timeout == 0  # for ever
    for bad in ("-1", "86401", "x"):
        with pytest.raises(SystemExit):
            parse_args([*base, "--target-connect-timeout", bad])
    text = " ".join(build_parser().format_help().split())
    assert "--target-connect-timeout" in text and "0 = retry for ever" in text


def test_target_health_logs_entering_degraded_mode_once(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from apps.gga_offload.health import TargetHealth

    h = TargetHealth()
    with caplog.at_level(logging.WARNING, logger="apps.gga_offload"):
        assert h.mark_out(TargetRole.DATA_2, "was lost (test)")
        assert not h.mark_out(TargetRole.DATA_2, "again")
    assert h.out == {TargetRole.DATA_2} and h.version == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "storage target data_2 was lost (test): entering degraded mode" in warnings[0]
