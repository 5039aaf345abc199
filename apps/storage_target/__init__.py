"""``python -m apps.storage_target``: the RDMA storage target (``doca_storage_target_rdma``).

The Python counterpart of the reference target (storage-apps-spec §2.4, §3.7, §4.3, §5.3,
§8.3). It holds ``block_size × block_count`` bytes of storage, initialised from an
``.sbc`` file or a raw file (``--binary-content``), listens on ``--listen-port`` for one
client (a storage service, or any requester speaking the control protocol), and serves
its io messages with one-sided RDMA: a ``read`` is an RDMA write from the storage into the
requester's exported memory, a ``write`` an RDMA read from it.

The port it listens on is printed on stdout as ``Listening on port <n>`` (handy with
``--listen-port 0``); ``--listen-address`` picks the interface (default ``0.0.0.0``, as the
reference). Differences from the reference (see ``docs/storage-target.md``): a session
starts only with a ``query_storage_request`` as the first message, so stray clients are
dropped and the target keeps listening (``--first-message-timeout`` bounds a silent one);
every io message is bounds-checked and refused with ``INVALID_VALUE`` when out of range,
``context_idx`` is checked exactly, a client that disconnects ends the run (exit status 1)
instead of hanging, and Ctrl-C stops the target promptly in every phase. The control
protocol has no authentication, as in the reference.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from apps.storage.cli.argp import DocaArgumentParser, build_parser_for, parse_config, run_main, setup_logging, \
    version_text
from apps.storage.runtime.signals import abort_on_signals
from apps.storage.cli.config import TargetConfig

from .server import LISTENING_PREFIX, TargetSession, run_target
from .worker import StorageRegion, Worker

__all__ = ["APP_NAME", "LISTENING_PREFIX", "build_parser", "parse_args", "main", "run_target", "TargetSession",
           "Worker", "StorageRegion", "abort_on_signals"]

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
    """Parse and validate a command line (exits with status 1 on errors)."""
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
