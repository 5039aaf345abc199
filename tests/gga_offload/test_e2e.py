"""End to end: three ``apps.storage_target`` processes loaded from ``apps.sbc_generator`` files,
``apps.gga_offload`` in front of them, and a test initiator in this process."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode

from apps.storage.wire.io_message import IoMessage, IoMessageType
from tests import deadlines

from .harness import DEADLINE, Deployment, Proc, TestInitiator, end_after_a_failed_init, end_session, interrupt, \
    make_sbc_files, plain_content, write_four_blocks

pytestmark = pytest.mark.multiprocess

B = 1024
BLOCKS = 16
R, W = IoMessageType.READ, IoMessageType.WRITE


@pytest.fixture(scope="module")
def plain() -> bytes:
    return plain_content(BLOCKS, B)


Files = tuple[str, tuple[Path, Path, Path]]


@pytest.fixture(scope="module")
def sbc_files(tmp_path_factory: pytest.TempPathFactory, plain: bytes) -> Callable[[str], Files]:
    """``matrix type -> (matrix, the three .sbc files)``, generated once per module and type."""
    cache: dict[str, Files] = {}

    def get(matrix: str) -> Files:
        if matrix not in cache:
            cache[matrix] = matrix, make_sbc_files(tmp_path_factory.mktemp(f"sbc-{matrix}"), plain, B, matrix)
        return cache[matrix]

    return get


def _read_all(ini: TestInitiator, first_ud: int = 0) -> list[IoMessage]:
    ini.region[:] = bytes(len(ini.region))
    msgs = [IoMessage(R, first_ud + i, 0, B, (BLOCKS - 1 - i) * B, (BLOCKS - 1 - i) * B) for i in range(BLOCKS)]
    return ini.run(msgs)


def _session(sbc: Files, plain: bytes, every_n: int, service_env: dict[str, str] | None = None) -> None:
    matrix, files = sbc
    dep = Deployment(files, matrix=matrix, every_n=every_n, service_env=service_env)
    with TestInitiator.session(dep) as ini:
        details = ini.setup(transactions=4)
        assert (details.block_size, details.total_size) == (B, BLOCKS * B)  # doubled

        # reads: one block per IO (normal and recovery reads mixed), byte exact
        assert [r.result for r in _read_all(ini)] == [0] * BLOCKS
        assert bytes(ini.region) == plain

        # a multi-block IO: blocks 5..7 into the start of the region
        ini.region[:] = bytes(len(ini.region))
        (r,) = ini.run([IoMessage(R, 100, 0, 3 * B, 0, 5 * B)])
        assert (r.type, r.result, r.user_data, r.io_size) == (0, 0, 100, 3 * B)
        assert bytes(ini.region[:3 * B]) == plain[5 * B:8 * B]

        # malformed requests: each answered with an error, the service keeps serving
        bad = [
            IoMessage(0, 1, 0, B, 0, 0),                         # type result
            IoMessage(7, 2, 0, B, 0, 0),                         # unknown type
            IoMessage(R, 3, 0, B + 1, 0, 0),                     # partial block
            IoMessage(R, 4, 0, 0, 0, 0),                         # no block
            IoMessage(R, 5, 0, 256 * B, 0, 0),                   # > 255 blocks
            IoMessage(R, 6, 0, B, 0, 100),                       # unaligned storage offset
            IoMessage(R, 7, 0, B, 0, BLOCKS * B),                # past the storage
            IoMessage(R, 8, 0, B, BLOCKS * B - 10, 0),           # past the initiator's region
            IoMessage(W, 9, 0, B, 2**64 - B, 0),                 # absurd requester offset
            IoMessage(R, 10, 0, B, 0, 2**64 - B),                # absurd storage offset
        ]
        results = ini.run(bad)
        assert [x.user_data for x in results] == list(range(1, 11))
        assert all(x.type == 0 and x.result != 0 for x in results), results
        assert results[1].result == ErrorCode.NOT_SUPPORTED
        assert {x.result for x in results[2:]} == {ErrorCode.INVALID_VALUE}
        short = IoMessage(R, 11, 0, B, 0, 0).pack()[:20]     # a 20-byte message
        (s,) = ini.run([short])
        assert s.result == ErrorCode.INVALID_VALUE
        assert s.user_data == 11 and s.io_size == 0 and s.storage_offset == 0  # not an earlier message's fields
        (ok,) = ini.run([IoMessage(R, 12, 0, B, 0, 3 * B)])
        assert ok.result == 0 and bytes(ini.region[:B]) == plain[3 * B:4 * B]

        # write 4 blocks (one 2-block IO and two single ones), then read everything back
        new = plain_content(4, B)[::-1]
        expect = write_four_blocks(ini, plain, new)
        assert [x.result for x in _read_all(ini, 30)] == [0] * BLOCKS
        assert bytes(ini.region) == bytes(expect)

        end_session(ini, dep.svc)
        out = dep.svc.stdout
        reads = 2 * BLOCKS + 3 + 1
        assert f"| Recovery count: {reads // every_n}" in out, out
        assert "| Operation count: " in out
        for t in dep.targets:
            assert t.wait() == 0, t.output


@pytest.mark.parametrize(("matrix", "every_n"), [("vandermonde", 2), ("cauchy", 1)])
def test_reads_recovery_malformed_and_write(sbc_files: Callable[[str], Files], plain: bytes, matrix: str,
                                            every_n: int) -> None:
    """Both matrix types; vandermonde recovers every 2nd block, cauchy every block (so
    recover_a and recover_b both run, with real recover matrices)."""
    _session(sbc_files(matrix), plain, every_n)


def test_a_native_bridge_serves_emulated_targets_and_initiator(sbc_files: Callable[[str], Files],
                                                               plain: bytes) -> None:
    """The bridge through the native backend over libdoca — what a BlueField runs — between targets and an
    initiator on this run's backend (emulated in a plain run): the same session, byte exact."""
    from ..libdoca.env import lib_dir

    _session(sbc_files("vandermonde"), plain, 2,
             service_env={"DOCA_PY_IMPL": "native", "DOCA_PY_LIBDIR": str(lib_dir())})


