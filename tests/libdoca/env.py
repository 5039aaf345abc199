"""The native path over libdoca, for tests: the build (shared cache, once per run) and a process environment."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from doca_py import libdoca
from doca_py.native import loader

__all__ = ["lib_dir", "native_env", "native_is_libdoca"]


def lib_dir(version: str | None = None) -> Path:
    """The ``lib`` directory of libdoca for *version* (default: the emulator's), built on first use;
    skips the test without a C compiler."""
    try:
        return libdoca.cached(version)
    except libdoca.NoCompiler as exc:
        pytest.skip(f"libdoca: {exc}")


def native_env(version: str | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """*base* (default ``os.environ``) with the native backend over libdoca for *version*."""
    env = dict(os.environ if base is None else base)
    env["DOCA_PY_IMPL"] = "native"
    env[loader.ENV_LIBDIR] = str(lib_dir(version))
    if version is not None:
        env["DOCA_PY_EMU_VERSION"] = version
    return env


def native_is_libdoca() -> bool:
    """Whether the native backend of this process loads libdoca (``DOCA_PY_LIBDIR`` names a libdoca build):
    the emulator then serves both ends of what crosses processes (export hand-overs, comch names)."""
    build = importlib.import_module("doca_py.libdoca.build")  # the module (the package's `build` is its function)

    d = os.environ.get(loader.ENV_LIBDIR, "").strip()
    return bool(d) and build.is_build(d)
