"""Control messages: exact bytes, round trips, malformed input, phases (spec §3)."""

from __future__ import annotations

import struct

import pytest

from apps.storage.wire.control import (
    ControlMessage, ErrorPayload, IdAllocator, InitStorage, MessageType, PhaseChecker, RdmaConnection,
    RdmaConnectionRole, StorageDetails, check_response, decode_body, encode_body, encode_frame,
    error_response_for_exception, make_error_response, make_response,
)
from apps.common.errors import ControlRequestError, ProtocolError, StorageAppError
from doca_py.errors import DocaInvalidValue, ErrorCode

M = MessageType


def _all_messages() -> list[ControlMessage]:
    payloads = {
        M.ERROR_RESPONSE: ErrorPayload(6, "Requested storage to use 3 cores but only 2 are configured"),
        M.QUERY_STORAGE_RESPONSE: StorageDetails((1 << 40) + 5, 4096),
        M.INIT_STORAGE_REQUEST: InitStorage(128, 4, bytes(range(256)) * 3),
        M.CREATE_RDMA_CONNECTION_REQUEST: RdmaConnection(1, RdmaConnectionRole.IO_CONTROL, b"\x00rdma\xff"),
        M.CREATE_RDMA_CONNECTION_RESPONSE: RdmaConnection(0, RdmaConnectionRole.IO_DATA, b""),
    }
    return [ControlMessage(t, 7 + t, 0xFFFFFFFF - t, payloads.get(t)) for t in MessageType]


def test_query_request_spec_bytes() -> None:
    frame = encode_frame(ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0))
    assert frame == bytes.fromhex("0000000C 00000001 00000000 00000000")


@pytest.mark.parametrize("msg", _all_messages(), ids=lambda m: m.type.wire_name)
def test_round_trip_every_type(msg: ControlMessage) -> None:
    frame = encode_frame(msg)
    (size,) = struct.unpack_from(">I", frame)
    assert size == len(frame) - 4
    assert struct.unpack_from(">III", frame, 4) == (msg.type, msg.message_id, msg.correlation_id)
    assert decode_body(frame[4:]) == msg


def test_payload_layouts() -> None:
    q = encode_body(ControlMessage(M.QUERY_STORAGE_RESPONSE, 1, 2, StorageDetails(0x0102030405060708, 2048)))
    assert len(q) == 24 and q[12:] == bytes.fromhex("0102030405060708 00000800")
    e = encode_body(make_error_response(ControlMessage(M.START_STORAGE_REQUEST, 3, 4), ErrorCode.BAD_STATE, "xy"))
    assert e == bytes.fromhex("00000000 00000003 00000004 00000012 00000002") + b"xy"
    i = encode_body(ControlMessage(M.INIT_STORAGE_REQUEST, 1, 1, InitStorage(128, 2, b"AB")))
    assert i[12:] == bytes.fromhex("00000080 00000002 00000002") + b"AB"
    r = encode_body(ControlMessage(M.CREATE_RDMA_CONNECTION_REQUEST, 9, 1, RdmaConnection(3, 1, b"Z")))
    assert r[12:] == bytes.fromhex("00000003 00000001 00000001") + b"Z"


def test_responses_echo_ids() -> None:
    req = ControlMessage(M.INIT_STORAGE_REQUEST, 41, 17, InitStorage(1, 1, b""))
    ok = make_response(req)
    assert (ok.type, ok.message_id, ok.correlation_id) == (M.INIT_STORAGE_RESPONSE, 41, 17)
    err = error_response_for_exception(req, DocaInvalidValue("bad"))
    assert err.type is M.ERROR_RESPONSE and (err.message_id, err.correlation_id) == (41, 17)
    assert isinstance(err.payload, ErrorPayload) and err.payload.code is ErrorCode.INVALID_VALUE
    err2 = error_response_for_exception(req, StorageAppError(ErrorCode.NOT_FOUND, "gone"))
    assert isinstance(err2.payload, ErrorPayload) and (err2.payload.error_code, err2.payload.message) == (16, "gone")
    err3 = error_response_for_exception(req, RuntimeError("boom"))
    assert isinstance(err3.payload, ErrorPayload) and err3.payload.code is ErrorCode.UNKNOWN


@pytest.mark.parametrize(("body", "needle"), [
    (b"", "shorter than the 12-byte prefix"),
    (bytes.fromhex("00000001 00000000"), "shorter than the 12-byte prefix"),
    (bytes.fromhex("0000000D 00000000 00000000"), "unknown control message type 13"),
    (bytes.fromhex("FFFFFFFF 00000000 00000000"), "unknown control message type"),
    (bytes.fromhex("00000002 00000000 00000000 00000000"), "truncated"),
    (bytes.fromhex("00000000 00000000 00000000 00000006 00000010") + b"short", "truncated"),
    (bytes.fromhex("00000003 00000000 00000000 00000001 00000001 FFFFFFFF"), "truncated"),
    (bytes.fromhex("00000005 00000000 00000000 00000000"), "truncated"),
    (bytes.fromhex("00000001 00000000 00000000 00"), "trailing"),
    (bytes.fromhex("00000002 00000000 00000000") + bytes(12) + b"x", "trailing"),
])
def test_malformed_bodies_raise_protocol_error(body: bytes, needle: str) -> None:
    with pytest.raises(ProtocolError, match=needle) as info:
        decode_body(body)
    assert info.value.code is ErrorCode.INVALID_VALUE


