"""What the zero-copy bridge checks in the io messages it forwards (storage-apps-spec §4, §11.7).

Nothing here touches DOCA: the worker asks these functions whether a message may go on,
and rewrites the target's answer in place before it goes back to the initiator.

The reference forwards the initiator's 64 bytes to the target without looking at them and
sends the target's answer back with ``type`` and ``result`` forced to 0. Here:

* :func:`check_request` refuses what the target could not serve or must not be asked:
  a message that is not 64 bytes, a type other than read/write (``NOT_SUPPORTED``), a zero
  ``io_size``, a storage range past the target's capacity, a requester range past the
  host's exported region (``INVALID_VALUE``). The bridge answers these itself, so a bad
  offset never becomes an RDMA access into host memory.
* :func:`finish_response_in_place` checks the target's answer against the request it
  answers (it must echo ``user_data``, ``io_size`` and both offsets), forces ``type`` to
  ``result`` as the reference does, and keeps the target's ``result`` (the reference
  overwrites it with ``DOCA_SUCCESS``, hiding the target's ``IO_FAILED`` or
  ``INVALID_VALUE``; the reference initiator ignores ``result``, so passing it on is wire
  compatible).

>>> from apps.storage.wire.io_message import IoMessage, IoMessageType
>>> from doca_py.errors import ErrorCode
>>> req = IoMessage(IoMessageType.READ, 5, 0, 4096, 8192, 40960).pack()
>>> check_request(req, 64, capacity=1 << 20, host_size=1 << 20) is None
True
>>> check_request(req, 64, capacity=40960, host_size=1 << 20).code.name
'INVALID_VALUE'
>>> resp = bytearray(IoMessage.unpack(req).response(ErrorCode.IO_FAILED).pack())  # the target's answer
>>> finish_response_in_place(resp, req) is None
True
>>> IoMessage.unpack(resp).type, ErrorCode(IoMessage.unpack(resp).result).name
(0, 'IO_FAILED')
>>> resp = bytearray(req)                                                           # not an answer
>>> finish_response_in_place(resp, req)
'the storage target answered with io message type 1 instead of result'
>>> ErrorCode(IoMessage.unpack(resp).result).name
'UNEXPECTED'
"""

from __future__ import annotations

from dataclasses import dataclass

from doca_py.errors import ErrorCode

from apps.storage.wire.addressing import target_transfer_error
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, USER_DATA_OFFSET, IoMessage, IoMessageType, \
    make_response_in_place, set_type_in_place, unpack_io_message_from, user_data_at

__all__ = ["RequestProblem", "check_request", "finish_response_in_place", "user_data_of", "ECHOED"]

_RESULT_TYPE = int(IoMessageType.RESULT)
_READ = int(IoMessageType.READ)
_WRITE = int(IoMessageType.WRITE)
#: Byte ranges of the fields a response must echo: user_data, then io_size + both offsets.
ECHOED = ((USER_DATA_OFFSET, USER_DATA_OFFSET + 8), (20, 40))


@dataclass(frozen=True, slots=True)
class RequestProblem:
    """Why the bridge answers a request itself: the ``doca_error_t`` and a text."""

    code: ErrorCode
    reason: str


def check_request(raw: bytes | bytearray | memoryview, received_len: int, *, capacity: int,
                  host_size: int) -> RequestProblem | None:
    """``None`` if the initiator's message (*raw*: its 64-byte slot, *received_len*: the
    bytes received) may be forwarded to a target of *capacity* bytes for a host region of
    *host_size* bytes; otherwise the error to answer with."""
    if received_len != IO_MESSAGE_SIZE:
        return RequestProblem(ErrorCode.INVALID_VALUE, f"io message of {received_len} bytes, expected "
                                                       f"{IO_MESSAGE_SIZE}")
    typ, _ud, _res, size, requester, storage = unpack_io_message_from(raw)
    if (typ == _READ or typ == _WRITE) and 0 < size and storage + size <= capacity \
            and requester + size <= host_size:
        return None  # the common case, without building an IoMessage
    if typ != _READ and typ != _WRITE:
        return RequestProblem(ErrorCode.NOT_SUPPORTED, f"io message type {typ} is not read or write")
    problem = target_transfer_error(IoMessage.unpack(raw), capacity, host_size)
    return RequestProblem(ErrorCode.INVALID_VALUE, (problem or "io message refused")
                          .replace("remote region", "host region"))


def user_data_of(raw: bytes | bytearray | memoryview, received_len: int) -> int | None:
    """The ``user_data`` of a message of *received_len* bytes (``None`` if it is too short)."""
    if received_len < USER_DATA_OFFSET + 8:
        return None
    return user_data_at(raw)


def finish_response_in_place(response: bytearray | memoryview, request: bytes | bytearray | memoryview) -> str | None:
    """Turn the target's answer (*response*, 64 bytes) to *request* into the initiator's
    response, in place; a text if the answer was wrong (it then carries an error).

    ``type`` becomes ``result`` (the reference's only change besides ``result``). An answer
    of another type, or one that does not echo the request's ``user_data``, ``io_size``
    and offsets, is replaced by the request turned into an ``UNEXPECTED`` response, so the
    initiator gets a well-formed error for its own request. A zero ``result`` of a
    well-formed answer stays zero; a target error stays that error.
    """
    # Field by field (what ECHOED spans), without slicing either buffer: this runs once per IO.
    typ, ud, _res, size, requester, storage = unpack_io_message_from(response)
    _typ, req_ud, _req_res, req_size, req_requester, req_storage = unpack_io_message_from(request)
    problem = None
    if ud != req_ud or size != req_size or requester != req_requester or storage != req_storage:
        problem = "the storage target's response does not echo the request (user_data, io_size or offsets)"
    elif typ != _RESULT_TYPE:
        problem = f"the storage target answered with io message type {typ} instead of result"
    if problem is not None:
        response[:IO_MESSAGE_SIZE] = request[:IO_MESSAGE_SIZE]
        make_response_in_place(response, ErrorCode.UNEXPECTED)
    else:
        set_type_in_place(response, _RESULT_TYPE)
    return problem
