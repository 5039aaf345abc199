"""Control messages of the storage apps (storage-apps-spec §3.2–§3.5).

A message body is a 12-byte big-endian prefix (``message_type``, ``message_id``,
``correlation_id``, all u32) followed by the payload of its type. On the wire each
body is preceded by its length as a u32 BE (see [`encode_frame`][apps.storage.wire.control.encode_frame]).

```pycon
>>> frame = encode_frame(ControlMessage(MessageType.QUERY_STORAGE_REQUEST, 0, 0))
>>> frame.hex(" ")
'00 00 00 0c 00 00 00 01 00 00 00 00 00 00 00 00'

```

Decoding never trusts the peer: a truncated or over-long body, an unknown type, a
length field pointing past the end, all raise [`ProtocolError`][apps.common.errors.ProtocolError].
Responders answer a request with [`make_response`][apps.storage.wire.control.make_response] / [`make_error_response`][apps.storage.wire.control.make_error_response],
which echo the request's ``message_id`` and ``correlation_id``; [`PhaseChecker`][apps.storage.wire.control.PhaseChecker]
enforces the positional phase order of §3.5.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from doca_py.errors import DocaError, ErrorCode

from apps.common.errors import ControlRequestError, ProtocolError, StorageAppError

__all__ = [
    "MessageType", "RdmaConnectionRole", "ErrorPayload", "StorageDetails", "InitStorage", "RdmaConnection",
    "Payload", "ControlMessage", "PREFIX_SIZE", "HEADER_SIZE", "U32_MAX", "U64_MAX",
    "encode_body", "decode_body", "encode_frame", "make_response", "make_error_response",
    "error_response_for_exception", "unexpected_message_text", "check_response", "PhaseChecker",
    "IdAllocator",
]

PREFIX_SIZE = 12
"""Bytes of the common body prefix (type, message id, correlation id)."""
HEADER_SIZE = 4
"""Bytes of the frame header (the body length)."""
U32_MAX = 0xFFFFFFFF
"""Largest u32."""
U64_MAX = 0xFFFFFFFFFFFFFFFF
"""Largest u64."""

_PREFIX = struct.Struct(">III")
_U32 = struct.Struct(">I")
_DETAILS = struct.Struct(">QI")
_TWO_U32 = struct.Struct(">II")


class MessageType(enum.IntEnum):
    """``control_message_type`` (§3.2); [`wire_name`][apps.storage.wire.control.MessageType.wire_name] is the name the C++ apps print."""

    ERROR_RESPONSE = 0
    """Answer to a failed request: an [`ErrorPayload`][apps.storage.wire.control.ErrorPayload]."""
    QUERY_STORAGE_REQUEST = 1
    """Ask the storage size and block size."""
    QUERY_STORAGE_RESPONSE = 2
    """The [`StorageDetails`][apps.storage.wire.control.StorageDetails]."""
    INIT_STORAGE_REQUEST = 3
    """Initialise storage with an [`InitStorage`][apps.storage.wire.control.InitStorage]."""
    INIT_STORAGE_RESPONSE = 4
    """Storage initialised."""
    CREATE_RDMA_CONNECTION_REQUEST = 5
    """Create an RDMA connection ([`RdmaConnection`][apps.storage.wire.control.RdmaConnection])."""
    CREATE_RDMA_CONNECTION_RESPONSE = 6
    """The responder's side of the RDMA connection."""
    START_STORAGE_REQUEST = 7
    """Start serving io messages."""
    START_STORAGE_RESPONSE = 8
    """Started."""
    STOP_STORAGE_REQUEST = 9
    """Stop serving io messages."""
    STOP_STORAGE_RESPONSE = 10
    """Stopped."""
    SHUTDOWN_REQUEST = 11
    """Release everything and exit."""
    SHUTDOWN_RESPONSE = 12
    """Shutting down."""

    @property
    def wire_name(self) -> str:
        """The lower-case name, e.g. ``query_storage_request``."""
        return self.name.lower()

    @property
    def is_request(self) -> bool:
        """Whether this type is a request (odd values)."""
        return self.value % 2 == 1

    @property
    def response_type(self) -> MessageType:
        """The successful response type of a request type."""
        if not self.is_request:
            raise ValueError(f"{self.wire_name} is not a request")
        return MessageType(self.value + 1)


