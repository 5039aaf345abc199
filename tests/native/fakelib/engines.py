"""Build and drive the fake ``libdoca_dma``, ``libdoca_erasure_coding`` and ``libdoca_compress``.

What the fakes do is described at the top of ``engine.h``. :func:`build_fake_engines`
writes the three libraries into a directory (normally next to a fake common);
``lz4="legacy"`` builds the DOCA 2.6 compress API (``…decompress_lz4…``) instead of
the 3.x one (``…lz4_stream…``/``…lz4_block…``).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from . import attach_common, compile_library

__all__ = ["ENGINES", "attach", "build_fake_engines"]

ENGINES = ("dma", "erasure_coding", "compress")

# Per-engine constants the tests compare against.
MAX_NUM_TASKS = 128
MAX_BUF_SIZE = 1 << 20
MAX_BUF_LIST_LEN = 4
CRC, ADLER, XXH = 0x11223344, 0x55667788, 0x0BADCAFE


def params(*, lz4: str = "split") -> dict[str, object]:
    """The ``params.h`` of one build."""
    if lz4 not in ("split", "legacy"):
        raise ValueError(f"lz4 must be 'split' or 'legacy', not {lz4!r}")
    return {
        "MAX_NUM_TASKS": MAX_NUM_TASKS,
        "MAX_BUF_SIZE": f"{MAX_BUF_SIZE}ULL",
        "MAX_BUF_LIST_LEN": MAX_BUF_LIST_LEN,
        "CRC": f"{CRC:#x}u",
        "ADLER": f"{ADLER:#x}u",
        "XXH": f"{XXH:#x}u",
        "FAKE_LZ4_SPLIT": int(lz4 == "split"),
    }


def build_fake_engines(dest: Path, *, lz4: str = "split", engines: tuple[str, ...] = ENGINES) -> list[Path]:
    """Compile the fake engines into *dest* as ``libdoca_<engine>.so``; returns the files.

    Raises :class:`~tests.native.fakelib.FakeBuildError` without a compiler or on a
    compile error.
    """
    for engine in engines:
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
    return [compile_library(f"{engine}.c", dest, f"libdoca_{engine}.so", params(lz4=lz4)) for engine in engines]


def attach(engine: ctypes.CDLL, common: ctypes.CDLL) -> None:
    """Give a fake engine the fake libdoca_common it creates ctxs and tasks with."""
    attach_common(engine, "fake_engine_attach", common,
                  ("fake_ctx_create", "fake_ctx_destroy", "fake_ctx_set_task_cb", "fake_task_alloc_init",
                   "doca_ctx_get_state", "doca_task_get_status", "fake_task_fail", "fake_task_freed",
                   "fake_ctx_set_check_cb"))
