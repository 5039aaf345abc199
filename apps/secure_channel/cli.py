"""The Secure Channel command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

from collections.abc import Sequence

from apps.common.comch_app import run_application
from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config

from .config import SecureChannelConfig
from .control import SERVER_NAME, run

__all__ = ["APP_NAME", "build_parser", "parse_args", "main"]

APP_NAME = "doca_secure_channel"


def build_parser() -> DocaArgumentParser:
    """The argparse parser of Secure Channel (also used for ``--help`` and man pages)."""
    return build_parser_for(
        SecureChannelConfig, prog="python -m apps.secure_channel",
        description="DOCA Secure Channel: host and DPU exchange --num-msgs messages of --msg-size bytes each way "
                    "over comch, a producer thread and a consumer thread on each side, and print how long "
                    "sending and receiving took.",
        epilog=f"The side follows the -p device: a DPU device runs the server '{SERVER_NAME}' (and needs -r, "
               "the host's representor), a host device the client. Each side may send a different number and "
               "size of messages. A client started before its server waits for it silently, as NVIDIA's "
               "does, until Ctrl-C; so does a server for its client. Exit status 0 when every message was "
               "sent and received, 1 on any failure (a vanished peer, a malformed metadata message, a "
               "fast-path error) or Ctrl-C/SIGTERM, 2 on a usage error (a bad flag or -j file).")


def parse_args(argv: Sequence[str] | None = None) -> SecureChannelConfig:
    """Parse and validate a command line (exits with status 1 on errors)."""
    return parse_config(SecureChannelConfig, build_parser(), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 when both directions completed, 1 otherwise."""
    config = parse_args(argv)
    return run_application(config, lambda abort: run(config, abort))
