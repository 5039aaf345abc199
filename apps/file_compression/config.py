"""The File Compression flags: those of NVIDIA's ``doca_file_compression`` (DOCA argp, ``--json`` too)."""

from __future__ import annotations

from pathlib import Path

from pydantic import field_validator

from apps.common.cli.config import flag

from apps.common.comch_app import ComchAppConfig

__all__ = ["FileCompressionConfig", "DEFAULT_TIMEOUT", "MAX_FILE_NAME"]

DEFAULT_TIMEOUT = 10
"""``--timeout`` when not given (the C app's ``DEFAULT_TIMEOUT``; its help text says 5)."""
MAX_FILE_NAME = 255
"""Longest ``--file`` path (``USER_MAX_FILE_NAME``)."""


class FileCompressionConfig(ComchAppConfig):
    """``doca_file_compression``: ``-p``, ``-r``, ``-f``, ``-t``."""

    file: Path = flag(short="-f", metavar="FILE", help="File to send by the client / File to write by the server")
    timeout: int = flag(DEFAULT_TIMEOUT, short="-t", kind="int",
                        help="Application timeout for receiving file content messages, in seconds (the server "
                             "fails when no message arrives for that long during a transfer)")

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"{v}: the timeout parameter must be a positive value")
        return v

    @field_validator("file")
    @classmethod
    def _file(cls, v: Path) -> Path:
        if not str(v):
            raise ValueError("the file name must not be empty")
        if len(str(v).encode()) > MAX_FILE_NAME:
            raise ValueError(f"the file name is too long - MAX={MAX_FILE_NAME}")
        return v
