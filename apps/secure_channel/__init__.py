"""``python -m apps.secure_channel``: NVIDIA's Secure Channel application (``doca_secure_channel``).

Host (comch client) and DPU (comch server) tell each other, in a 12-byte metadata message, how
many messages of which size their producer will send; then on each side a producer thread sends
them over the comch fast path while a consumer thread receives the peer's, each thread with its
own progress engine and the main thread progressing the comch connection. The DPU ends with an
``END`` message; both print how long sending and receiving took. Wire-compatible with the C
application of ``NVIDIA-DOCA/doca-samples`` (``applications/secure_channel``); the differences are
listed in ``docs/secure-channel.md``.

Modules: `cli` (parser, ``main``), `config` (the flags), `control` (the flow, `PeerMessages`),
`worker` (the producer and consumer threads), `wire` (the metadata message). The comch connection
is `apps.common.comch_channel`.
"""

from __future__ import annotations

from .cli import APP_NAME, build_parser, main, parse_args
from .config import SecureChannelConfig
from .control import SERVER_NAME, PeerMessages, statistics_lines

__all__ = ["APP_NAME", "SERVER_NAME", "SecureChannelConfig", "PeerMessages", "statistics_lines", "build_parser",
           "parse_args", "main"]
