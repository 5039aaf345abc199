"""Logging: DOCA's levels on Python's ``logging`` scale.

The library logs to ``logging.getLogger("doca_py")`` (with a ``NullHandler``); SDK
messages go to ``doca_py.sdk``. DOCA counts upwards in verbosity (10 = disable …
70 = trace), Python counts upwards in severity; [`to_python_level`][doca_py.log.to_python_level] maps
one onto the other, with TRACE as a custom level 5.
"""

from __future__ import annotations

import enum
import logging
import os

__all__ = ["LogLevel", "TRACE", "logger", "sdk_logger", "to_python_level", "to_doca_level", "parse_level"]

TRACE = 5
"""Python level number of DOCA's TRACE (below ``logging.DEBUG``)."""
logging.addLevelName(TRACE, "TRACE")


class LogLevel(enum.IntEnum):
    """``enum doca_log_level``."""

    DISABLE = 10
    """``DOCA_LOG_LEVEL_DISABLE``."""
    CRIT = 20
    """``DOCA_LOG_LEVEL_CRIT``."""
    ERROR = 30
    """``DOCA_LOG_LEVEL_ERROR``."""
    WARNING = 40
    """``DOCA_LOG_LEVEL_WARNING``."""
    INFO = 50
    """``DOCA_LOG_LEVEL_INFO``."""
    DEBUG = 60
    """``DOCA_LOG_LEVEL_DEBUG``."""
    TRACE = 70
    """``DOCA_LOG_LEVEL_TRACE``."""


_TO_PY = {
    LogLevel.DISABLE: logging.CRITICAL + 10,
    LogLevel.CRIT: logging.CRITICAL,
    LogLevel.ERROR: logging.ERROR,
    LogLevel.WARNING: logging.WARNING,
    LogLevel.INFO: logging.INFO,
    LogLevel.DEBUG: logging.DEBUG,
    LogLevel.TRACE: TRACE,
}


def to_python_level(level: int) -> int:
    """Python-only: the Python logging level for a DOCA level (10–70)."""
    return _TO_PY[LogLevel(level)]


def to_doca_level(level: int) -> LogLevel:
    """Python-only: the most verbose DOCA level that still shows records of Python *level*."""
    for doca, py in sorted(_TO_PY.items(), key=lambda kv: kv[1]):
        if py >= level:
            return doca
    return LogLevel.DISABLE


def parse_level(text: str) -> LogLevel:
    """Python-only: parse a level given by name (``info``, ``DEBUG``, ``critical``) or DOCA number.

    Raises ``ValueError`` with the accepted names for anything else.
    """
    key = text.strip().upper()
    aliases = {"CRITICAL": "CRIT", "WARN": "WARNING", "DISABLED": "DISABLE"}
    key = aliases.get(key, key)
    if key.isdigit():
        return LogLevel(int(key))
    try:
        return LogLevel[key]
    except KeyError:
        names = ", ".join(m.name.lower() for m in LogLevel)
        raise ValueError(f"unknown log level {text!r} (expected one of: {names})") from None


logger = logging.getLogger("doca_py")
"""``logging.getLogger("doca_py")``, the library's logger."""
logger.addHandler(logging.NullHandler())
sdk_logger = logging.getLogger("doca_py.sdk")
"""``logging.getLogger("doca_py.sdk")``, where DOCA SDK messages go."""

_env_level = os.environ.get("DOCA_PY_LOG_LEVEL")
if _env_level:
    logger.setLevel(to_python_level(parse_level(_env_level)))
