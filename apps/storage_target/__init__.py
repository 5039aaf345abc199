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

Modules: `cli` (parser, ``main``), `config` (``TargetConfig``), `control` (the session and
the control port), `worker` (the per-core data path).
"""

from __future__ import annotations

from apps.common.runtime.signals import abort_on_signals

from .cli import APP_NAME, build_parser, main, parse_args
from .config import TargetConfig
from .control import LISTENING_PREFIX, TargetSession, run_target
from .worker import StorageRegion, Worker

__all__ = ["APP_NAME", "LISTENING_PREFIX", "build_parser", "parse_args", "main", "run_target", "TargetSession",
           "TargetConfig", "Worker", "StorageRegion", "abort_on_signals"]