class RdmaConnectionRole(enum.IntEnum):
    """``rdma_connection_role`` of a ``create_rdma_connection`` message."""

    IO_DATA = 0
    """The connection carries the data (RDMA read/write)."""
    IO_CONTROL = 1
    """The connection carries the io messages."""


def _check_u32(name: str, value: int) -> None:
    if not 0 <= value <= U32_MAX:
        raise ValueError(f"{name} {value} does not fit in a u32")


@dataclass(frozen=True, slots=True)
class ErrorPayload:
    """Payload of ``error_response``: a ``doca_error_t`` and a text."""

    error_code: int
    """The ``doca_error_t`` value (u32)."""
    message: str
    """The error text."""

    def __post_init__(self) -> None:
        _check_u32("error_code", self.error_code)

    @property
    def code(self) -> ErrorCode | int:
        """[`error_code`][apps.storage.wire.control.ErrorPayload.error_code] as an [`ErrorCode`][doca_py.errors.ErrorCode] when it is a known value."""
        return ErrorCode(self.error_code) if self.error_code in ErrorCode._value2member_map_ else self.error_code


@dataclass(frozen=True, slots=True)
class StorageDetails:
    """Payload of ``query_storage_response``: capacity (u64) and block size (u32) in bytes."""

    total_size: int
    """Capacity in bytes (u64)."""
    block_size: int
    """Block size in bytes (u32)."""

    def __post_init__(self) -> None:
        if not 0 <= self.total_size <= U64_MAX:
            raise ValueError(f"total_size {self.total_size} does not fit in a u64")
        _check_u32("block_size", self.block_size)


@dataclass(frozen=True, slots=True)
class InitStorage:
    """Payload of ``init_storage_request`` (NEW layout): transactions, cores, mmap export blob."""

    transaction_count: int
    """Transactions (in-flight io messages) per core."""
    core_count: int
    """Number of cores (workers) of the requester."""
    mmap_export_blob: bytes
    """The requester's exported IO region (``doca_mmap_export_rdma`` blob)."""

    def __post_init__(self) -> None:
        _check_u32("transaction_count", self.transaction_count)
        _check_u32("core_count", self.core_count)
        _check_u32("mmap_export_blob length", len(self.mmap_export_blob))


@dataclass(frozen=True, slots=True)
class RdmaConnection:
    """Payload of ``create_rdma_connection_request/_response``."""

    context_idx: int
    """The index of the worker (core) the connection belongs to."""
    role: RdmaConnectionRole | int
    """The raw role value; see [`known_role`][apps.storage.wire.control.RdmaConnection.known_role]."""
    connection_details: bytes
    """The ``doca_rdma_export`` blob of the sender."""

    def __post_init__(self) -> None:
        _check_u32("context_idx", self.context_idx)
        _check_u32("role", int(self.role))
        _check_u32("connection_details length", len(self.connection_details))

    @property
    def known_role(self) -> RdmaConnectionRole | None:
        """[`role`][apps.storage.wire.control.RdmaConnection.role] as a [`RdmaConnectionRole`][apps.storage.wire.control.RdmaConnectionRole], ``None`` if the value is unknown."""
        r = int(self.role)
        return RdmaConnectionRole(r) if r in RdmaConnectionRole._value2member_map_ else None


Payload = ErrorPayload | StorageDetails | InitStorage | RdmaConnection
"""Any payload a control message carries."""

_PAYLOAD_OF: dict[MessageType, type[ErrorPayload | StorageDetails | InitStorage | RdmaConnection] | None] = {
    t: None for t in MessageType
}
_PAYLOAD_OF[MessageType.ERROR_RESPONSE] = ErrorPayload
_PAYLOAD_OF[MessageType.QUERY_STORAGE_RESPONSE] = StorageDetails
_PAYLOAD_OF[MessageType.INIT_STORAGE_REQUEST] = InitStorage
_PAYLOAD_OF[MessageType.CREATE_RDMA_CONNECTION_REQUEST] = RdmaConnection
_PAYLOAD_OF[MessageType.CREATE_RDMA_CONNECTION_RESPONSE] = RdmaConnection


