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

Modules: ``cli`` (parser, ``main``), ``config`` (flags), ``control`` (control phase and lifetime),
``worker`` (one thread per core: comch side and loop), ``transaction`` (the per-transaction state
machine, pure logic), ``targets`` (RDMA to the three targets, degraded mode), ``engines`` (EC,
LZ4 decompress, DMA), ``planning`` (request checks, recovery schedule), ``health``. See
``docs/gga-offload.md`` for usage and the differences from the reference.
"""

from __future__ import annotations

from apps.common.runtime.signals import abort_on_signals

from .cli import APP_NAME, WRITE_FLOW_SUPPORTED, build_parser, main, parse_args
from .config import GgaOffloadConfig
from .control import GgaService, run_service
from .planning import RecoverySchedule, check_initiator_request
from .worker import Worker

__all__ = ["APP_NAME", "build_parser", "parse_args", "main", "run_service", "GgaService", "GgaOffloadConfig", "Worker",
           "RecoverySchedule", "check_initiator_request", "abort_on_signals", "WRITE_FLOW_SUPPORTED"]
