"""Fixtures of the File Compression tests (shared with tests/secure_channel)."""

from .procs import comch_env, spawn  # noqa: F401
