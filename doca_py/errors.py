"""DOCA error codes as Python exceptions.

Every ``doca_error_t`` value has a registered :class:`DocaError` subclass. Where the
meaning matches a builtin exception the subclass also derives from it, so
``except TimeoutError`` catches ``DOCA_ERROR_TIME_OUT``. Misuse of the Python API
(wrong types, closed objects, calls from the wrong thread) raises
:class:`DocaUsageError` instead, which carries no DOCA code.

Raise the right class for a code with :func:`raise_for` or build one with
:func:`lookup`.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

from .types import NamedIntEnum

__all__ = [
    "ErrorCode",
    "DocaError",
    "DocaUsageError",
    "DocaWarning",
    "lookup",
    "raise_for",
    "check",
    "error_name",
    "error_descr",
]


class ErrorCode(NamedIntEnum):
    """``doca_error_t`` values (doca_error.h). ``str()`` and ``format()`` give the name
    (``f"failed: {code}"`` reads ``failed: INVALID_VALUE``); :attr:`c_name` is DOCA's."""

    SUCCESS = 0
    UNKNOWN = 1
    NOT_PERMITTED = 2
    IN_USE = 3
    NOT_SUPPORTED = 4
    AGAIN = 5
    INVALID_VALUE = 6
    NO_MEMORY = 7
    INITIALIZATION = 8
    TIME_OUT = 9
    SHUTDOWN = 10
    CONNECTION_RESET = 11
    CONNECTION_ABORTED = 12
    CONNECTION_INPROGRESS = 13
    NOT_CONNECTED = 14
    NO_LOCK = 15
    NOT_FOUND = 16
    IO_FAILED = 17
    BAD_STATE = 18
    UNSUPPORTED_VERSION = 19
    OPERATING_SYSTEM = 20
    DRIVER = 21
    UNEXPECTED = 22
    ALREADY_EXIST = 23
    FULL = 24
    EMPTY = 25
    IN_PROGRESS = 26
    TOO_BIG = 27
    AUTHENTICATION = 28
    BAD_CONFIG = 29
    SKIPPED = 30

    @property
    def c_name(self) -> str:
        """The C enumerator name, as ``doca_error_get_name`` returns it."""
        return "DOCA_SUCCESS" if self is ErrorCode.SUCCESS else f"DOCA_ERROR_{self.name}"


# The same wording on both backends, so messages do not depend on the backend.
_DESCRIPTIONS: dict[int, str] = {
    0: "Success",
    1: "Unknown error",
    2: "Operation not permitted",
    3: "Resource in use",
    4: "Operation not supported",
    5: "Resource temporarily unavailable, try again",
    6: "Invalid input",
    7: "Memory allocation failure",
    8: "Resource initialization failure",
    9: "Timer expired waiting for resource",
    10: "Shut down in process or completed",
    11: "Connection reset by peer",
    12: "Connection aborted",
    13: "Connection in progress",
    14: "Not connected",
    15: "Unable to acquire required lock",
    16: "Resource not found",
    17: "Input/output operation failed",
    18: "Bad state",
    19: "Unsupported version",
    20: "Operating system call failure",
    21: "Driver call failure",
    22: "Unexpected result",
    23: "Resource already exists",
    24: "No more space in resource",
    25: "No entry is available in resource",
    26: "Operation in progress",
    27: "Requested operation too big to be contained",
    28: "Authentication failure",
    29: "Configuration is invalid",
    30: "Operation was skipped",
}


def error_name(code: int) -> str:
    """``doca_error_get_name``: the enumerator name of *code*."""
    try:
        return ErrorCode(code).c_name
    except ValueError:
        return f"DOCA_ERROR_{code}"


def error_descr(code: int) -> str:
    """``doca_error_get_descr``: a one-line description of *code*."""
    return _DESCRIPTIONS.get(code, "Unrecognized error code")


class DocaWarning(UserWarning):
    """Something suspicious that DOCA itself would only log."""


class DocaUsageError(Exception):
    """The Python API was misused (closed object, wrong thread, wrong argument type)."""


