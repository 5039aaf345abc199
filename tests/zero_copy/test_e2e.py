"""End to end: ``apps.storage_target`` on plain data, ``apps.zero_copy`` in front of it, and a test
initiator in this process that sends well-formed and malformed io messages."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode
from doca_py.types import AccessFlag as A

from apps.storage.wire.control import StorageDetails
from apps.common.errors import ControlRequestError
from apps.storage.wire.io_message import IoMessage, IoMessageType

from tests import deadlines
from tests.gga_offload.harness import end_after_a_failed_init, end_session, write_four_blocks

from .harness import DPU, HOST, Deployment, Proc, ZeroCopyInitiator, interrupt, write_plain

pytestmark = pytest.mark.multiprocess

B = 1024
BLOCKS = 16
R, W = IoMessageType.READ, IoMessageType.WRITE


@pytest.fixture(scope="module")
def content(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    return write_plain(tmp_path_factory.mktemp("zc"), BLOCKS, B)


def test_reads_writes_and_malformed_messages_on_two_workers(content: tuple[Path, bytes]) -> None:
    """Two cores: bridge worker *i* pairs with the initiator's *i*-th consumer and target
    context *i*; the test initiator spreads its messages over both."""
    path, plain = content
    dep = Deployment(path, B, cpus=(0, 1), target_args=("--log-level", "debug"))
    with ZeroCopyInitiator.session(dep) as ini:
        details = ini.setup(transactions=4, cores=2)
        assert details == StorageDetails(BLOCKS * B, B)  # the target's geometry, not doubled

        # reads, each block into another place of the region: byte exact
        ini.region[:] = bytes(len(ini.region))
        res = ini.run([IoMessage(R, i, 0, B, (BLOCKS - 1 - i) * B, i * B) for i in range(BLOCKS)])
        assert [(r.type, r.result, r.user_data) for r in res] == [(0, 0, i) for i in range(BLOCKS)]
        for i in range(BLOCKS):
            assert bytes(ini.region[(BLOCKS - 1 - i) * B:(BLOCKS - i) * B]) == plain[i * B:(i + 1) * B]
        # a multi-block IO and an unaligned one (the zero-copy path has no notion of blocks)
        ini.region[:] = bytes(len(ini.region))
        r1, r2 = ini.run([IoMessage(R, 40, 0, 3 * B, 0, 5 * B), IoMessage(R, 41, 0, 100, 5 * B + 7, 3)])
        assert (r1.result, r1.io_size, r1.requester_offset, r1.storage_offset) == (0, 3 * B, 0, 5 * B)
        assert r2.result == 0
        assert bytes(ini.region[:3 * B]) == plain[5 * B:8 * B]
        assert bytes(ini.region[5 * B + 7:5 * B + 107]) == plain[3:103]

        # malformed requests: each answered with an error by the bridge; nothing reaches the target
        bad = [
            IoMessage(0, 1, 0, B, 0, 0),                         # type result
            IoMessage(7, 2, 0, B, 0, 0),                         # unknown type
            IoMessage(R, 3, 0, 0, 0, 0),                         # nothing to move
            IoMessage(R, 4, 0, B, 0, BLOCKS * B),                # past the storage
            IoMessage(R, 5, 0, 2 * B, 0, (BLOCKS - 1) * B),      # reaches past the storage
            IoMessage(R, 6, 0, B, BLOCKS * B - 10, 0),           # past the initiator's region
            IoMessage(W, 7, 0, B, 2**64 - B, 0),                 # absurd requester offset
            IoMessage(R, 8, 0, B, 0, 2**64 - B),                 # absurd storage offset
            IoMessage(W, 9, 0, 2**32 - 1, 0, 0),                 # absurd size
        ]
        results = ini.run(bad)
        assert [x.user_data for x in results] == list(range(1, 10))
        assert all(x.type == 0 for x in results), results
        assert [x.result for x in results[:2]] == [ErrorCode.NOT_SUPPORTED] * 2
        assert {x.result for x in results[2:]} == {ErrorCode.INVALID_VALUE}
        # the echoed fields are the request's
        assert (results[5].io_size, results[5].requester_offset) == (B, BLOCKS * B - 10)
        (short,) = ini.run([IoMessage(R, 11, 0, B, 0, 0).pack()[:20]])  # a 20-byte message
        assert short.result == ErrorCode.INVALID_VALUE and short.user_data == 11
        (ok,) = ini.run([IoMessage(R, 12, 0, B, 0, 3 * B)])
        assert ok.result == 0 and bytes(ini.region[:B]) == plain[3 * B:4 * B]

        # writes from the initiator's memory (the target RDMA-reads it), then everything read back
        new = plain[::-1][:4 * B]
        expect = write_four_blocks(ini, plain, new)
        ini.region[:] = bytes(len(ini.region))
        back = ini.run([IoMessage(R, 30 + i, 0, B, i * B, i * B) for i in range(BLOCKS)])
        assert [x.result for x in back] == [0] * BLOCKS
        assert bytes(ini.region) == bytes(expect)

        end_session(ini, dep.svc)
        out = dep.svc.stdout
        forwarded = BLOCKS + 2 + 1 + 3 + BLOCKS  # answered by the target, not by the bridge
        counts = [int(line.split(":")[1]) for line in out.splitlines() if line.startswith("| Operation count:")]
        assert len(counts) == 2 and sum(counts) == forwarded, out
        assert "| Core: 0" in out and "| Core: 1" in out and "Recovery count" not in out
        assert dep.target.wait() == 0, dep.target.output
        # What the target saw (§11.4.4): one message id counter from 0, the initiator's correlation ids,
        # per core io_data then io_control, T doubled.
        seen = [line.split("] received ", 1)[1] for line in dep.target.stdout.splitlines() if "] received " in line]
        assert seen == ["query_storage_request(mid=0, cid=0)", "init_storage_request(mid=1, cid=1)",
                        *[f"create_rdma_connection_request(mid={m}, cid=1)" for m in (2, 3, 4, 5)],
                        "start_storage_request(mid=6, cid=2)", "stop_storage_request(mid=7, cid=3)",
                        "shutdown_request(mid=8, cid=4)"], dep.target.stdout
        assert "initialised 2 worker(s) with 8 transactions each" in dep.target.stdout


def test_control_phase_errors_are_answered_positionally(content: tuple[Path, bytes]) -> None:
    """An initiator region exported without RDMA permissions cannot be re-exported for the
    target: init fails with NOT_PERMITTED and consumes its position; so does a start without
    workers and a request out of order; the session still ends."""
    path, _ = content
    dep = Deployment(path, B)
    with ZeroCopyInitiator.session(dep) as ini:
        ini.region_permissions = A.LOCAL_READ_WRITE | A.PCI_READ_WRITE
        assert ini.query() == StorageDetails(BLOCKS * B, B)
        with pytest.raises(ControlRequestError, match="Failed to re-export host mmap for rdma") as err:
            ini.init(2)
        assert err.value.code == ErrorCode.NOT_PERMITTED
        end_after_a_failed_init(ini, dep.svc)


def test_the_target_dropping_an_idle_connection_is_reconnected(content: tuple[Path, bytes]) -> None:
    """The target drops a client that sends nothing within --first-message-timeout; the bridge,
    which has sent nothing yet (it waits for the initiator), connects again."""
    path, plain = content
    # short, so the idle bridge is dropped soon; long enough that the session that follows (a loaded
    # machine included) sends its first message within it
    first = deadlines.product_timeout(1)
    dep = Deployment(path, B, target_args=("--first-message-timeout", str(first)))
    try:
        dep.target.wait_for(lambda s: "dropping control client" in s, "the target dropping the idle bridge",
                            deadlines.bound(first, starts=1))
        dep.svc.wait_for(lambda s: "reconnecting" in s, "the bridge reconnecting")
        with ZeroCopyInitiator.session(dep) as ini:
            ini.setup(transactions=2)
            (r,) = ini.run([IoMessage(R, 0, 0, B, 0, 2 * B)])
            assert r.result == 0 and bytes(ini.region[:B]) == plain[2 * B:3 * B]
            end_session(ini, dep.svc)
    finally:
        dep.kill()


def test_sigint_while_connecting_to_the_target() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there: the bridge keeps retrying until Ctrl-C
    svc = Proc("apps.zero_copy", "-d", DPU, "-r", HOST, "--cpu", "0", "--storage-server", f"127.0.0.1:{port}",
               "--command-channel-name", f"unused-{uuid.uuid4().hex}")
    try:
        svc.wait_for(lambda line: "connecting to the storage target" in line, "the connecting line")
        interrupt(svc)
        assert svc.p.returncode == 1
        assert "Aborted: User requested abort" in svc.stderr, svc.output
    finally:
        svc.kill()


def test_sigint_while_waiting_for_the_initiator() -> None:
    with socket.socket() as listener:  # a "target" that accepts and stays silent
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        svc = Proc("apps.zero_copy", "-d", DPU, "-r", HOST, "--cpu", "0", "--storage-server", f"127.0.0.1:{port}",
                   "--command-channel-name", f"unused-{uuid.uuid4().hex}")
        try:
            svc.wait_for(lambda line: line.startswith("Connected to the storage target"), "the connected line")
            interrupt(svc)
            assert svc.p.returncode == 1
            assert "Aborted: User requested abort" in svc.stderr, svc.output
        finally:
            svc.kill()
