"""``python -m apps.initiator``: the storage initiator (``doca_storage_initiator_comch``).

The Python counterpart of the reference initiator (storage-apps-spec §2.1, §3.7, §4.2,
§5.1, §7, §8.1). It connects as a comch **client** to a storage service (the gga offload
or zero-copy bridge) on ``--command-channel-name``, learns the storage geometry, exports
its local io region over PCI, and runs one of four execution strategies with one worker
thread per ``--cpu``: each worker has a comch producer (requests) and consumer
(responses) and keeps ``T_w`` transactions in flight over its own FIFO pools of local and
storage addresses. It prints the reference's statistics block (§7.3), latency
percentiles, or a fio-style JSON document (``--output-format json``).

Differences from the reference are listed in ``docs/initiator.md``; the main ones: a
response whose ``result`` is an error is a failed IO, responses are checked against their
requests, Ctrl-C works in every phase (the program ends within about 2 s), and a service
that goes away ends the run with an error instead of a hang.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager

from apps.storage.cli.argp import DocaArgumentParser, build_parser_for, parse_config, run_main, setup_logging
from apps.storage.runtime.signals import abort_on_signals

from .app import ABORT_BUDGET, APP_NAME, RESPONSE_TIMEOUT, Initiator
from .config import InitiatorAppConfig

__all__ = ["APP_NAME", "ABORT_BUDGET", "RESPONSE_TIMEOUT", "Initiator", "InitiatorAppConfig", "build_parser",
           "parse_args", "abort_on_sigint", "main"]


def build_parser() -> DocaArgumentParser:
    """The argparse parser of the initiator (also used for ``--help`` and man pages)."""
    return build_parser_for(
        InitiatorAppConfig, prog="python -m apps.initiator",
        description="DOCA storage initiator: drive a storage service over comch (control messages, then io "
                    "messages on per-worker producer/consumer pairs) and report throughput, latency and data "
                    "validity.",
        epilog="Execution strategies: read_throughput_test, write_throughput_test, read_only_data_validity_test "
               "(needs --storage-plain-content), read_write_data_validity_test. Ctrl-C stops the run in any "
               "phase (exit status 1).")


def parse_args(argv: Sequence[str] | None = None) -> InitiatorAppConfig:
    """Parse and validate a command line (exits with status 1 on errors)."""
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