ROLES = ("data_1", "data_2", "data_p")


def _degraded_session(dep: Deployment, plain: bytes, lose: Callable[[], None], role: str) -> None:
    """Reads before and after *lose* (a target dies or stalls) are byte exact; a write is refused;
    the session still ends cleanly and the statistics count the degraded reads."""
    with TestInitiator.session(dep) as ini:
        ini.setup(transactions=4)
        assert [r.result for r in ini.run([IoMessage(R, 0, 0, B, 0, 0)])] == [0]
        lose()
        for first in (100, 200):  # twice: what was in flight when it failed, then steady degraded reads
            assert [r.result for r in _read_all(ini, first)] == [0] * BLOCKS
            assert bytes(ini.region) == plain
        ini.region[:B] = plain[:B]
        (w,) = ini.run([IoMessage(W, 300, 0, B, 0, 2 * B)])
        assert w.result == ErrorCode.NOT_PERMITTED, w
        (r,) = ini.run([IoMessage(R, 301, 0, 2 * B, 0, 2 * B)])  # the refused write changed nothing
        assert r.result == 0 and bytes(ini.region[:2 * B]) == plain[2 * B:4 * B]
        end_session(ini, dep.svc)
        err = dep.svc.output  # the log goes to stdout
        assert f"storage target {role} " in err and "entering degraded mode" in err, dep.svc.output
        assert "write refused: degraded mode" in err, dep.svc.output
        degraded = int(dep.svc.wait_for(lambda s: s.startswith("| Degraded read count: "), "stats").split()[-1])
        assert degraded >= BLOCKS + 2, dep.svc.stdout  # at least the second pass and the last read


@pytest.mark.parametrize("role", ROLES)
def test_a_killed_target_degrades_reads_and_refuses_writes(sbc_files: Callable[[str], Files], plain: bytes,
                                                           role: str) -> None:
    matrix, files = sbc_files("cauchy")
    dep = Deployment(files, matrix=matrix, every_n=3, control_timeout=deadlines.product_timeout(3))
    victim = dep.targets[ROLES.index(role)]
    _degraded_session(dep, plain, victim.kill, role)


def test_a_stalled_target_degrades_reads_after_the_io_deadline(sbc_files: Callable[[str], Files],
                                                               plain: bytes) -> None:
    matrix, files = sbc_files("vandermonde")
    # short, so the stall is found soon; long enough that a loaded machine does not stall a healthy target;
    # the RDMA transport's retry window ends after it, so the stall is found by the IO deadline
    io_timeout = deadlines.product_timeout(1)
    dep = Deployment(files, matrix=matrix, control_timeout=deadlines.product_timeout(3), target_io_timeout=io_timeout,
                     rdma_retry_window=io_timeout + deadlines.product_timeout(3))
    victim = dep.targets[1]
    try:
        _degraded_session(dep, plain, lambda: victim.signal(signal.SIGSTOP), "data_2")
        assert f"did not answer an IO request within {io_timeout} s" in dep.svc.output, dep.svc.output
    finally:
        victim.signal(signal.SIGCONT)
        dep.kill()


def test_sigint_in_the_data_path(sbc_files: Callable[[str], Files]) -> None:
    dep = Deployment(sbc_files("vandermonde")[1])
    with TestInitiator.session(dep) as ini:
        ini.setup(transactions=2)
        assert [r.result for r in ini.run([IoMessage(R, 0, 0, B, 0, 0)])] == [0]
        elapsed = interrupt(dep.svc)
        print(f"SIGINT to exit: {elapsed:.2f} s")
        assert dep.svc.p.returncode == 1
        assert "Aborted: User requested abort" in dep.svc.stderr, dep.svc.output
        assert "| Core: 0" in dep.svc.stdout  # statistics still printed


