"""doca_log served by the emulator: what ``DOCA_LOG_REGISTER`` and ``DOCA_LOG_INFO`` … of a C program reach.

DOCA's model (doca_log.h): a program registers named sources and creates backends; a message of
*level* is shown by an application backend whose limits frame it — ``upper <= level <= lower`` on DOCA's
scale (CRIT = 20 … TRACE = 70), by default CRIT to INFO. A backend takes the global limits when it is
created and follows later global changes unless that limit was made strict. The standard backend is two:
stdout from INFO down to the global lower limit, stderr from WARNING up to the global upper one.
SDK backends receive the SDK's own messages — here the emulator's records on the ``doca_py`` logger — at
or above their SDK level.

A record reads ``[HH:MM:SS:micros][pid][DOCA][INF][file.c:123][function] text``. File backends write
through the C library's ``FILE *`` (``fputs``), so a record keeps its place among the program's own
``printf`` output on the same stream.
"""

from __future__ import annotations

import ctypes
import logging
import os
import syslog
import threading
import time
from collections.abc import Callable

from ...errors import DocaInvalidValue, DocaNotFound
from ...log import LogLevel, logger, to_doca_level
from ._core import c_function, handle, impl, obj, out_int, out_ptr, read_str

__all__ = ["LogBackend", "format_record"]

_SHORT = {LogLevel.CRIT: "CRT", LogLevel.ERROR: "ERR", LogLevel.WARNING: "WRN", LogLevel.INFO: "INF",
          LogLevel.DEBUG: "DBG", LogLevel.TRACE: "TRC", LogLevel.DISABLE: "DIS"}

_libc = ctypes.CDLL(None)
_fputs = _libc.fputs
_fputs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
_fputs.restype = ctypes.c_int
_fflush = _libc.fflush
_fflush.argtypes = [ctypes.c_void_p]
_fflush.restype = ctypes.c_int

_LogFlushCb = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # log_flush_callback(char *buf)


def _level(value: int, what: str = "level") -> LogLevel:
    try:
        return LogLevel(value)
    except ValueError:
        raise DocaInvalidValue(f"{what} {value} is not a DOCA log level (10, 20 … 70)") from None


def _stdio(name: str) -> int:
    return int(ctypes.c_void_p.in_dll(_libc, name).value or 0)


class LogBackend:
    """One logging backend: where records go and which levels it shows."""

    def __init__(self, write: Callable[[int, str], None], sdk: bool) -> None:
        self.write = write
        self.sdk = sdk
        self.lower = _state.lower  # application backends: the most verbose level shown
        self.upper = _state.upper  # … and the most severe
        self.strict_lower = False
        self.strict_upper = False
        self.sdk_level = _state.sdk  # SDK backends: the most verbose level shown

    def shows(self, level: int) -> bool:
        if self.sdk:
            return level <= self.sdk_level
        return self.upper <= level <= self.lower


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lower = int(LogLevel.INFO)  # DOCA's defaults (doca_log.h)
        self.upper = int(LogLevel.CRIT)
        self.sdk = int(LogLevel.INFO)
        self.backends: list[LogBackend] = []
        self.sources: dict[int, str] = {}
        self.next_source = 0
        self.sdk_handler: _SdkHandler | None = None


_state = _State()


def format_record(level: int, fname: str, line: int, func: str, text: str) -> str:
    """One record as the backends write it (with its newline)."""
    now = time.time()
    clock = time.strftime("%H:%M:%S", time.localtime(now))
    try:
        tag = _SHORT[LogLevel(level)]
    except ValueError:
        tag = str(level)
    return (f"[{clock}:{int(now % 1 * 1_000_000):06d}][{os.getpid()}][DOCA][{tag}]"
            f"[{os.path.basename(fname)}:{line}][{func}] {text}\n")


def _add(backend: LogBackend, out: int | None) -> int:
    with _state.lock:
        _state.backends.append(backend)
    if backend.sdk:
        _attach_sdk()
    out_ptr(out, handle(backend))
    return 0


def _file_writer(stream: int | None) -> Callable[[int, str], None]:
    if not stream:
        raise DocaInvalidValue("FILE * is NULL")

    def write(level: int, text: str) -> None:
        _fputs(text.encode(errors="surrogateescape"), stream)
        _fflush(stream)

    return write


