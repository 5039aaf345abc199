"""DOCA error codes as Python exceptions.

Every ``doca_error_t`` value has a registered [`DocaError`][doca_py.errors.DocaError] subclass. Where the
meaning matches a builtin exception the subclass also derives from it, so
``except TimeoutError`` catches ``DOCA_ERROR_TIME_OUT``. Misuse of the Python API
(wrong types, closed objects, calls from the wrong thread) raises
[`DocaUsageError`][doca_py.errors.DocaUsageError] instead, which carries no DOCA code. Both derive from
[`DocaPyError`][doca_py.errors.DocaPyError]: ``except DocaPyError`` catches every error doca_py raises.

Raise the right class for a code with [`raise_for`][doca_py.errors.raise_for] or build one with
[`lookup`][doca_py.errors.lookup].
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

from .types import NamedIntEnum

__all__ = [
    "ErrorCode",
    "DocaPyError",
    "DocaError",
    "DocaUsageError",
    "DocaTypeError",
    "DocaImplError",
    "DocaWarning",
    "lookup",
    "raise_for",
    "check",
    "error_name",
    "error_descr",
]


class ErrorCode(NamedIntEnum):
    """``doca_error_t`` values (doca_error.h). ``str()`` and ``format()`` give the name
    (``f"failed: {code}"`` reads ``failed: INVALID_VALUE``); [`c_name`][doca_py.errors.ErrorCode.c_name] is DOCA's."""

    SUCCESS = 0
    """``DOCA_SUCCESS``: Success."""
    UNKNOWN = 1
    """``DOCA_ERROR_UNKNOWN``: Unknown error."""
    NOT_PERMITTED = 2
    """``DOCA_ERROR_NOT_PERMITTED``: Operation not permitted."""
    IN_USE = 3
    """``DOCA_ERROR_IN_USE``: Resource in use."""
    NOT_SUPPORTED = 4
    """``DOCA_ERROR_NOT_SUPPORTED``: Operation not supported."""
    AGAIN = 5
    """``DOCA_ERROR_AGAIN``: Resource temporarily unavailable, try again."""
    INVALID_VALUE = 6
    """``DOCA_ERROR_INVALID_VALUE``: Invalid input."""
    NO_MEMORY = 7
    """``DOCA_ERROR_NO_MEMORY``: Memory allocation failure."""
    INITIALIZATION = 8
    """``DOCA_ERROR_INITIALIZATION``: Resource initialization failure."""
    TIME_OUT = 9
    """``DOCA_ERROR_TIME_OUT``: Timer expired waiting for resource."""
    SHUTDOWN = 10
    """``DOCA_ERROR_SHUTDOWN``: Shut down in process or completed."""
    CONNECTION_RESET = 11
    """``DOCA_ERROR_CONNECTION_RESET``: Connection reset by peer."""
    CONNECTION_ABORTED = 12
    """``DOCA_ERROR_CONNECTION_ABORTED``: Connection aborted."""
    CONNECTION_INPROGRESS = 13
    """``DOCA_ERROR_CONNECTION_INPROGRESS``: Connection in progress."""
    NOT_CONNECTED = 14
    """``DOCA_ERROR_NOT_CONNECTED``: Not connected."""
    NO_LOCK = 15
    """``DOCA_ERROR_NO_LOCK``: Unable to acquire required lock."""
    NOT_FOUND = 16
    """``DOCA_ERROR_NOT_FOUND``: Resource not found."""
    IO_FAILED = 17
    """``DOCA_ERROR_IO_FAILED``: Input/output operation failed."""
    BAD_STATE = 18
    """``DOCA_ERROR_BAD_STATE``: Bad state."""
    UNSUPPORTED_VERSION = 19
    """``DOCA_ERROR_UNSUPPORTED_VERSION``: Unsupported version."""
    OPERATING_SYSTEM = 20
    """``DOCA_ERROR_OPERATING_SYSTEM``: Operating system call failure."""
    DRIVER = 21
    """``DOCA_ERROR_DRIVER``: Driver call failure."""
    UNEXPECTED = 22
    """``DOCA_ERROR_UNEXPECTED``: Unexpected result."""
    ALREADY_EXIST = 23
    """``DOCA_ERROR_ALREADY_EXIST``: Resource already exists."""
    FULL = 24
    """``DOCA_ERROR_FULL``: No more space in resource."""
    EMPTY = 25
    """``DOCA_ERROR_EMPTY``: No entry is available in resource."""
    IN_PROGRESS = 26
    """``DOCA_ERROR_IN_PROGRESS``: Operation in progress."""
    TOO_BIG = 27
    """``DOCA_ERROR_TOO_BIG``: Requested operation too big to be contained."""
    AUTHENTICATION = 28
    """``DOCA_ERROR_AUTHENTICATION``: Authentication failure."""
    BAD_CONFIG = 29
    """``DOCA_ERROR_BAD_CONFIG``: Configuration is invalid."""
    SKIPPED = 30
    """``DOCA_ERROR_SKIPPED``: Operation was skipped."""
    DEVICE_FATAL_ERROR = 31
    """``DOCA_ERROR_DEVICE_FATAL_ERROR``: Device experienced a fatal error (``doca_error.h`` after 3.0)."""

    @classmethod
    def _missing_(cls, value: object) -> ErrorCode | None:
        # A code this table lacks (a newer DOCA's): a member named by its number, not a ValueError, so that
        # reading a task's status never raises (a completion callback reading it would lose the error).
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        member = int.__new__(cls, value)
        member._name_ = str(value)
        member._value_ = value
        return member

    @property
    def c_name(self) -> str:
        """The C enumerator name, as ``doca_error_get_name`` returns it (``DOCA_ERROR_<number>`` for a code
        this table lacks)."""
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
    31: "Device experienced a fatal error",
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


