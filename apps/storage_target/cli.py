"""The target's command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config, run_main, setup_logging, \
    version_text
from apps.common.runtime.signals import abort_on_signals

from .config import TargetConfig
from .control import LISTENING_PREFIX, run_target

__all__ = ["APP_NAME", "build_parser", "parse_args", "main"]

APP_NAME = "doca_storage_target_rdma"


def build_parser() -> DocaArgumentParser:
    """The argparse parser of the target (also used for ``--help`` and man pages)."""
    return build_parser_for(
        TargetConfig, prog="python -m apps.storage_target",
        description="DOCA storage target: serve block storage to one requester over RDMA (read and write "
                    "half blocks with one-sided RDMA, io messages over RDMA send/receive).",
        epilog=f"The TCP port is reported on stdout as '{LISTENING_PREFIX}<n>'. The control protocol has no "
               "authentication: restrict who reaches the port (--listen-address, a firewall, a network namespace). "
               "Ctrl-C stops the target in any phase (exit status 1).")


def parse_args(argv: Sequence[str] | None = None) -> TargetConfig:
    """Parse and validate a command line (exits with status 2 on errors)."""
    return parse_config(TargetConfig, build_parser(), argv)


def _print(text: str) -> None:
    print(text, flush=True)


def _print_config(config: TargetConfig) -> None:
    _print("Configuration: {")
    _print(f"\tdevice : \"{config.device}\",")
    _print(f"\tcpu : [{', '.join(str(c) for c in config.cpu)}],")
    _print(f"\tlisten-address : \"{config.listen_address}\",")
    _print(f"\tlisten-port : {config.listen_port},")
    _print(f"\tfirst-message-timeout : {config.first_message_timeout},")
    _print(f"\tcontrol-timeout : {config.control_timeout},")
    _print(f"\tidle-timeout : {config.idle_timeout},")
    _print(f"\tbinary-content : \"{config.binary_content or ''}\",")
    _print(f"\tblock-count : {config.block_count},")
    _print(f"\tblock-size : {config.block_size}")
    _print("}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 after a session ended with ``shutdown_request``, 1 on any failure,
    a disconnected client or Ctrl-C."""
    config = parse_args(argv)
    setup_logging(config)
    abort = threading.Event()

    def run() -> int:
        _print(version_text(APP_NAME))
        _print_config(config)
        return run_target(config, abort, _print)

    with abort_on_signals(abort):
        return run_main(run)
