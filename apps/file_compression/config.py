"""The File Compression flags: those of NVIDIA's ``doca_file_compression`` (DOCA argp, ``--json`` too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import field_validator, model_validator

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
                             "fails when no message arrives for that long during a transfer; nothing else: not "
                             "the wait for a client to connect, nor the client's waits)")

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"{v}: the timeout parameter must be a positive value")
        return v

    @field_validator("file", mode="before")
    @classmethod
    def _file_text(cls, v: Any) -> Any:
        # before Path(): Path("") is "." and a trailing "/" is dropped, hiding what the user wrote
        if isinstance(v, str):
            if not v:
                raise ValueError("the file name must not be empty")
            if "\0" in v:
                raise ValueError("the file name must not contain a NUL character")
            if v.endswith("/"):
                raise ValueError(f"{v!r} names a directory, not a file")
        return v

    @field_validator("file")
    @classmethod
    def _file(cls, v: Path) -> Path:
        if len(str(v).encode()) > MAX_FILE_NAME:
            raise ValueError(f"the file name is too long - MAX={MAX_FILE_NAME}")
        if v.is_dir():
            raise ValueError(f"{str(v)!r} is a directory, not a file")
        parent = v.parent
        if not parent.is_dir():
            raise ValueError(f"the directory of {str(v)!r} does not exist")
        return v

    @model_validator(mode="after")
    def _client_input(self) -> FileCompressionConfig:
        # Without -r the program can only be the client (a DPU device needs -r for its server), which sends
        # --file: it must be a readable regular file. With -r the side is known only once the device is open.
        if not self.rep_pci:
            path = self.file
            if not path.exists():
                raise ValueError(f"--file: {str(path)!r} does not exist (the client sends it)")
            if not path.is_file():
                raise ValueError(f"--file: {str(path)!r} is not a regular file (the client sends it)")
            if not os.access(path, os.R_OK):
                raise ValueError(f"--file: {str(path)!r} is not readable (the client sends it)")
        return self
