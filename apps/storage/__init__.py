"""Code shared by the DOCA storage reference applications rebuilt in Python.

Wire formats (storage-apps-spec §3–§6) and helpers used by every storage app:

* `.control` — the 13 control messages, their byte layout, error responses and
  the positional phase checker;
* `.channel` — length-prefixed framing over TCP (and any transport with
  ``send(bytes)`` plus receive events, e.g. comch);
* `.io_message` — the 64-byte io message;
* `.addressing` — gga address maths (half blocks, chunks, worker segments);
* `.sbc`, `.compressed_block`, `.lz4_blocks` — the on-storage format;
* `.stats` — the statistics blocks the apps print;
* `.cli`, `.config` — DOCA-style flags, ``--json`` files, pydantic configs.

Unlike the C++ reference, every value received from a peer is validated before use.
"""

from __future__ import annotations

from .errors import ProtocolError, StorageAppError

__all__ = ["ProtocolError", "StorageAppError"]
