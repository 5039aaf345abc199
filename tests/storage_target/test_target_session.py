"""The storage target end to end (spec §3.7, §4.3, §5.3, §8.3): a target child process, a
requester in the test process, RDMA over the emulated backend."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.storage.wire.control import MessageType as M
from apps.storage.wire.control import InitStorage, RdmaConnection, RdmaConnectionRole
from apps.storage.wire.io_message import IoMessage, IoMessageType
from apps.storage.wire.sbc import write_sbc
from doca_py.errors import ErrorCode

from ..rdma.helpers import backing
from .client import Requester, TargetProcess

pytestmark = pytest.mark.multiprocess
R = RdmaConnectionRole
READ, WRITE = IoMessageType.READ, IoMessageType.WRITE
OK, INVALID = int(ErrorCode.SUCCESS), int(ErrorCode.INVALID_VALUE)


@pytest.fixture
def cleanup() -> Iterator[list[TargetProcess | Requester]]:
    things: list[TargetProcess | Requester] = []
    yield things
    for t in reversed(things):
        if isinstance(t, Requester):
            t.close()
        else:
            t.kill()


def _ops(stdout: str) -> dict[int, int]:
    """Core -> operation count from the statistics blocks."""
    cores = [int(c) for c in re.findall(r"^\| Core: (\d+)$", stdout, re.M)]
    ops = [int(c) for c in re.findall(r"^\| Operation count: (\d+)$", stdout, re.M)]
    assert len(cores) == len(ops)
    return dict(zip(cores, ops))


def _ios(kind: IoMessageType, pairs: list[tuple[int, int]], size: int, first_ud: int = 0) -> list[IoMessage]:
    return [IoMessage(kind, first_ud + i, 0, size, req, sto) for i, (sto, req) in enumerate(pairs)]


def test_sbc_session_reads_writes_and_refusals(tmp_path: Path,
                                               cleanup: list[TargetProcess | Requester]) -> None:
    h, blocks = 512, 32
    content = bytearray(random.Random(7).randbytes(h * blocks))
    path = tmp_path / "data_1.sbc"
    write_sbc(path, h, blocks, content)
    # --block-size/--block-count are ignored with an .sbc file
    target = TargetProcess("--binary-content", str(path), "--block-size", "64", "--block-count", "3", cpus=(0, 1))
    cleanup.append(target)
    region = 4 * h * blocks
    req = Requester(target.port, cores=2, transactions=8, region_size=region)
    cleanup.append(req)

    details = req.query()
    assert (details.total_size, details.block_size) == (h * blocks, h)
    req.init()
    # the connection requests may come in any order of index and role
    for idx, role in [(1, R.IO_CONTROL), (0, R.IO_DATA), (1, R.IO_DATA), (0, R.IO_CONTROL)]:
        resp = req.connect(idx, role)
        assert resp.type is M.CREATE_RDMA_CONNECTION_RESPONSE
        assert isinstance(resp.payload, RdmaConnection) and resp.payload.connection_details
    req.start()
    ops = {0: 0, 1: 0}

    # every half block, spread over both workers, 8 in flight at a time
    for first in range(0, blocks, 8):
        for core in (0, 1):
            batch = [(b * h, b * h) for b in range(first, first + 8) if b % 2 == core]
            assert [r.result for r in req.io(core, _ios(READ, batch, h, first))] == [OK] * len(batch)
            ops[core] += len(batch)
    assert bytes(req.region[:h * blocks]) == content

    # writes from the requester's region, then read back somewhere else
    new = random.Random(8).randbytes(4 * h)
    src = h * blocks
    req.region[src:src + 4 * h] = new
    pairs = [((3 + i) * h, src + i * h) for i in range(4)]
    assert [r.result for r in req.io(1, _ios(WRITE, pairs, h, 100))] == [OK] * 4
    ops[1] += 4
    content[3 * h:7 * h] = new
    # an unaligned transfer is fine: the target only checks the ranges
    assert req.write(0, 7 * h + 5, src + 11, 100) == OK
    content[7 * h + 5:7 * h + 105] = req.region[src + 11:src + 111]
    ops[0] += 1

    # out of range or malformed: answered INVALID_VALUE, nothing touched
    before_region = bytes(req.region)
    size = h * blocks
    bad = [
        IoMessage(READ, 1, 0, h, 0, size - 10),              # past the end of the storage
        IoMessage(READ, 2, 0, 1, 0, (1 << 64) - 1),          # offset at the top of u64
        IoMessage(READ, 3, 0, h, region - 100, 0),           # past the end of the requester region
        IoMessage(WRITE, 4, 0, h, 0, size),                  # storage range starts at the end
        IoMessage(WRITE, 5, 0, h, (1 << 63), 0),             # requester offset far out
        IoMessage(READ, 6, 0, 0, 0, 0),                      # io_size 0
        IoMessage(int(IoMessageType.RESULT), 7, 0, h, 0, 0),  # not a request
        IoMessage(9, 8, 0, h, 0, 0),                         # unknown type
    ]
    answers = req.io(0, bad)
    assert [(r.user_data, r.type, r.result) for r in answers] == [(m.user_data, 0, INVALID) for m in bad]
    assert [(r.io_size, r.requester_offset, r.storage_offset) for r in answers] == \
        [(m.io_size, m.requester_offset, m.storage_offset) for m in bad]  # echoed
    # a message shorter than 64 bytes is refused too
    short = IoMessage(WRITE, 9, 0, h, 0, 0).pack()[:40]
    (r,) = req.io(1, [short])
    assert (r.user_data, r.result) == (9, INVALID)
    # ... and its answer is what arrived, zero-padded: no bytes of an earlier message in the slot
    # (every one of core 1's 8 slots first holds a refused message with non-zero sizes and offsets)
    stale = [IoMessage(READ, 40 + i, 0, h, 3 * h, size) for i in range(8)]
    assert [x.result for x in req.io(1, stale)] == [INVALID] * 8
    (r,) = req.io(1, [IoMessage(READ, 50, 0, h, 5 * h, 7 * h).pack()[:20]])  # type, user_data, result
    assert (r.user_data, r.result, r.io_size, r.requester_offset, r.storage_offset) == (50, INVALID, 0, 0, 0)
    assert bytes(req.region) == before_region

    # the whole storage read back: the writes landed, the refused requests changed nothing
    dst = 2 * h * blocks
    for first in range(0, blocks, 8):
        batch = [(b * h, dst + b * h) for b in range(first, first + 8)]
        assert [r.result for r in req.io(first // 8 % 2, _ios(READ, batch, h, first))] == [OK] * 8
        ops[first // 8 % 2] += 8
    assert bytes(req.region[dst:dst + size]) == content

    req.call(M.STOP_STORAGE_REQUEST)
    req.call(M.SHUTDOWN_REQUEST)
    assert target.wait() == 0, target.stderr
    assert "Traceback" not in target.stderr and target.stderr == ""
    assert _ops(target.stdout) == ops
    assert "refusing io message" in target.stdout


@pytest.mark.parametrize(("source", "host"), [("raw", "same"), ("none", "same"), ("raw", "cross")])
def test_raw_or_empty_storage(tmp_path: Path, cleanup: list[TargetProcess | Requester], source: str,
                              host: str) -> None:
    """``cross``: the target fakes another host, so its RDMA reads and writes travel over the
    emulated backend's TCP path instead of shared memory."""
    bs, count = 256, 6
    args = ["--block-size", str(bs), "--block-count", str(count)]
    content = bytearray(count * bs)
    if source == "raw":
        content[:] = bytes(i * 7 % 251 for i in range(count * bs))
        path = tmp_path / "plain.bin"
        path.write_bytes(content)
        args += ["--binary-content", str(path)]
    env = {"DOCA_PY_RDMA_HOST_ID": f"target-{uuid.uuid4()}"} if host == "cross" else None
    target = TargetProcess(*args, env=env)
    cleanup.append(target)
    req = Requester(target.port, cores=1, transactions=4, region_size=4 * count * bs)
    cleanup.append(req)
    details = req.setup()
    assert backing(req.cores[0].conns[R.IO_DATA]).same_host is (host == "same")
    assert (details.total_size, details.block_size) == (count * bs, bs)
    pairs = [(b * bs, b * bs) for b in range(count)]
    for i in range(0, count, 4):
        assert [r.result for r in req.io(0, _ios(READ, pairs[i:i + 4], bs, i))] == [OK] * len(pairs[i:i + 4])
    assert bytes(req.region[:count * bs]) == content
    req.region[count * bs:count * bs + bs] = b"\xa5" * bs
    assert req.write(0, 2 * bs, count * bs, bs) == OK
    assert req.read(0, 0, 2 * count * bs, count * bs) == OK  # one transfer of the whole storage
    content[2 * bs:3 * bs] = b"\xa5" * bs
    assert bytes(req.region[2 * count * bs:3 * count * bs]) == content
    req.call(M.STOP_STORAGE_REQUEST)
    req.call(M.SHUTDOWN_REQUEST)
    assert target.wait() == 0, target.stderr
    assert _ops(target.stdout) == {0: count + 2}


