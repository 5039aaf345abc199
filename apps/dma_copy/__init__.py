"""``python -m apps.dma_copy``: NVIDIA's DMA Copy application (``doca_dma_copy``).

Copies a file between the host and the DPU: the two sides agree over comch on the direction
and the file size, the host exports the memory of the file (or of room for it) over PCI, and
the DPU copies it with one DOCA DMA memcpy task and reports the outcome. Wire-compatible with
the C application of ``NVIDIA-DOCA/doca-samples`` (``applications/dma_copy``); the differences
are listed in ``docs/dma-copy.md``.

Modules: `cli` (parser, ``main``), `config` (the flags), `wire` (the messages), `negotiation`
(each side's message handling, no DOCA objects), `transfer` (the export, the DMA task, the file
I/O), `control` (the two flows); shared through `apps.common`: `comch_app` (the device flags, the
main skeleton) and `comch_channel` (the comch connection).
"""

from __future__ import annotations

from .cli import APP_NAME, build_parser, main, parse_args
from .config import DmaCopyConfig
from .control import SERVER_NAME
from .negotiation import DpuNegotiation, HostNegotiation, State

__all__ = ["APP_NAME", "SERVER_NAME", "DmaCopyConfig", "DpuNegotiation", "HostNegotiation", "State", "build_parser",
           "parse_args", "main"]