class DocaPyError(Exception):
    """The root of every exception doca_py raises: ``except DocaPyError`` catches them all.

    Two branches: [`DocaError`][doca_py.errors.DocaError] (DOCA failed, with a ``doca_error_t`` code) and
    [`DocaUsageError`][doca_py.errors.DocaUsageError] (the Python API was misused; no code). A root of
    its own keeps [`DocaError.code`][doca_py.errors.DocaError.code] a real DOCA code on every instance."""


class DocaUsageError(DocaPyError):
    """The Python API was misused (closed object, wrong thread, wrong argument type)."""


class DocaTypeError(DocaUsageError, TypeError):
    """An argument of the wrong type; the message names the parameter. Also a ``TypeError``."""


class DocaImplError(DocaUsageError, ImportError):
    """``DOCA_PY_IMPL`` names a backend that cannot be used (an unknown name, or ``native`` where the DOCA
    libraries do not load). Raised by ``import doca_py``; also an ``ImportError``."""


class DocaError(DocaPyError):
    """An operation failed with a ``doca_error_t`` code.

    ``str(err)`` reads ``"DOCA_ERROR_NAME: description: detail"``.
    """

    code: ClassVar[int] = ErrorCode.UNKNOWN
    """The ``doca_error_t`` value ([`ErrorCode`][doca_py.errors.ErrorCode]); each subclass has its own."""
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
        """What failed, as the raiser described it (may be empty)."""
        msg = f"{error_name(self.code)}: {error_descr(self.code)}"
        if detail:
            msg = f"{msg}: {detail}"
        super().__init__(msg)

    @property
    def name(self) -> str:
        """``doca_error_get_name``: the C enumerator name of [`code`][doca_py.errors.DocaError.code]."""
        return error_name(self.code)


class DocaUnknown(DocaError, code=ErrorCode.UNKNOWN):
    """``DOCA_ERROR_UNKNOWN``: Unknown error."""


class DocaNotPermitted(DocaError, PermissionError, code=ErrorCode.NOT_PERMITTED):
    """``DOCA_ERROR_NOT_PERMITTED``: Operation not permitted.

    Raised when access flags or the device do not allow the operation. Also a ``PermissionError``,
    so ``except PermissionError`` catches it."""


class DocaInUse(DocaError, code=ErrorCode.IN_USE):
    """``DOCA_ERROR_IN_USE``: Resource in use.

    Raised when an object is still referenced (destroying an mmap with buffers, a device still added
    to an mmap)."""