@pytest.mark.parametrize("init_problem", ["cores", "blob"])
def test_wrong_phase_order_gets_error_responses(cleanup: list[TargetProcess | Requester], init_problem: str) -> None:
    target = TargetProcess()
    cleanup.append(target)
    req = Requester(target.port)
    cleanup.append(req)

    def expect_error(mtype: M, payload: object, code: ErrorCode, text: str) -> None:
        resp = req.exchange(req.message(mtype, payload))
        assert resp.type is M.ERROR_RESPONSE
        assert (resp.payload.error_code, resp.payload.message) == (int(code), text)  # type: ignore[union-attr]

    # the session starts with a query (a client that sends anything else first is dropped:
    # test_target_control_port); after that a wrong request uses up the phase it arrived in
    req.query()
    if init_problem == "cores":
        expect_error(M.INIT_STORAGE_REQUEST, InitStorage(4, 3, req.mm.export_rdma(req.dev)),
                     ErrorCode.INVALID_VALUE, "Requested storage to use 3 cores but only 1 are configured")
    else:
        resp = req.exchange(req.message(M.INIT_STORAGE_REQUEST, InitStorage(4, 1, b"\x01" * 40)))
        assert resp.type is M.ERROR_RESPONSE
        assert resp.payload.message.startswith(  # type: ignore[union-attr]
            "Failed to import the requester's memory (mmap export blob of 40 bytes)")
    # no connection phase after a failed init: start is next
    expect_error(M.CREATE_RDMA_CONNECTION_REQUEST, RdmaConnection(0, R.IO_DATA, b"x"), ErrorCode.UNEXPECTED,
                 "Unexpected create_rdma_connection_request while expecting a start_storage_request")
    req.call(M.STOP_STORAGE_REQUEST)
    req.call(M.SHUTDOWN_REQUEST)
    assert target.wait() == 0, target.stderr


