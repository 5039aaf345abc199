"""Code shared by the DOCA storage reference applications rebuilt in Python.

Four rooms, by what they hold:

* `.wire` — byte formats, pure data: the 13 control messages (`.wire.control`), the
  64-byte io message, gga address maths, the on-storage formats (`.sbc`,
  `.compressed_block`, `.lz4_blocks`);
* `.channels` — control channels: length-prefixed framing over TCP
  (`.channels.control_channel`) or a comch connection (`.channels.comch_transport`);
* `.runtime` — what the processes share at run time: the worker-thread base of every app and
  its sleep on the ``Pe`` (`.runtime.wakeup`), the bridges' control phase and worker base,
  signal handling, device opening, offload batches, statistics, the bridges' ``main``;
* `.cli` — DOCA-style flags and ``--json`` files (`.cli.argp`), the configuration bases and
  shared field types (`.cli.config`; each app's own model is in its ``config.py``), man pages.

Unlike the C++ reference, every value received from a peer is validated before use.
"""

from __future__ import annotations

import importlib

__all__ = ["ProtocolError", "StorageAppError"]


def __getattr__(name: str) -> object:
    # Lazily: importing `apps.storage.cli.usage` (the topology) must not import doca_py.
    if name in __all__:
        return getattr(importlib.import_module("apps.storage.errors"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
