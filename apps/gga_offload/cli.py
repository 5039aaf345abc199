"""The gga bridge's command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

from collections.abc import Sequence

from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config
from apps.storage.runtime.app_main import print_config, run_app

from .config import GgaOffloadConfig
from .control import run_service

__all__ = ["APP_NAME", "WRITE_FLOW_SUPPORTED", "build_parser", "parse_args", "main"]

APP_NAME = "doca_storage_comch_to_rdma_gga_offload"
WRITE_FLOW_SUPPORTED = True
"""The write flow needs software LZ4 compression, which is always available here."""


def build_parser() -> DocaArgumentParser:
    """The argparse parser of the service (also used for ``--help`` and man pages)."""
    return build_parser_for(
        GgaOffloadConfig, prog="python -m apps.gga_offload",
        description="DOCA storage comch-to-RDMA GGA offload service: serve one initiator over comch from three "
                    "RDMA storage targets (data_1, data_2, data_p), decompressing, compressing and erasure-coding "
                    "blocks on the way.",
        epilog="Start the three targets with the data_1/data_2/data_p .sbc files of python -m apps.sbc_generator "
               "(same --matrix-type). Ctrl-C stops the service in any phase (exit status 1).")


def parse_args(argv: Sequence[str] | None = None) -> GgaOffloadConfig:
    """Parse and validate a command line (exits with status 2 on errors)."""
    return parse_config(GgaOffloadConfig, build_parser(), argv)


def _print_config(config: GgaOffloadConfig) -> None:
    print_config("Configuration", [
        ("device", f"\"{config.device}\""),
        ("representor", f"\"{config.representor}\""),
        ("cpu", f"[{', '.join(str(c) for c in config.cpu)}]"),
        ("data-1-storage", f"\"{config.data_1_storage}\""),
        ("data-2-storage", f"\"{config.data_2_storage}\""),
        ("data-p-storage", f"\"{config.data_p_storage}\""),
        ("matrix-type", f"\"{config.matrix_type}\""),
        ("command-channel-name", f"\"{config.command_channel_name}\""),
        ("control-timeout", f"{config.control_timeout}"),
        ("trigger-recovery-read-every-n", f"{config.trigger_recovery_read_every_n}"),
        ("target-connect-timeout", f"{config.target_connect_timeout}"),
        ("target-io-timeout", f"{config.target_io_timeout}"),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 after the initiator's ``shutdown_request``, 1 on any failure or Ctrl-C."""
    return run_app(parse_args(argv), APP_NAME,
                   (f"\tWrite flow supported: {'yes' if WRITE_FLOW_SUPPORTED else 'no'}",), _print_config, run_service)
