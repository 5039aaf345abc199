"""Worker commands: local work has no time budget; a bounded call's budget scales with the work
(in process, emulated backend).

The reference gives every control-thread → worker command a fixed 3 s. On a loaded machine
creating a target's contexts takes longer, and all three targets failed init together: local
work now ends with the work, the worker or the abort flag, never with a constant. A caller that
passes a timeout gets it plus ``WORK_UNIT_BUDGET`` per transaction; counts past the limit are
refused at once with a clear message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import doca_py as d
from apps.common.runtime import worker_thread
from apps.common.runtime.doca_features import doca_features
from doca_py.errors import ErrorCode
from doca_py.rdma import Rdma
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from apps.initiator.config import InitiatorConfig
from apps.storage_target.config import TargetConfig
from apps.storage.wire.control import ControlMessage, ErrorPayload, InitStorage, MessageType, RdmaConnectionRole
from apps.common.errors import StorageAppError
from apps.common.runtime.worker_thread import COMMAND_TIMEOUT, WORK_UNIT_BUDGET, WorkerThread, work_budget
from apps.storage_target.control import TargetSession, allocate_storage, load_content
from apps.storage_target.worker import MAX_TRANSACTIONS, StorageRegion, Worker

from .client import DEADLINE, DEVICE

PERMS = A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE
BRIDGE_MAX = 2 * 0x7FFF  # the bridge doubles the initiator's largest count (32,767) per worker


class _Idle(WorkerThread):
    """A worker with no DOCA objects: only the mailbox."""

    def _step(self) -> None:
        self._sleep(0.1)

    def _teardown(self) -> None:
        pass


@pytest.fixture
def abort() -> threading.Event:
    return threading.Event()


def test_budget_grows_with_the_transaction_count() -> None:
    assert work_budget(COMMAND_TIMEOUT, 0) == COMMAND_TIMEOUT
    assert work_budget(COMMAND_TIMEOUT, 64) == pytest.approx(COMMAND_TIMEOUT + 64 * WORK_UNIT_BUDGET)
    for count in (MAX_TRANSACTIONS, BRIDGE_MAX):
        # at least 1 ms per transaction on top of the reference's 3 s (preparing one takes ~0.1-0.3 ms)
        assert work_budget(COMMAND_TIMEOUT, count) >= COMMAND_TIMEOUT + count * 1e-3
    # the largest counts the apps accept: the target's (checked at init), the initiator's (its flag)
    assert MAX_TRANSACTIONS == 0xFFFF
    InitiatorConfig.model_validate({"device": "x", "cpu": [0], "execution_strategy": "read_throughput_test",
                                    "transaction_count": 0x7FFF})
    with pytest.raises(ValueError, match="must be from 1 to 32767"):
        InitiatorConfig.model_validate({"device": "x", "cpu": [0], "execution_strategy": "read_throughput_test",
                                        "transaction_count": 0x8000})
    with pytest.raises(ValueError, match="work_units must be >= 0"):
        _Idle(0, threading.Event(), "bad", work_units=-1)


def test_a_call_gets_the_scaled_budget(abort: threading.Event) -> None:
    """The same slow command (0.3 s of simulated work, base timeout 0.1 s) times out without
    work units and completes with them."""
    release = threading.Event()
    fixed = _Idle(0, abort, "fixed budget")
    fixed._thread.start()
    try:
        with pytest.raises(StorageAppError, match=r"^fixed budget did not prepare within 0.1 s$") as info:
            fixed._call(lambda: release.wait(DEADLINE), 0.1, "prepare")
        assert info.value.code == ErrorCode.TIME_OUT
    finally:
        release.set()
        fixed.destroy()
    scaled = _Idle(0, abort, "scaled budget", work_units=1000)  # 0.1 s + 1000 units
    assert scaled.budget(0.1) == pytest.approx(0.1 + 1000 * WORK_UNIT_BUDGET)
    scaled._thread.start()
    try:
        assert scaled._call(lambda: time.sleep(0.3) or 42, 0.1, "prepare") == 42
    finally:
        scaled.destroy()


class _Clock:
    """A ``time`` stand-in for `worker_thread` whose clock jumps an hour per reading: any deadline
    the control thread computes has passed at its next look, whatever the machine's load."""

    def __init__(self) -> None:
        self.now = 0.0
        self.readings = 0
        self.changed = threading.Condition()

    def monotonic(self) -> float:
        with self.changed:
            self.readings += 1
            self.now += 3600.0
            self.changed.notify_all()
            return self.now

    def wait_for_readings(self, n: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.readings >= n, DEADLINE)


