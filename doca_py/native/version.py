"""``doca_version_runtime()`` of the loaded libdoca_common."""

from __future__ import annotations

from .loader import runtime_version_string

__all__ = ["version_runtime"]


def version_runtime() -> str:
    """``doca_version_runtime()``, e.g. ``"3.0.0058"``."""
    return runtime_version_string()
