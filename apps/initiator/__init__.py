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

Modules: `cli` (parser, Ctrl-C, ``main``), `config` (the flags), `control` (the control
phase and the run), `worker` (the per-core transaction engine), `plan`, `metrics`, `report`.
"""

from __future__ import annotations

from .cli import abort_on_sigint, build_parser, main, parse_args
from .config import InitiatorAppConfig, InitiatorConfig
from .control import ABORT_BUDGET, APP_NAME, Initiator

__all__ = ["APP_NAME", "ABORT_BUDGET", "Initiator", "InitiatorConfig", "InitiatorAppConfig",
           "build_parser", "parse_args", "abort_on_sigint", "main"]