def _fd_writer(fd: int) -> Callable[[int, str], None]:
    if fd < 0:
        raise DocaInvalidValue(f"file descriptor {fd}")

    def write(level: int, text: str) -> None:
        os.write(fd, text.encode(errors="surrogateescape"))

    return write


def _buf_writer(buf: int | None, capacity: int, handler: int | None) -> Callable[[int, str], None]:
    if not buf or capacity == 0 or not handler:
        raise DocaInvalidValue("the buffer, its capacity and the flush handler are required")
    flush = c_function(_LogFlushCb, handler)

    def write(level: int, text: str) -> None:
        data = text.encode(errors="surrogateescape")[:capacity - 1] + b"\0"  # each record at the buffer's start
        ctypes.memmove(buf, data, len(data))
        flush(buf)

    return write


def _syslog_writer(name: int | None) -> Callable[[int, str], None]:
    ident = read_str(name, "syslog name")
    prio: dict[int, int] = {LogLevel.CRIT: syslog.LOG_CRIT, LogLevel.ERROR: syslog.LOG_ERR, LogLevel.WARNING: syslog.LOG_WARNING,
            LogLevel.INFO: syslog.LOG_INFO}

    def write(level: int, text: str) -> None:
        syslog.openlog(ident)
        line = text.rstrip("\n").encode(errors="surrogateescape").decode(errors="replace")
        syslog.syslog(prio.get(level, syslog.LOG_DEBUG), line)

    return write


# -- sources and records -------------------------------------------------------------------------------

def _message(p: int | None) -> str:
    """The formatted message, its bytes kept as they are (``surrogateescape``: written back unchanged)."""
    if not p:
        raise DocaInvalidValue("message: NULL")
    return ctypes.string_at(p).decode("utf-8", "surrogateescape")


@impl("doca_log_register_source")
def _register_source(name: int | None, out: int | None) -> int:
    text = read_str(name, "source name")
    if not out:
        raise DocaInvalidValue("source is NULL")
    with _state.lock:
        source = _state.next_source
        _state.next_source += 1
        _state.sources[source] = text
    out_int(out, source)
    return 0


@impl("doca_log_unregister_source")
def _unregister_source(source: int) -> int:
    with _state.lock:
        if _state.sources.pop(source, None) is None:
            raise DocaNotFound(f"log source {source} is not registered")
    return 0


@impl("doca_log")
def _log(level: int, source: int, fname: int | None, line: int, func: int | None, text: int | None) -> int:
    # libdoca's variadic entry formatted the message in C: *text* is the finished message.
    _level(level)
    record = format_record(level, read_str(fname, "file name") if fname else "?", line,
                           read_str(func, "function") if func else "?", _message(text))
    for backend in list(_state.backends):
        if not backend.sdk and backend.shows(level):
            backend.write(level, record)
    return 0


# -- application backends ------------------------------------------------------------------------------

@impl("doca_log_backend_create_standard")
def _create_standard() -> int:
    out = LogBackend(_file_writer(_stdio("stdout")), sdk=False)
    out.upper, out.strict_upper = int(LogLevel.INFO), True
    err = LogBackend(_file_writer(_stdio("stderr")), sdk=False)
    err.lower, err.strict_lower = int(LogLevel.WARNING), True
    with _state.lock:
        _state.backends += [out, err]
    return 0


@impl("doca_log_backend_create_with_file")
def _create_with_file(stream: int | None, out: int | None) -> int:
    return _add(LogBackend(_file_writer(stream), sdk=False), out)


@impl("doca_log_backend_create_with_fd")
def _create_with_fd(fd: int, out: int | None) -> int:
    return _add(LogBackend(_fd_writer(fd), sdk=False), out)


@impl("doca_log_backend_create_with_buf")
def _create_with_buf(buf: int | None, capacity: int, handler: int | None, out: int | None) -> int:
    return _add(LogBackend(_buf_writer(buf, capacity, handler), sdk=False), out)


@impl("doca_log_backend_create_with_syslog")
def _create_with_syslog(name: int | None, out: int | None) -> int:
    return _add(LogBackend(_syslog_writer(name), sdk=False), out)


def _app(ptr: int | None) -> LogBackend:
    backend = obj(ptr, LogBackend, "doca_log_backend")
    if backend.sdk:
        raise DocaInvalidValue("an SDK backend has no application level limits")
    return backend