class DocaNotSupported(DocaError, NotImplementedError, code=ErrorCode.NOT_SUPPORTED):
    """``DOCA_ERROR_NOT_SUPPORTED``: Operation not supported.

    Raised when the device, the backend or the loaded DOCA version lacks the feature (also by raw-layer
    stubs of missing functions). Also a ``NotImplementedError``, so ``except
    NotImplementedError`` catches it."""


class DocaAgain(DocaError, BlockingIOError, code=ErrorCode.AGAIN):
    """``DOCA_ERROR_AGAIN``: Resource temporarily unavailable, try again.

    Raised when a resource is momentarily unavailable (a full send queue); retry after
    ``progress()``. Also a ``BlockingIOError``, so ``except BlockingIOError`` catches it."""


class DocaInvalidValue(DocaError, ValueError, code=ErrorCode.INVALID_VALUE):
    """``DOCA_ERROR_INVALID_VALUE``: Invalid input.

    Raised for a bad argument (size, count, a buffer outside its mmap) or a task that failed on its
    input. Also a ``ValueError``, so ``except ValueError`` catches it."""


class DocaNoMemory(DocaError, MemoryError, code=ErrorCode.NO_MEMORY):
    """``DOCA_ERROR_NO_MEMORY``: Memory allocation failure.

    Raised when a pool is exhausted (task or buffer inventory) or an allocation fails. Also a
    ``MemoryError``, so ``except MemoryError`` catches it."""


class DocaInitialization(DocaError, code=ErrorCode.INITIALIZATION):
    """``DOCA_ERROR_INITIALIZATION``: Resource initialization failure.

    Raised when a resource could not be initialised."""


class DocaTimeout(DocaError, TimeoutError, code=ErrorCode.TIME_OUT):
    """``DOCA_ERROR_TIME_OUT``: Timer expired waiting for resource.

    Raised by the waiting helpers (``start(wait=…)``, ``await ctx.started()``) when the deadline
    passes. Also a ``TimeoutError``, so ``except TimeoutError`` catches it."""


class DocaShutdown(DocaError, code=ErrorCode.SHUTDOWN):
    """``DOCA_ERROR_SHUTDOWN``: Shut down in process or completed.

    Raised for work on something that is shutting down."""


class DocaConnectionReset(DocaError, ConnectionResetError, code=ErrorCode.CONNECTION_RESET):
    """``DOCA_ERROR_CONNECTION_RESET``: Connection reset by peer.

    Raised for a connection the peer closed. Also a ``ConnectionResetError``, so ``except
    ConnectionResetError`` catches it."""


class DocaConnectionAborted(DocaError, ConnectionAbortedError, code=ErrorCode.CONNECTION_ABORTED):
    """``DOCA_ERROR_CONNECTION_ABORTED``: Connection aborted.

    Also a ``ConnectionAbortedError``, so ``except ConnectionAbortedError`` catches it."""


class DocaConnectionInProgress(DocaError, code=ErrorCode.CONNECTION_INPROGRESS):
    """``DOCA_ERROR_CONNECTION_INPROGRESS``: Connection in progress."""


class DocaNotConnected(DocaError, code=ErrorCode.NOT_CONNECTED):
    """``DOCA_ERROR_NOT_CONNECTED``: Not connected.

    Raised when a connection-bound call has no established connection."""


class DocaNoLock(DocaError, code=ErrorCode.NO_LOCK):
    """``DOCA_ERROR_NO_LOCK``: Unable to acquire required lock."""


class DocaNotFound(DocaError, LookupError, code=ErrorCode.NOT_FOUND):
    """``DOCA_ERROR_NOT_FOUND``: Resource not found.

    Raised when no device matches an ``open_by_*`` lookup, or an entry does not exist. Also a
    ``LookupError``, so ``except LookupError`` catches it."""


class DocaIOFailed(DocaError, OSError, code=ErrorCode.IO_FAILED):
    """``DOCA_ERROR_IO_FAILED``: Input/output operation failed.

    Raised when a data-path operation failed on the device or transport. Also a ``OSError``, so
    ``except OSError`` catches it."""


