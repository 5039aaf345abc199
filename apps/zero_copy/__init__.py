"""``python -m apps.zero_copy``: the comch-to-RDMA zero-copy bridge
(``doca_storage_comch_to_rdma_zero_copy``, storage-apps-spec §1.2, §2.3, §8.4, §11).

Runs on the BlueField Arm (or anywhere on the emulated backend). It is a comch **server** for
one initiator on the host and a TCP/RDMA **client** of one storage target
(``--storage-server``). The DPU does not touch the data: the initiator's IO region, which
the host exports for PCI, is imported on the DPU and **re-exported for RDMA**, and that blob
is the only memory the target is told about, so the target's RDMA reads and writes land in
host memory directly. The bridge forwards the 64-byte io messages: initiator → target over
a comch consumer and an RDMA send, target → initiator over an RDMA receive and a comch
producer.

The initiator sees the target's geometry unchanged (capacity and block size are not
doubled), so the target must hold **plain** data: a raw file of ``block_size ×
block_count`` bytes, or an ``.sbc`` whose content is plain (not the gga generator's halves).

See ``docs/zero-copy.md`` for usage and the differences from the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.storage.runtime.app_main import print_config, run_app
from apps.storage.cli.argp import DocaArgumentParser, build_parser_for, parse_config
from apps.storage.runtime.signals import abort_on_signals
from apps.storage.cli.config import ZeroCopyConfig

from .forwarding import RequestProblem, check_request, finish_response_in_place
from .service import ZeroCopyService, run_service
from .worker import Worker

__all__ = ["APP_NAME", "build_parser", "parse_args", "main", "run_service", "ZeroCopyService", "Worker",
           "RequestProblem", "check_request", "finish_response_in_place", "abort_on_signals"]

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
    """Parse and validate a command line (exits with status 1 on errors)."""
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