@impl("doca_log_backend_set_level_lower_limit")
def _set_lower(ptr: int | None, level: int) -> int:
    _app(ptr).lower = int(_level(level))
    return 0


@impl("doca_log_backend_set_level_upper_limit")
def _set_upper(ptr: int | None, level: int) -> int:
    _app(ptr).upper = int(_level(level))
    return 0


@impl("doca_log_backend_set_level_lower_limit_strict")
def _set_lower_strict(ptr: int | None) -> int:
    _app(ptr).strict_lower = True
    return 0


@impl("doca_log_backend_set_level_upper_limit_strict")
def _set_upper_strict(ptr: int | None) -> int:
    _app(ptr).strict_upper = True
    return 0


@impl("doca_log_level_set_global_lower_limit")
def _set_global_lower(level: int) -> int:
    value = int(_level(level))
    with _state.lock:
        _state.lower = value
        for b in _state.backends:
            if not b.sdk and not b.strict_lower:
                b.lower = value
    return 0


@impl("doca_log_level_set_global_upper_limit")
def _set_global_upper(level: int) -> int:
    value = int(_level(level))
    with _state.lock:
        _state.upper = value
        for b in _state.backends:
            if not b.sdk and not b.strict_upper:
                b.upper = value
    return 0


@impl("doca_log_level_get_global_lower_limit")
def _get_global_lower() -> int:
    return _state.lower


@impl("doca_log_level_get_global_upper_limit")
def _get_global_upper() -> int:
    return _state.upper


# -- SDK backends: the emulator's own records ----------------------------------------------------------

class _SdkHandler(logging.Handler):
    """Hands the ``doca_py`` logger's records to the SDK backends that show their level."""

    def emit(self, record: logging.LogRecord) -> None:
        level = int(to_doca_level(record.levelno))
        targets = [b for b in list(_state.backends) if b.sdk and b.shows(level)]
        if not targets:
            return
        text = format_record(level, record.pathname, record.lineno, record.funcName, record.getMessage())
        for backend in targets:
            backend.write(level, text)


def _attach_sdk() -> None:
    with _state.lock:
        if _state.sdk_handler is None:
            _state.sdk_handler = _SdkHandler()
            logger.addHandler(_state.sdk_handler)
    _follow_sdk_levels()


def _follow_sdk_levels() -> None:
    # The logger must let through what the most verbose SDK backend shows.
    from ...log import to_python_level

    levels = [b.sdk_level for b in _state.backends if b.sdk]
    if levels and int(LogLevel.DISABLE) < max(levels):
        want = to_python_level(max(levels))
        if logger.getEffectiveLevel() > want:
            logger.setLevel(want)


@impl("doca_log_backend_create_with_file_sdk")
def _create_with_file_sdk(stream: int | None, out: int | None) -> int:
    return _add(LogBackend(_file_writer(stream), sdk=True), out)


@impl("doca_log_backend_create_with_fd_sdk")
def _create_with_fd_sdk(fd: int, out: int | None) -> int:
    return _add(LogBackend(_fd_writer(fd), sdk=True), out)


@impl("doca_log_backend_create_with_buf_sdk")
def _create_with_buf_sdk(buf: int | None, capacity: int, handler: int | None, out: int | None) -> int:
    return _add(LogBackend(_buf_writer(buf, capacity, handler), sdk=True), out)


@impl("doca_log_backend_create_with_syslog_sdk")
def _create_with_syslog_sdk(name: int | None, out: int | None) -> int:
    return _add(LogBackend(_syslog_writer(name), sdk=True), out)


@impl("doca_log_backend_set_sdk_level")
def _set_sdk_level(ptr: int | None, level: int) -> int:
    backend = obj(ptr, LogBackend, "doca_log_backend")
    if not backend.sdk:
        raise DocaInvalidValue("an application backend has no SDK level")
    backend.sdk_level = int(_level(level))
    _follow_sdk_levels()
    return 0


@impl("doca_log_level_set_global_sdk_limit")
def _set_global_sdk(level: int) -> int:
    value = int(_level(level))
    with _state.lock:
        _state.sdk = value
        for b in _state.backends:
            if b.sdk:
                b.sdk_level = value
    _follow_sdk_levels()
    return 0


@impl("doca_log_level_get_global_sdk_limit")
def _get_global_sdk() -> int:
    return _state.sdk
