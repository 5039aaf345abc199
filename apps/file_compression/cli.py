"""The File Compression command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

from collections.abc import Sequence

from apps.common.comch_app import run_application
from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config

from .config import FileCompressionConfig
from .control import SERVER_NAME, run

__all__ = ["APP_NAME", "build_parser", "parse_args", "main"]

APP_NAME = "doca_file_compression"


def build_parser() -> DocaArgumentParser:
    """The argparse parser of File Compression (also used for ``--help`` and man pages)."""
    return build_parser_for(
        FileCompressionConfig, prog="python -m apps.file_compression",
        description="DOCA File Compression: the host (comch client) compresses a file with DOCA compress, or "
                    "zlib when no device can compress, and sends it with its checksum over comch; the DPU "
                    "(comch server) decompresses it, checks the checksum and writes the file.",
        epilog=f"The side follows the -p device: a DPU device runs the server '{SERVER_NAME}' (and needs -r, "
               "the host's representor), a host device the client. The server writes --file only once the "
               "whole file was received, decompressed and checked (a temporary file renamed into place). "
               "A client started before its server waits for it silently, as NVIDIA's does, until Ctrl-C; "
               "so does a server for its client. -t bounds only the server's wait for the next message of a "
               "transfer. Exit status 0 on success, 1 on any failure (a vanished peer, a malformed or "
               "oversized transfer, a checksum mismatch, the timeout) or Ctrl-C/SIGTERM, 2 on a usage error "
               "(a bad flag, -f or -j file).")


def parse_args(argv: Sequence[str] | None = None) -> FileCompressionConfig:
    """Parse and validate a command line (exits with status 1 on errors)."""
    return parse_config(FileCompressionConfig, build_parser(), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 when the file was delivered, 1 otherwise."""
    config = parse_args(argv)
    return run_application(config, lambda abort: run(config, abort))
