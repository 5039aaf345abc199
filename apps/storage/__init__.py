"""Code shared by the DOCA storage reference applications rebuilt in Python.

Wire formats (storage-apps-spec §3–§6) and helpers used by every storage app:

* :mod:`.control` — the 13 control messages, their byte layout, error responses and
  the positional phase checker;
* :mod:`.channel` — length-prefixed framing over TCP (and any transport with
  ``send(bytes)`` plus receive events, e.g. comch);
* :mod:`.io_message` — the 64-byte io message;
* :mod:`.addressing` — gga address maths (half blocks, chunks, worker segments);
* :mod:`.sbc`, :mod:`.compressed_block`, :mod:`.lz4_blocks` — the on-storage format;
* :mod:`.stats` — the statistics blocks the apps print;
* :mod:`.cli`, :mod:`.config` — DOCA-style flags, ``--json`` files, pydantic configs.

Unlike the C++ reference, every value received from a peer is validated before use.
"""

from __future__ import annotations

from .errors import ProtocolError, StorageAppError

__all__ = ["ProtocolError", "StorageAppError"]
