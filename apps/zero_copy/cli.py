"""The zero-copy bridge's command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

from collections.abc import Sequence

from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config
from apps.storage.runtime.app_main import print_config, run_app

from .config import ZeroCopyConfig
from .control import run_service

__all__ = ["APP_NAME", "build_parser", "parse_args", "main"]

APP_NAME = "doca_storage_comch_to_rdma_zero_copy"


def build_parser() -> DocaArgumentParser:
    """The argparse parser of the bridge (also used for ``--help`` and man pages)."""
    return build_parser_for(
        ZeroCopyConfig, prog="python -m apps.zero_copy",
        description="DOCA storage comch-to-RDMA zero-copy bridge: serve one initiator over comch from one RDMA "
                    "storage target, which reads and writes the initiator's memory directly (the host's "
                    "PCI-exported region is re-exported for RDMA; the bridge only forwards io messages).",
        epilog="Start the target with plain content (a raw file of --block-size x --block-count bytes, or an .sbc "
               "of plain data): nothing is decompressed on the way. Ctrl-C stops the bridge in any phase (exit "
               "status 1).")


def parse_args(argv: Sequence[str] | None = None) -> ZeroCopyConfig:
    """Parse and validate a command line (exits with status 2 on errors)."""
    return parse_config(ZeroCopyConfig, build_parser(), argv)


def _print_config(config: ZeroCopyConfig) -> None:
    print_config("zero_copy_app_configuration", [
        ("cpu_set", f"[{', '.join(str(c) for c in config.cpu)}]"),
        ("device", f"\"{config.device}\""),
        ("representor", f"\"{config.representor}\""),
        ("command_channel_name", f"\"{config.command_channel_name}\""),
        ("control_timeout", f"{config.control_timeout}"),
        ("storage_server", f"{config.storage_server}"),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 after the initiator's ``shutdown_request``, 1 on any failure or Ctrl-C."""
    return run_app(parse_args(argv), APP_NAME, (), _print_config, run_service)