@dataclass(frozen=True, slots=True)
class ControlMessage:
    """One control message: type, ids and the payload its type requires (``None`` if none)."""

    type: MessageType
    """The [`MessageType`][apps.storage.wire.control.MessageType]."""
    message_id: int
    """Id chosen by the sender of a request (u32), echoed in the response."""
    correlation_id: int
    """Id relating messages of one exchange (u32), echoed in the response."""
    payload: Payload | None = None
    """The payload the type requires, ``None`` if it has none."""

    def __post_init__(self) -> None:
        _check_u32("message_id", self.message_id)
        _check_u32("correlation_id", self.correlation_id)
        want = _PAYLOAD_OF[MessageType(self.type)]
        if want is None and self.payload is not None:
            raise ValueError(f"{MessageType(self.type).wire_name} carries no payload")
        if want is not None and not isinstance(self.payload, want):
            raise ValueError(f"{MessageType(self.type).wire_name} needs a {want.__name__} payload")

    def __str__(self) -> str:
        return f"{self.type.wire_name}(mid={self.message_id}, cid={self.correlation_id})"


# --------------------------------------------------------------------------- encoding


def _blob(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


def encode_body(msg: ControlMessage) -> bytes:
    """The body bytes of *msg* (prefix + payload), without the length header."""
    out = _PREFIX.pack(int(msg.type), msg.message_id, msg.correlation_id)
    p = msg.payload
    if isinstance(p, ErrorPayload):
        out += _U32.pack(p.error_code) + _blob(p.message.encode("utf-8"))
    elif isinstance(p, StorageDetails):
        out += _DETAILS.pack(p.total_size, p.block_size)
    elif isinstance(p, InitStorage):
        out += _TWO_U32.pack(p.transaction_count, p.core_count) + _blob(bytes(p.mmap_export_blob))
    elif isinstance(p, RdmaConnection):
        out += _TWO_U32.pack(p.context_idx, int(p.role)) + _blob(bytes(p.connection_details))
    return out


def encode_frame(msg: ControlMessage) -> bytes:
    """The wire frame of *msg*: u32 BE body length, then the body."""
    body = encode_body(msg)
    return _U32.pack(len(body)) + body


# --------------------------------------------------------------------------- decoding


class _Reader:
    def __init__(self, data: memoryview, what: str) -> None:
        self.data, self.pos, self.what = data, 0, what

    def take(self, n: int, field: str) -> memoryview:
        if self.data.nbytes - self.pos < n:
            raise ProtocolError(f"{self.what} truncated: {field} needs {n} bytes at offset {self.pos}, "
                                f"{self.data.nbytes - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self, field: str) -> int:
        return int(_U32.unpack(self.take(4, field))[0])

    def blob(self, field: str) -> bytes:
        n = self.u32(f"{field} length")
        return bytes(self.take(n, f"{field} ({n} bytes)"))

    def finish(self) -> None:
        left = self.data.nbytes - self.pos
        if left:
            raise ProtocolError(f"{self.what} has {left} unexpected trailing bytes")


def decode_body(body: bytes | bytearray | memoryview) -> ControlMessage:
    """Decode one message body (no length header). Raise [`ProtocolError`][apps.common.errors.ProtocolError] if malformed.

    Error texts are decoded as UTF-8 with invalid bytes shown as ``\\xNN`` escapes (the
    C++ apps send ASCII; the text is informational, so a bad byte must not lose the code).
    """
    view = memoryview(body).cast("B")
    if view.nbytes < PREFIX_SIZE:
        raise ProtocolError(f"control message body of {view.nbytes} bytes is shorter than the "
                            f"{PREFIX_SIZE}-byte prefix")
    raw_type, mid, cid = _PREFIX.unpack_from(view, 0)
    if raw_type not in MessageType._value2member_map_:
        raise ProtocolError(f"unknown control message type {raw_type} (mid={mid}, cid={cid})")
    mtype = MessageType(raw_type)
    r = _Reader(view, mtype.wire_name)
    r.pos = PREFIX_SIZE
    payload: Payload | None = None
    if mtype is MessageType.ERROR_RESPONSE:
        code = r.u32("error_code")
        text = r.blob("message").decode("utf-8", errors="backslashreplace")
        payload = ErrorPayload(code, text)
    elif mtype is MessageType.QUERY_STORAGE_RESPONSE:
        total, block = _DETAILS.unpack(r.take(_DETAILS.size, "storage details"))
        payload = StorageDetails(total, block)
    elif mtype is MessageType.INIT_STORAGE_REQUEST:
        tc, cores = r.u32("transaction_count"), r.u32("core_count")
        payload = InitStorage(tc, cores, r.blob("mmap_export_blob"))
    elif mtype in (MessageType.CREATE_RDMA_CONNECTION_REQUEST, MessageType.CREATE_RDMA_CONNECTION_RESPONSE):
        idx, role = r.u32("context_idx"), r.u32("role")
        payload = RdmaConnection(idx, RdmaConnectionRole(role) if role in RdmaConnectionRole._value2member_map_
                                 else role, r.blob("connection_details"))
    r.finish()
    return ControlMessage(mtype, mid, cid, payload)


# --------------------------------------------------------------------------- responses


def make_response(request: ControlMessage, payload: Payload | None = None) -> ControlMessage:
    """The successful response to *request*, echoing its message and correlation ids."""
    return ControlMessage(request.type.response_type, request.message_id, request.correlation_id, payload)


def make_error_response(request: ControlMessage, code: ErrorCode | int, message: str) -> ControlMessage:
    """An ``error_response`` to *request* with *code* and *message* (ids echoed)."""
    return ControlMessage(MessageType.ERROR_RESPONSE, request.message_id, request.correlation_id,
                          ErrorPayload(int(code), message))


def error_response_for_exception(request: ControlMessage, exc: BaseException) -> ControlMessage:
    """An ``error_response`` for a processing failure: the code of a [`DocaError`][doca_py.errors.DocaError] or
    [`StorageAppError`][apps.common.errors.StorageAppError] (else ``UNKNOWN``) and the exception text."""
    if isinstance(exc, StorageAppError):
        code: int = int(exc.code)
        text = exc.message
    elif isinstance(exc, DocaError):
        code, text = int(exc.code), str(exc)
    else:
        code, text = int(ErrorCode.UNKNOWN), str(exc) or type(exc).__name__
    return make_error_response(request, code, text)


def unexpected_message_text(got: MessageType, expected: MessageType | Iterable[MessageType]) -> str:
    """``"Unexpected <got> while expecting a <expected>"`` (names as in §3.2)."""
    if isinstance(expected, MessageType):
        want = expected.wire_name
    else:
        want = " or ".join(t.wire_name for t in expected)
    return f"Unexpected {got.wire_name} while expecting a {want}"


def check_response(request: ControlMessage, response: ControlMessage) -> ControlMessage:
    """Validate *response* to *request* as a requester does (§3.5); return it.

    Raise [`ControlRequestError`][apps.common.errors.ControlRequestError] carrying the peer's code and text for an
    ``error_response`` (``"<expected_type> id: <mid> failed!: <message>"``), and
    ``UNEXPECTED`` for a mismatched message id or a response of another type.
    """
    expected = request.type.response_type
    if response.message_id != request.message_id:
        raise ControlRequestError(ErrorCode.UNEXPECTED,
                                  f"{response} does not answer {request} (message id mismatch)")
    if response.type is MessageType.ERROR_RESPONSE:
        assert isinstance(response.payload, ErrorPayload)
        raise ControlRequestError(response.payload.code,
                                  f"{expected.wire_name} id: {request.message_id} failed!: "
                                  f"{response.payload.message}")
    if response.type is not expected:
        raise ControlRequestError(ErrorCode.UNEXPECTED, unexpected_message_text(response.type, expected))
    return response


# --------------------------------------------------------------------------- phases


class PhaseChecker:
    """Positional phase order of a responder (§3.5), as the target and services use it.

    Built from ``(request type, count)`` steps. [`check`][apps.storage.wire.control.PhaseChecker.check] takes the next request:
    when its type is the one expected at this position it returns ``None``; otherwise it
    returns the ``UNEXPECTED`` error response to send. Either way the position advances
    by one — responders never retry a phase. [`set_count`][apps.storage.wire.control.PhaseChecker.set_count] changes how many requests
    a later step takes (e.g. ``2 × cores`` RDMA connection requests once init is known).

    ```pycon
    >>> phases = PhaseChecker.target()
    >>> phases.expected
    <MessageType.QUERY_STORAGE_REQUEST: 1>

    ```
    """

    def __init__(self, steps: Sequence[tuple[MessageType, int]]) -> None:
        if any(n < 0 for _, n in steps):
            raise ValueError("phase counts must be >= 0")
        self._types = [MessageType(t) for t, _ in steps]
        self._counts = [int(n) for _, n in steps]
        self._used = [0] * len(steps)
        self._last = -1  # index of the last step a request was counted against

    @classmethod
    def target(cls) -> PhaseChecker:
        """The target's order: query, init, (2·cores) rdma connections, start, stop, shutdown.

        The RDMA connection count is 0 until [`set_count`][apps.storage.wire.control.PhaseChecker.set_count] is called after init.
        """
        return cls([(MessageType.QUERY_STORAGE_REQUEST, 1), (MessageType.INIT_STORAGE_REQUEST, 1),
                    (MessageType.CREATE_RDMA_CONNECTION_REQUEST, 0), (MessageType.START_STORAGE_REQUEST, 1),
                    (MessageType.STOP_STORAGE_REQUEST, 1), (MessageType.SHUTDOWN_REQUEST, 1)])

    @classmethod
    def service(cls) -> PhaseChecker:
        """A service's order towards its client: query, init, start, stop, shutdown."""
        return cls([(t, 1) for t in (MessageType.QUERY_STORAGE_REQUEST, MessageType.INIT_STORAGE_REQUEST,
                                     MessageType.START_STORAGE_REQUEST, MessageType.STOP_STORAGE_REQUEST,
                                     MessageType.SHUTDOWN_REQUEST)])

    def _current(self) -> int:
        i = max(self._last, 0)
        while i < len(self._types) and self._used[i] >= self._counts[i]:
            i += 1
        return i

    @property
    def done(self) -> bool:
        """Whether every phase has consumed its requests."""
        return self._current() >= len(self._types)

    @property
    def expected(self) -> MessageType | None:
        """The request type expected next (``None`` when done)."""
        i = self._current()
        return None if i >= len(self._types) else self._types[i]

    def set_count(self, mtype: MessageType, count: int) -> None:
        """Set how many *mtype* requests its step takes (not below those already received)."""
        if count < 0:
            raise ValueError("count must be >= 0")
        if mtype not in self._types:
            raise ValueError(f"{mtype.wire_name} is not one of the phases")
        i = self._types.index(mtype)
        if i < self._last:
            raise ValueError(f"the {mtype.wire_name} phase is already over")
        if count < self._used[i]:
            raise ValueError(f"{self._used[i]} {mtype.wire_name}s were already received")
        self._counts[i] = count

    def check(self, msg: ControlMessage) -> ControlMessage | None:
        """Consume one position for *msg*; the error response to send if it is out of order."""
        i = self._current()
        if i >= len(self._types):
            return make_error_response(msg, ErrorCode.UNEXPECTED,
                                       f"Unexpected {msg.type.wire_name}: the control phases are complete")
        self._used[i] += 1
        self._last = i
        expected = self._types[i]
        if msg.type is expected:
            return None
        return make_error_response(msg, ErrorCode.UNEXPECTED, unexpected_message_text(msg.type, expected))


class IdAllocator:
    """Message/correlation id counters starting at 0, as requesters allocate them (§3.4)."""

    def __init__(self, start: int = 0) -> None:
        self._next = start

    def next(self) -> int:
        """The next id (wraps at 2^32)."""
        value = self._next
        self._next = (self._next + 1) & U32_MAX
        return value
