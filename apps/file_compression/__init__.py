"""``python -m apps.file_compression``: NVIDIA's File Compression application (``doca_file_compression``).

The host side (comch client) compresses a file with a DOCA compress deflate task, or with zlib
when no device can compress, and sends it over comch in segments after a file info message
carrying its checksum; the DPU side (comch server) decompresses it with DOCA compress, checks
the checksum (Adler-32 << 32 | CRC-32 of the original) and writes it. Wire-compatible with the C
application of ``NVIDIA-DOCA/doca-samples`` (``applications/file_compression``); the differences
are listed in ``docs/file-compression.md``.

Modules: `cli` (parser, ``main``), `config` (the flags), `control` (client and server flows, the
server's `FileReceiver`), `worker` (DOCA compress or zlib), `wire` (the messages); shared with
`apps.secure_channel` through `apps.common`: `comch_app` (the device flags, the main skeleton) and
`comch_channel` (the comch connection).
"""

from __future__ import annotations

from .cli import APP_NAME, build_parser, main, parse_args
from .config import FileCompressionConfig
from .control import SERVER_NAME, FileReceiver, TransferState

__all__ = ["APP_NAME", "SERVER_NAME", "FileCompressionConfig", "FileReceiver", "TransferState", "build_parser",
           "parse_args", "main"]