def test_bad_connection_requests(cleanup: list[TargetProcess | Requester]) -> None:
    target = TargetProcess(cpus=(0, 1, 2))  # pinning to a missing cpu only warns
    cleanup.append(target)
    req = Requester(target.port, cores=3)
    cleanup.append(req)
    req.query()
    req.init()
    blob = b"not a real connection blob"  # every request below is refused before it is used

    def expect_error(payload: RdmaConnection, code: ErrorCode, text: str) -> None:
        resp = req.exchange(req.message(M.CREATE_RDMA_CONNECTION_REQUEST, payload))
        assert resp.type is M.ERROR_RESPONSE
        assert (resp.payload.error_code, resp.payload.message) == (int(code), text)  # type: ignore[union-attr]

    # context_idx == cores is refused (the reference lets it through)
    expect_error(RdmaConnection(3, R.IO_DATA, blob), ErrorCode.INVALID_VALUE,
                 "context_idx 3 is out of range: the storage uses 3 cores")
    expect_error(RdmaConnection(0, 5, blob), ErrorCode.INVALID_VALUE, "unknown rdma connection role 5")
    assert req.connect(0, R.IO_DATA).type is M.CREATE_RDMA_CONNECTION_RESPONSE
    expect_error(RdmaConnection(0, R.IO_DATA, blob), ErrorCode.BAD_STATE,
                 "worker 0 (cpu 0): the io_data connection was already requested")
    resp = req.exchange(req.message(M.CREATE_RDMA_CONNECTION_REQUEST, RdmaConnection(1, R.IO_CONTROL, blob)))
    assert resp.type is M.ERROR_RESPONSE  # the worker could not connect with that blob
    assert resp.payload.error_code == ErrorCode.CONNECTION_ABORTED  # type: ignore[union-attr]
    assert req.connect(2, R.IO_DATA).type is M.CREATE_RDMA_CONNECTION_RESPONSE
    # six requests used the six slots: start is next, and connections are missing
    resp = req.exchange(req.message(M.START_STORAGE_REQUEST))
    assert resp.type is M.ERROR_RESPONSE
    assert resp.payload.error_code == ErrorCode.BAD_STATE  # type: ignore[union-attr]
    text = resp.payload.message  # type: ignore[union-attr]
    assert text == "missing RDMA connections (context/role): 0/io_control, 1/io_data, 1/io_control, 2/io_control"
    req.call(M.STOP_STORAGE_REQUEST)
    req.call(M.SHUTDOWN_REQUEST)
    assert target.wait() == 0, target.stderr
    assert "Traceback" not in target.stderr
