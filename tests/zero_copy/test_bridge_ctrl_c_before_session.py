"""A bridge stopped before its initiator came (Ctrl-C in the control phase) ends its storage
targets too, for both bridges: a target with no session would otherwise keep listening, since
to it a client that connects and closes without a request is a port scanner."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from apps.topology import DPU_DEV, HOST_PF_REP, Proc, environment, topology
from tests import deadlines

pytestmark = pytest.mark.multiprocess
WAITING = "waiting for an initiator"
BLOCK = 4096


def _ends(proc: Proc) -> int:
    # A hang bound (tests/deadlines.py): the process ends on its own once its peer has gone.
    rc = proc.popen.wait(deadlines.bound(starts=2))
    if proc._pump is not None:
        proc._pump.join(deadlines.bound(starts=1))
    assert not any("Traceback" in line for line in proc.lines), proc.tail(40)
    return rc


@pytest.mark.parametrize("bridge", ["zero_copy", "gga_offload"])
def test_targets_end_when_the_bridge_is_stopped_waiting_for_its_initiator(tmp_path: Path, bridge: str) -> None:
    roles = ["storage"] if bridge == "zero_copy" else ["data_1", "data_2", "data_p"]
    with topology(tmp_path, environment()) as topo:
        targets, ports = [], []
        for role in roles:
            content = tmp_path / f"{role}.bin"
            content.write_bytes(bytes(range(256)) * (4 * BLOCK // 256))
            t = topo.spawn(f"target-{role}", "apps.storage_target",
                           ["-d", DPU_DEV, "--cpu", "0", "--listen-address", "127.0.0.1", "--listen-port", "0",
                            "--binary-content", str(content), "--block-size", str(BLOCK), "--block-count", "4"],
                           marker="Listening on port")
            ports.append(int(t.wait_marker("Listening on port", deadlines.bound(starts=1)).split()[-1]))
            targets.append(t)
        if bridge == "zero_copy":
            where = ["--storage-server", f"127.0.0.1:{ports[0]}"]
        else:
            where = [a for flag, port in zip(("--data-1-storage", "--data-2-storage", "--data-p-storage"), ports)
                     for a in (flag, f"127.0.0.1:{port}")]
        b = topo.spawn(bridge, f"apps.{bridge}", ["-d", DPU_DEV, "-r", HOST_PF_REP, "--cpu", "0",
                                                  "--command-channel-name", f"ctrl-c-{bridge}", *where],
                       marker=WAITING)
        b.wait_marker(WAITING, deadlines.bound(starts=1))
        b.popen.send_signal(signal.SIGINT)
        assert _ends(b) == 1
        assert any(line.startswith("EXCEPTION: Aborted: User requested abort") for line in b.lines), b.tail()
        for t in targets:
            assert _ends(t) == 1, t.tail()
            assert any(re.match(r"EXCEPTION: The requester closed the control connection", line)
                       for line in t.lines), t.tail()
            assert not any("still listening" in line for line in t.lines), t.tail()
