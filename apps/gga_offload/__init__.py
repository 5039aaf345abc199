"""``python -m apps.gga_offload``: the comch-to-RDMA GGA offload service
(``doca_storage_comch_to_rdma_gga_offload``, storage-apps-spec §1.1, §2.2, §3.7, §5.2, §8.2).

Runs on the BlueField Arm (or anywhere on the emulated backend). It is a comch **server** for
one initiator on the host and a TCP/RDMA **client** of three storage targets — data_1,
data_2 (the two halves of every compressed block) and data_p (their erasure-code parity).
The initiator sees a storage of twice the targets' capacity with blocks twice their block
size; the service does the "GGA" work per block:

* read: fetch both halves with RDMA (or, every ``--trigger-recovery-read-every-n``-th block,
  one half and the parity followed by an EC recover), then LZ4-decompress straight into the
  initiator's memory;
* write: DMA the block from the initiator, LZ4-compress it, compute the parity with an EC
  create task, and have the three targets pull their halves.

See ``docs/gga-offload.md`` for usage and the differences from the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.storage.runtime.app_main import print_config, run_app
from apps.storage.cli.argp import DocaArgumentParser, build_parser_for, parse_config
from apps.storage.runtime.signals import abort_on_signals
from apps.storage.cli.config import GgaOffloadConfig

from .planning import RecoverySchedule, check_initiator_request
from .service import GgaService, run_service
from .worker import Worker

__all__ = ["APP_NAME", "build_parser", "parse_args", "main", "run_service", "GgaService", "Worker",
           "RecoverySchedule", "check_initiator_request", "abort_on_signals", "WRITE_FLOW_SUPPORTED"]

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
    """Parse and validate a command line (exits with status 1 on errors)."""
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
        ("target-io-timeout", f"{config.target_io_timeout}"),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 after the initiator's ``shutdown_request``, 1 on any failure or Ctrl-C."""
    return run_app(parse_args(argv), APP_NAME,
                   (f"\tWrite flow supported: {'yes' if WRITE_FLOW_SUPPORTED else 'no'}",), _print_config, run_service)
