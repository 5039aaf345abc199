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

Modules: `cli` (parser, ``main``), `config` (``ZeroCopyConfig``), `control` (the control
phase), `worker` (the per-core data path), `forwarding` (the checks of forwarded messages).
"""

from __future__ import annotations

from apps.common.runtime.signals import abort_on_signals

from .cli import APP_NAME, build_parser, main, parse_args
from .config import ZeroCopyConfig
from .control import ZeroCopyService, run_service
from .forwarding import RequestProblem, check_request, finish_response_in_place
from .worker import Worker

__all__ = ["APP_NAME", "build_parser", "parse_args", "main", "run_service", "ZeroCopyService", "ZeroCopyConfig",
           "Worker", "RequestProblem", "check_request", "finish_response_in_place", "abort_on_signals"]
