"""End-to-end harness for the zero-copy bridge: one target process, the bridge process, and a
small test initiator in the test process.

* :class:`Deployment` starts ``python -m apps.storage_target`` on a raw file of plain data
  and ``python -m apps.zero_copy`` in front of it.
* :class:`ZeroCopyInitiator` is the gga harness's :class:`~tests.gga_offload.harness.TestInitiator`
  with the initiator's real region permissions (the target must reach the region through the
  bridge's RDMA re-export, so it needs ``RDMA_READ | RDMA_WRITE``, as the reference initiator
  sets them).

Every wait is bounded by :data:`DEADLINE`; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

from doca_py.types import AccessFlag as A

from apps.storage.wire.control import MessageType
from tests import deadlines
from tests.gga_offload.harness import DEADLINE, DPU, HOST, Proc, TestInitiator, interrupt, plain_content

__all__ = ["DEADLINE", "DPU", "HOST", "Proc", "Deployment", "ZeroCopyInitiator", "interrupt", "plain_content",
           "REGION_PERMISSIONS", "write_plain"]

REGION_PERMISSIONS = A.LOCAL_READ_WRITE | A.PCI_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE
M = MessageType


def write_plain(tmp: Path, blocks: int, block_size: int) -> tuple[Path, bytes]:
    """A raw content file of *blocks* distinct blocks; its path and bytes."""
    data = plain_content(blocks, block_size)
    path = tmp / "plain.bin"
    path.write_bytes(data)
    return path, data


class Deployment:
    """One target holding *content* (raw, ``block_size × blocks``) and the bridge in front of it."""

    def __init__(self, content: Path, block_size: int, *, control_timeout: int | None = None,
                 cpus: Sequence[int] = (0,), target_args: Sequence[str] = ()) -> None:
        self.name = f"zc-test-{uuid.uuid4().hex[:12]}"
        # the bridge's --control-timeout: 5 s on a quiet machine, more under load (tests/deadlines.py)
        self.control_timeout = deadlines.product_timeout(5) if control_timeout is None else control_timeout
        self.deadline = max(DEADLINE, deadlines.bound(self.control_timeout, starts=1))
        """A wait of the tests that may include the bridge's time-outs (`tests.deadlines.bound`)."""
        blocks = content.stat().st_size // block_size
        self.bridge: Proc | None = None
        self.target = Proc("apps.storage_target", "-d", DPU, "--listen-address", "127.0.0.1", "--listen-port", "0",
                           *[f"--cpu={c}" for c in cpus], "--binary-content", str(content), "--block-size",
                           str(block_size), "--block-count", str(blocks), *target_args)
        try:
            self.port = int(self.target.wait_for(lambda s: s.startswith("Listening on port "),
                                                 "listening line").split()[-1])
            self.bridge = Proc("apps.zero_copy", "-d", DPU, "-r", HOST, *[f"--cpu={c}" for c in cpus],
                               "--storage-server", f"127.0.0.1:{self.port}", "--command-channel-name", self.name,
                               "--control-timeout", str(self.control_timeout))
        except BaseException:
            self.kill()
            raise

    @property
    def svc(self) -> Proc:
        assert self.bridge is not None
        return self.bridge

    def kill(self) -> None:
        for p in ([self.bridge] if self.bridge else []) + [self.target]:
            p.kill()


class ZeroCopyInitiator(TestInitiator):
    """The test initiator, exporting its region with the reference initiator's permissions."""

    __test__ = False

    region_permissions = REGION_PERMISSIONS
    peer = "bridge"