class DocaBadState(DocaError, code=ErrorCode.BAD_STATE):
    """``DOCA_ERROR_BAD_STATE``: Bad state.

    Raised when the object is in the wrong state for the call (configuring a started ctx, submitting
    to a ctx that is not RUNNING)."""


class DocaUnsupportedVersion(DocaError, code=ErrorCode.UNSUPPORTED_VERSION):
    """``DOCA_ERROR_UNSUPPORTED_VERSION``: Unsupported version.

    Raised for an export blob or library of another version."""


class DocaOperatingSystem(DocaError, OSError, code=ErrorCode.OPERATING_SYSTEM):
    """``DOCA_ERROR_OPERATING_SYSTEM``: Operating system call failure.

    Raised when an OS call (``mmap``, ``memfd``, sockets) failed. Also a ``OSError``, so ``except
    OSError`` catches it."""


class DocaDriver(DocaError, code=ErrorCode.DRIVER):
    """``DOCA_ERROR_DRIVER``: Driver call failure.

    Raised when the device driver call failed."""


class DocaUnexpected(DocaError, code=ErrorCode.UNEXPECTED):
    """``DOCA_ERROR_UNEXPECTED``: Unexpected result."""


class DocaAlreadyExist(DocaError, FileExistsError, code=ErrorCode.ALREADY_EXIST):
    """``DOCA_ERROR_ALREADY_EXIST``: Resource already exists.

    Raised when the entry exists already (a name, a registration). Also a ``FileExistsError``, so
    ``except FileExistsError`` catches it."""


class DocaFull(DocaError, code=ErrorCode.FULL):
    """``DOCA_ERROR_FULL``: No more space in resource.

    Raised when a queue or table has no room left."""


class DocaEmpty(DocaError, code=ErrorCode.EMPTY):
    """``DOCA_ERROR_EMPTY``: No entry is available in resource.

    Raised when nothing is available to take."""


class DocaInProgress(DocaError, code=ErrorCode.IN_PROGRESS):
    """``DOCA_ERROR_IN_PROGRESS``: Operation in progress."""


class DocaTooBig(DocaError, OverflowError, code=ErrorCode.TOO_BIG):
    """``DOCA_ERROR_TOO_BIG``: Requested operation too big to be contained.

    Raised when a size exceeds the capability limit (``cap_*_get_max_*``). Also a ``OverflowError``,
    so ``except OverflowError`` catches it."""


class DocaAuthentication(DocaError, PermissionError, code=ErrorCode.AUTHENTICATION):
    """``DOCA_ERROR_AUTHENTICATION``: Authentication failure.

    Also a ``PermissionError``, so ``except PermissionError`` catches it."""


class DocaBadConfig(DocaError, ValueError, code=ErrorCode.BAD_CONFIG):
    """``DOCA_ERROR_BAD_CONFIG``: Configuration is invalid.

    Raised when a configuration is inconsistent. Also a ``ValueError``, so ``except ValueError``
    catches it."""


class DocaSkipped(DocaError, code=ErrorCode.SKIPPED):
    """``DOCA_ERROR_SKIPPED``: Operation was skipped."""


class DocaDeviceFatalError(DocaError, code=ErrorCode.DEVICE_FATAL_ERROR):
    """``DOCA_ERROR_DEVICE_FATAL_ERROR``: Device experienced a fatal error.

    Reported by DOCA releases after 3.0 when the device went through a fatal error (a firmware reset):
    its objects must be destroyed and created again."""



def lookup(code: int) -> type[DocaError]:
    """Python-only: the exception class registered for *code* (the base class if none is)."""
    return DocaError._registry.get(code, DocaError)


def raise_for(code: int, detail: str = "") -> NoReturn:
    """Python-only: raise the exception registered for a non-zero *code*."""
    cls = lookup(code)
    raise cls(detail, code=code)


def check(code: int, detail: str = "") -> None:
    """Python-only: raise for *code* unless it is ``DOCA_SUCCESS`` (``DOCA_IS_ERROR``)."""
    if code:
        raise_for(code, detail)


__all__ += [cls.__name__ for cls in DocaError._registry.values()]
