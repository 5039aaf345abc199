"""The initiator's command line: its parser (``--help``, man page), Ctrl-C handling and ``main``."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager

from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config, run_main, setup_logging
from apps.common.runtime.signals import abort_on_signals

from .config import InitiatorAppConfig
from .control import Initiator

__all__ = ["build_parser", "parse_args", "abort_on_sigint", "main"]


def build_parser() -> DocaArgumentParser:
    """The argparse parser of the initiator (also used for ``--help`` and man pages)."""
    return build_parser_for(
        InitiatorAppConfig, prog="python -m apps.initiator",
        description="DOCA storage initiator: drive a storage service over comch (control messages, then io "
                    "messages on per-worker producer/consumer pairs) and report throughput, latency and data "
                    "validity.",
        epilog="Execution strategies: read_throughput_test, write_throughput_test, read_only_data_validity_test "
               "(needs --storage-plain-content), read_write_data_validity_test. Unlike File Compression's and "
               "Secure Channel's clients, the initiator does not wait for ever for its service: with none, it "
               "fails after --control-timeout seconds. Ctrl-C stops the run in any phase. Exit status 0 when "
               "the run passed, 1 when it failed or was stopped, 2 on a usage error (a bad flag or -j file).")


def parse_args(argv: Sequence[str] | None = None) -> InitiatorAppConfig:
    """Parse and validate a command line (exits with status 2 on errors)."""
    return parse_config(InitiatorAppConfig, build_parser(), argv)


def abort_on_sigint(abort: threading.Event) -> AbstractContextManager[threading.Event]:
    """Make the first ``SIGINT`` (and ``SIGTERM``) set *abort*; a second ``SIGINT`` raises
    ``KeyboardInterrupt`` as usual. Only in the main thread; handlers restored on exit."""
    return abort_on_signals(abort, announce="Aborted: User requested abort\n", second_interrupt_raises=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 when the test passed, 1 on any failure."""
    config = parse_args(argv)
    setup_logging(config, stream=sys.stderr if config.output_format == "json" else None)
    abort = threading.Event()

    def run() -> int:
        with abort_on_sigint(abort):
            return Initiator(config, abort=abort).run()

    return run_main(run)