def test_local_work_has_no_time_budget(abort: threading.Event, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    """A call with no timeout outlives any clock: it returns the work's result after "hours",
    saying every `STILL_WAITING_EVERY` that it still waits; the abort flag still ends it."""
    clock = _Clock()
    monkeypatch.setattr(worker_thread, "time", clock)
    worker = _Idle(0, abort, "slow worker", work_units=3)
    worker._thread.start()
    try:
        def slow() -> int:
            clock.wait_for_readings(6)  # the control thread has looked at its clock several times
            return 7
        with caplog.at_level("WARNING", logger="apps.storage"):
            assert worker._call(slow, None, "create its contexts") == 7
        assert clock.now >= 6 * 3600.0
        assert "still waiting for slow worker to create its contexts" in caplog.text
        release = threading.Event()
        abort.set()
        with pytest.raises(StorageAppError, match="Aborted") as info:
            worker._call(lambda: release.wait(DEADLINE), None, "start its data path")
        assert info.value.code == ErrorCode.CONNECTION_ABORTED
        release.set()
    finally:
        worker.destroy()


@pytest.mark.parametrize("app", ["storage_target", "gga_offload", "zero_copy"])
def test_no_worker_command_of_the_apps_is_bounded_by_a_constant(app: str) -> None:
    """The apps' workers pass no timeout for local work: the only bounded call left is the
    teardown's join (a daemon thread is abandoned at exit rather than keep the process alive)."""
    import ast
    import importlib
    from pathlib import Path
    sources = [Path(importlib.import_module(f"apps.{app}.worker").__file__ or "")]
    if app != "storage_target":
        sources.append(Path(importlib.import_module("apps.storage.runtime.bridge_worker").__file__ or ""))
    calls = 0
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "_call"):
                calls += 1
                assert isinstance(node.args[1], ast.Constant) and node.args[1].value is None, (
                    f"{path.name}:{node.lineno} bounds local work with {ast.unparse(node.args[1])}")
    assert calls >= 2


@pytest.fixture
def dev() -> Iterator[d.Dev]:
    dev = d.Dev.open_by_pci_addr(DEVICE)
    yield dev
    dev.close()


def _mmap(dev: d.Dev, size: int) -> d.Mmap:
    mm = d.Mmap()
    mm.allocate(size)
    mm.set_permissions(PERMS)
    if doca_features().mmap_thread_safety:  # as the target's storage (DOCA 3.0+)
        mm.enable_thread_safety()
    mm.add_dev(dev)
    mm.start()
    return mm


def test_target_worker_prepares_the_largest_transaction_count(dev: d.Dev, abort: threading.Event) -> None:
    """65,535 transactions: create, connect, start the data path (every task allocated, every
    receive posted), stop and destroy."""
    storage_mm, remote_mm = _mmap(dev, 1 << 16), _mmap(dev, 1 << 16)
    storage = StorageRegion(storage_mm, storage_mm.get_memrange()[0], 1 << 16)
    pe = d.Pe()
    peers: dict[RdmaConnectionRole, Rdma] = {}
    worker = Worker(0, 0, dev, storage, remote_mm.export_rdma(dev), MAX_TRANSACTIONS, abort)
    assert worker.work_units == MAX_TRANSACTIONS
    try:
        for role in RdmaConnectionRole:
            ctx = Rdma(dev)
            pe.connect_ctx(ctx)
            ctx.set_permissions(PERMS)
            if role is RdmaConnectionRole.IO_CONTROL:
                ctx.task_send_set_conf(lambda *a: None, lambda *a: None, 4)
                ctx.task_receive_set_conf(lambda *a: None, lambda *a: None, 4)
            ctx.start()
            peers[role] = ctx
        worker.start()
        for role, ctx in peers.items():
            blob, conn = ctx.export()
            ctx.connect(worker.connect(role, blob), conn)
        end = time.monotonic() + DEADLINE
        while not (worker.ready and all(c.get_state() == CtxState.RUNNING for c in peers.values())):
            assert time.monotonic() < end, "the RDMA contexts did not reach RUNNING"
            pe.wait(0.1)
        worker.start_data_path()
        assert len(worker._slots) == MAX_TRANSACTIONS and worker.error is None
        worker.stop_data_path(1.0)
    finally:
        worker.destroy()
        for ctx in peers.values():
            ctx.close()
        pe.close()
        remote_mm.close()
        storage_mm.close()
    assert not worker.alive


@pytest.mark.parametrize("count", [0, MAX_TRANSACTIONS + 1, 0xFFFFFFFF])
def test_target_refuses_counts_it_cannot_serve_at_once(dev: d.Dev, abort: threading.Event, count: int) -> None:
    config = TargetConfig.model_validate({"device": DEVICE, "cpu": [0], "listen_port": 0, "block_count": 4})
    content = load_content(config)
    storage = allocate_storage(dev, content)
    try:
        session = TargetSession(config, dev, storage, content.block_size, abort)
        resp = session.handle(ControlMessage(MessageType.INIT_STORAGE_REQUEST, 3, 4, InitStorage(count, 1, b"x")))
        assert (resp.type, resp.message_id, resp.correlation_id) == (MessageType.ERROR_RESPONSE, 3, 4)
        assert isinstance(resp.payload, ErrorPayload)
        assert (resp.payload.code, resp.payload.message) == (
            ErrorCode.INVALID_VALUE, f"transaction_count {count} must be from 1 to {MAX_TRANSACTIONS}")
        assert session.workers == []
    finally:
        storage.mmap.close()


class _Spinning(WorkerThread):
    """A data loop as the target's and the bridges': it never sleeps and leaves only when the command
    counter says a command waits (or the worker ends), so a command it failed to notice would never run."""

    def _step(self) -> None:
        while self._posted == self._taken and not self._exit:
            pass

    def _teardown(self) -> None:
        pass


def test_a_spinning_data_loop_sees_every_command_posted_from_several_threads(abort: threading.Event) -> None:
    w = _Spinning(0, abort, "spinning")
    w._thread.start()
    ran: list[int] = []
    errors: list[BaseException] = []

    def poster(k: int) -> None:
        try:
            for i in range(50):
                w._call(lambda v=k * 100 + i: ran.append(v), DEADLINE, "run a command")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=poster, args=(k,)) for k in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(4 * DEADLINE)
    finally:
        w.destroy()
    assert not errors
    assert sorted(ran) == [k * 100 + i for k in range(4) for i in range(50)]
    assert w._posted == 200