def test_bad_utf8_in_error_text_keeps_code() -> None:
    body = bytes.fromhex("00000000 00000005 00000006 00000011 00000004") + b"a\xff\xfeb"
    msg = decode_body(body)
    assert isinstance(msg.payload, ErrorPayload)
    assert msg.payload.code is ErrorCode.IO_FAILED and msg.payload.message == "a\\xff\\xfeb"


def test_unknown_role_is_kept_as_int() -> None:
    msg = decode_body(bytes.fromhex("00000005 00000000 00000000 00000000 00000007 00000000"))
    assert isinstance(msg.payload, RdmaConnection)
    assert msg.payload.role == 7 and msg.payload.known_role is None


def test_construction_is_checked() -> None:
    with pytest.raises(ValueError, match="carries no payload"):
        ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0, StorageDetails(1, 1))
    with pytest.raises(ValueError, match="needs a StorageDetails"):
        ControlMessage(M.QUERY_STORAGE_RESPONSE, 0, 0)
    with pytest.raises(ValueError, match="u32"):
        ControlMessage(M.QUERY_STORAGE_REQUEST, 1 << 32, 0)
    with pytest.raises(ValueError, match="u64"):
        StorageDetails(1 << 64, 1)
    with pytest.raises(ValueError, match="not a request"):
        make_response(ControlMessage(M.START_STORAGE_RESPONSE, 0, 0))


def test_check_response() -> None:
    req = ControlMessage(M.QUERY_STORAGE_REQUEST, 5, 5)
    ok = make_response(req, StorageDetails(8192, 4096))
    assert check_response(req, ok) is ok
    with pytest.raises(ControlRequestError, match="query_storage_response id: 5 failed!: no disk") as info:
        check_response(req, make_error_response(req, ErrorCode.NOT_FOUND, "no disk"))
    assert info.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(ControlRequestError, match="Unexpected start_storage_response") as info:
        check_response(req, ControlMessage(M.START_STORAGE_RESPONSE, 5, 5))
    assert info.value.code is ErrorCode.UNEXPECTED
    with pytest.raises(ControlRequestError, match="message id mismatch"):
        check_response(req, ControlMessage(M.QUERY_STORAGE_RESPONSE, 6, 5, StorageDetails(1, 1)))


def test_target_phase_order_is_positional() -> None:
    phases = PhaseChecker.target()
    q = ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0)
    assert phases.check(q) is None
    # A start instead of init: UNEXPECTED with the spec text, and the init phase is consumed anyway.
    start = ControlMessage(M.START_STORAGE_REQUEST, 1, 1)
    err = phases.check(start)
    assert err is not None and err.type is M.ERROR_RESPONSE and (err.message_id, err.correlation_id) == (1, 1)
    assert isinstance(err.payload, ErrorPayload) and err.payload.code is ErrorCode.UNEXPECTED
    assert err.payload.message == "Unexpected start_storage_request while expecting a init_storage_request"
    assert phases.expected is M.START_STORAGE_REQUEST  # no RDMA connections configured yet
    phases.set_count(M.CREATE_RDMA_CONNECTION_REQUEST, 2)
    assert phases.expected is M.CREATE_RDMA_CONNECTION_REQUEST
    rdma = ControlMessage(M.CREATE_RDMA_CONNECTION_REQUEST, 2, 1, RdmaConnection(0, 0, b""))
    assert phases.check(rdma) is None
    # A wrong type consumes one of the expected slots.
    assert phases.check(ControlMessage(M.STOP_STORAGE_REQUEST, 3, 1)) is not None
    for t in (M.START_STORAGE_REQUEST, M.STOP_STORAGE_REQUEST, M.SHUTDOWN_REQUEST):
        assert phases.expected is t
        assert phases.check(ControlMessage(t, 9, 9)) is None
    assert phases.done and phases.expected is None
    late = phases.check(q)
    assert late is not None and isinstance(late.payload, ErrorPayload) and "complete" in late.payload.message
    with pytest.raises(ValueError, match="already over"):
        phases.set_count(M.CREATE_RDMA_CONNECTION_REQUEST, 4)


def test_service_phases_and_ids() -> None:
    phases = PhaseChecker.service()
    ids = IdAllocator()
    order = [M.QUERY_STORAGE_REQUEST, M.INIT_STORAGE_REQUEST, M.START_STORAGE_REQUEST, M.STOP_STORAGE_REQUEST,
             M.SHUTDOWN_REQUEST]
    for t in order:
        mid = ids.next()
        payload = InitStorage(1, 1, b"") if t is M.INIT_STORAGE_REQUEST else None
        assert phases.check(ControlMessage(t, mid, mid, payload)) is None
    assert phases.done and ids.next() == 5
    wrap = IdAllocator(0xFFFFFFFF)
    assert (wrap.next(), wrap.next()) == (0xFFFFFFFF, 0)
