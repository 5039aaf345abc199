"""Exceptions raised by the storage apps' shared code."""

from __future__ import annotations

from doca_py.errors import ErrorCode

__all__ = ["StorageAppError", "ProtocolError", "PeerClosedError", "ControlRequestError"]


class StorageAppError(Exception):
    """A failure that carries a ``doca_error_t`` code (as the C++ apps' exceptions do).

    ``str(exc)`` is the message alone; `code` is the [`ErrorCode`][doca_py.errors.ErrorCode].
    """

    def __init__(self, code: ErrorCode | int, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode(code) if int(code) in ErrorCode._value2member_map_ else code
        """The [`ErrorCode`][doca_py.errors.ErrorCode] (a plain ``int`` if unknown)."""
        self.message = message
        """The message (``str(exc)``)."""

    def __str__(self) -> str:
        return self.message


class ProtocolError(StorageAppError):
    """Bytes from a peer that do not form a valid message (truncated, oversized, unknown type …)."""

    def __init__(self, message: str, code: ErrorCode | int = ErrorCode.INVALID_VALUE) -> None:
        super().__init__(code, message)


class PeerClosedError(StorageAppError, ConnectionResetError):
    """The peer closed the control connection."""

    def __init__(self, message: str = "control connection closed by the peer") -> None:
        super().__init__(ErrorCode.CONNECTION_RESET, message)


class ControlRequestError(StorageAppError):
    """A control request was answered with an ``error_response`` or a wrong message type."""
