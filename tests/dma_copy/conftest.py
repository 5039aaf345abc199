"""Fixtures of the DMA Copy tests: the child-process helpers of tests/file_compression."""

from tests.file_compression.procs import comch_env, spawn  # noqa: F401