class DocaError(Exception):
    """An operation failed with a ``doca_error_t`` code.

    ``str(err)`` reads ``"DOCA_ERROR_NAME: description: detail"``.
    """

    code: ClassVar[int] = ErrorCode.UNKNOWN
    _registry: ClassVar[dict[int, type[DocaError]]] = {}

    def __init_subclass__(cls, code: int | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
            DocaError._registry[code] = cls

    def __init__(self, detail: str = "", *, code: int | None = None) -> None:
        if code is not None and code != type(self).code:
            # An unregistered code on the base class: keep it per instance.
            self.code = code  # type: ignore[misc]
        self.detail = detail
        msg = f"{error_name(self.code)}: {error_descr(self.code)}"
        if detail:
            msg = f"{msg}: {detail}"
        super().__init__(msg)

    @property
    def name(self) -> str:
        """The C enumerator name of :attr:`code`."""
        return error_name(self.code)


class DocaUnknown(DocaError, code=ErrorCode.UNKNOWN): ...
class DocaNotPermitted(DocaError, PermissionError, code=ErrorCode.NOT_PERMITTED): ...
class DocaInUse(DocaError, code=ErrorCode.IN_USE): ...
class DocaNotSupported(DocaError, NotImplementedError, code=ErrorCode.NOT_SUPPORTED): ...
class DocaAgain(DocaError, BlockingIOError, code=ErrorCode.AGAIN): ...
class DocaInvalidValue(DocaError, ValueError, code=ErrorCode.INVALID_VALUE): ...
class DocaNoMemory(DocaError, MemoryError, code=ErrorCode.NO_MEMORY): ...
class DocaInitialization(DocaError, code=ErrorCode.INITIALIZATION): ...
class DocaTimeout(DocaError, TimeoutError, code=ErrorCode.TIME_OUT): ...
class DocaShutdown(DocaError, code=ErrorCode.SHUTDOWN): ...
class DocaConnectionReset(DocaError, ConnectionResetError, code=ErrorCode.CONNECTION_RESET): ...
class DocaConnectionAborted(DocaError, ConnectionAbortedError, code=ErrorCode.CONNECTION_ABORTED): ...
class DocaConnectionInProgress(DocaError, code=ErrorCode.CONNECTION_INPROGRESS): ...
class DocaNotConnected(DocaError, code=ErrorCode.NOT_CONNECTED): ...
class DocaNoLock(DocaError, code=ErrorCode.NO_LOCK): ...
class DocaNotFound(DocaError, LookupError, code=ErrorCode.NOT_FOUND): ...
class DocaIOFailed(DocaError, OSError, code=ErrorCode.IO_FAILED): ...
class DocaBadState(DocaError, code=ErrorCode.BAD_STATE): ...
class DocaUnsupportedVersion(DocaError, code=ErrorCode.UNSUPPORTED_VERSION): ...
class DocaOperatingSystem(DocaError, OSError, code=ErrorCode.OPERATING_SYSTEM): ...
class DocaDriver(DocaError, code=ErrorCode.DRIVER): ...
class DocaUnexpected(DocaError, code=ErrorCode.UNEXPECTED): ...
class DocaAlreadyExist(DocaError, FileExistsError, code=ErrorCode.ALREADY_EXIST): ...
class DocaFull(DocaError, code=ErrorCode.FULL): ...
class DocaEmpty(DocaError, code=ErrorCode.EMPTY): ...
class DocaInProgress(DocaError, code=ErrorCode.IN_PROGRESS): ...
class DocaTooBig(DocaError, OverflowError, code=ErrorCode.TOO_BIG): ...
class DocaAuthentication(DocaError, PermissionError, code=ErrorCode.AUTHENTICATION): ...
class DocaBadConfig(DocaError, ValueError, code=ErrorCode.BAD_CONFIG): ...
class DocaSkipped(DocaError, code=ErrorCode.SKIPPED): ...


def lookup(code: int) -> type[DocaError]:
    """The exception class registered for *code* (the base class if none is)."""
    return DocaError._registry.get(code, DocaError)


def raise_for(code: int, detail: str = "") -> NoReturn:
    """Raise the exception registered for a non-zero *code*."""
    cls = lookup(code)
    raise cls(detail, code=code)


def check(code: int, detail: str = "") -> None:
    """Raise for *code* unless it is ``DOCA_SUCCESS`` (``DOCA_IS_ERROR``)."""
    if code:
        raise_for(code, detail)


__all__ += [cls.__name__ for cls in DocaError._registry.values()]