def test_sigint_while_connecting_to_targets() -> None:
    # Nobody listens on these ports: the service keeps retrying until Ctrl-C.
    import socket
    socks = [socket.socket() for _ in range(3)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    svc = Proc("apps.gga_offload", "-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0",
               "--data-1-storage", f"127.0.0.1:{ports[0]}", "--data-2-storage", f"127.0.0.1:{ports[1]}",
               "--data-p-storage", f"127.0.0.1:{ports[2]}", "--command-channel-name", f"unused-{uuid.uuid4().hex}")
    try:
        svc.wait_for(lambda s: "connecting to storage target data_1" in s, "the connecting line")
        svc.signal(signal.SIGINT)
        assert svc.wait(DEADLINE) == 1
        assert "Aborted: User requested abort" in svc.stderr, svc.output
    finally:
        svc.kill()


def test_control_phase_errors_are_answered_positionally(sbc_files: Callable[[str], Files]) -> None:
    """A failed init is answered (and consumes its position); later phases answer in turn and
    the session still ends cleanly."""
    from apps.storage.wire.control import ErrorPayload, InitStorage, MessageType as M, StorageDetails

    dep = Deployment(sbc_files("vandermonde")[1])
    with TestInitiator.session(dep) as ini:
        q = ini.exchange(M.QUERY_STORAGE_REQUEST)
        assert q.payload == StorageDetails(BLOCKS * B, B)
        e = ini.exchange(M.INIT_STORAGE_REQUEST, InitStorage(4, 2, b"not a blob"))
        assert e.type is M.ERROR_RESPONSE and isinstance(e.payload, ErrorPayload)
        assert e.payload.code == ErrorCode.INVALID_VALUE
        assert "Requested storage to use 2 cores but only 1 are configured" in e.payload.message
        end_after_a_failed_init(ini, dep.svc)


def test_bad_data_is_answered_with_errors(tmp_path: Path, sbc_files: Callable[[str], Files], plain: bytes) -> None:
    """A corrupt LZ4 stream on data_1 and an incompressible write each fail one IO with an
    error response; the engines are restarted and the other IOs still succeed."""
    _, files = sbc_files("vandermonde")
    d1 = bytearray(files[0].read_bytes())
    h = B // 2
    pos = 16 + 2 * h + 8                 # block 2's first LZ4 size word (after the 8-byte header)
    d1[pos:pos + 4] = (0x7FFFFF00).to_bytes(4, "little")
    bad_d1 = tmp_path / "d1-corrupt.sbc"
    bad_d1.write_bytes(bytes(d1))
    dep = Deployment((bad_d1, files[1], files[2]))
    with TestInitiator.session(dep) as ini:
        ini.setup(transactions=4)
        res = ini.run([IoMessage(R, i, 0, B, i * B, i * B) for i in range(4)])
        assert [r.result != 0 for r in res] == [False, False, True, False], res
        for i in (0, 1, 3):
            assert bytes(ini.region[i * B:(i + 1) * B]) == plain[i * B:(i + 1) * B]
        # incompressible data cannot be stored (C + 12 > B): the write fails, nothing else does
        import os
        ini.region[:B] = os.urandom(B)
        (w,) = ini.run([IoMessage(W, 7, 0, B, 0, 5 * B)])
        assert w.result != 0
        again = ini.run([IoMessage(R, 8 + i, 0, B, i * B, (4 + i) * B) for i in range(4)])
        assert [r.result for r in again] == [0, 0, 0, 0]
        assert bytes(ini.region[:4 * B]) == plain[4 * B:8 * B]
        end_session(ini, dep.svc)


def test_two_workers(sbc_files: Callable[[str], Files], plain: bytes) -> None:
    """Two cores: two worker threads sharing the local region, each paired with one of the
    initiator's consumers; reads (with recovery) and a write through both."""
    dep = Deployment(sbc_files("cauchy")[1], matrix="cauchy", every_n=3, cpus=(0, 1))
    with TestInitiator.session(dep) as ini:
        ini.setup(transactions=3, cores=2)
        assert [r.result for r in _read_all(ini)] == [0] * BLOCKS
        assert bytes(ini.region) == plain
        new = plain_content(2, B)[::-1]
        ini.region[:2 * B] = new
        assert [r.result for r in ini.run([IoMessage(W, 50, 0, B, 0, 4 * B), IoMessage(W, 51, 0, B, B, 9 * B)])] \
            == [0, 0]
        ini.region[:] = bytes(len(ini.region))
        back = ini.run([IoMessage(R, 60, 0, B, 0, 4 * B), IoMessage(R, 61, 0, B, B, 9 * B)])
        assert [r.result for r in back] == [0, 0]
        assert bytes(ini.region[:2 * B]) == new
        end_session(ini, dep.svc)
        assert dep.svc.stdout.count("| Core: ") == 2
