"""The DMA Copy command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

from collections.abc import Sequence

from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config
from apps.common.comch_app import run_application

from .config import DmaCopyConfig
from .control import SERVER_NAME, run

__all__ = ["APP_NAME", "build_parser", "parse_args", "main"]

APP_NAME = "doca_dma_copy"


def build_parser() -> DocaArgumentParser:
    """The argparse parser of DMA Copy (also used for ``--help`` and man pages)."""
    return build_parser_for(
        DmaCopyConfig, prog="python -m apps.dma_copy",
        description="DOCA DMA Copy: copy a file between the host and the DPU. The two sides agree over comch on "
                    "the direction and the size, the host exports the file's memory, and the DPU copies the "
                    "whole file with one DOCA DMA memcpy task.",
        epilog=f"The side follows the -p device: a DPU device runs the server '{SERVER_NAME}' (and needs -r, the "
               "host's representor), a host device the client. The direction follows --file: the side where it "
               "is a readable file sends it, the other side creates it (both or neither having it is an error). "
               "A file is at most the DMA device's maximum memcpy size, and not empty. A received file is "
               "written only once complete (a temporary file renamed into place). A host started before its "
               "DPU waits for it silently, as NVIDIA's does, until Ctrl-C; so does the DPU for its host. Exit "
               "status 0 on success, 1 on any failure (a vanished peer, a malformed message, a failure status "
               "from the peer, a file too large) or Ctrl-C/SIGTERM, 2 on a usage error (a bad flag or -j file).")


def parse_args(argv: Sequence[str] | None = None) -> DmaCopyConfig:
    """Parse and validate a command line (exits with status 2 on errors)."""
    return parse_config(DmaCopyConfig, build_parser(), argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 when the file was copied, 1 otherwise."""
    config = parse_args(argv)
    return run_application(config, lambda abort: run(config, abort))
