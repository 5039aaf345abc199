"""How a bridge learns why its initiator's comch connection went away, whatever the load.

A bridge's workers send the initiator its answers on their own progress engines; when the initiator stops
answering, the transport fails those sends with ``IO_FAILED`` and drops the connection. The control thread
sees the drop on its own Pe and must then learn from the workers whether a send failed: it used to give them
0.5 s, so a worker slower than that (a loaded machine) made the bridge say "the initiator closed the comch
connection" of an initiator that hung. The transport posts the failed sends to the workers' Pes before
the disconnect event (``EmuComchConnection.die``), so the control thread waits until every worker has run a
whole ``Pe.progress()`` begun after it saw the drop, however long that takes.

Here a real comch server and worker face a real initiator process, which the test stops (SIGSTOP); the
worker is held at the start of its rounds by an Event, and the control thread's clock (the one of
`apps.storage.runtime.service_control`) is moved past the old 0.5 s while it is held. The old code names the
wrong cause; the bridge must name the right one once the worker runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

import doca_py as d
from doca_py.comch import ComchConsumerTaskPostRecv, ComchProducerTaskSend
from doca_py.emulated import comch as emu_comch
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import CtxState

from apps.storage.channels.comch_transport import ComchTransport, listen_comch_server
from apps.storage.runtime import service_control
from apps.storage.runtime.bridge_worker import BridgeWorkerThread
from apps.storage.runtime.service_control import (
    INITIATOR_UNANSWERED_TEXT, BridgeControl, InitiatorGone, open_host_representor,
)

from tests.deadlines import hang
from ..impl import CHILD_IMPL

pytestmark = pytest.mark.multiprocess

ROOT = Path(__file__).resolve().parents[2]
DPU = "03:00.0"
HOST = "3b:00.0"
DEADLINE = hang(20.0)
WINDOW = 1.0
"""The comch retry window of the bridge's connection (``DOCA_PY_COMCH_RETRY_WINDOW``): the send to the
stopped initiator fails after it."""
OLD_EVIDENCE_WAIT = 0.5
"""What the control thread used to give the workers."""


def _until(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.005)


@dataclass
class _Shared:
    dev: d.Dev
    connection: Any


class _HeldWorker(BridgeWorkerThread[_Shared]):
    """A bridge worker that answers nothing but sends one message to the initiator's consumer; each round of
    its loop waits for :attr:`gate` (:attr:`parked` says it waits)."""

    _log: ClassVar = service_control.BridgeControl.log

    def __init__(self, shared: _Shared, abort: threading.Event) -> None:
        super().__init__(0, min(os.sched_getaffinity(0)), shared, abort, "held worker", 1)
        self._retry: list[object] = []
        self.gate = threading.Event()
        self.gate.set()
        self.parked = threading.Event()

    def _step(self) -> None:
        if not self.gate.is_set():
            self.parked.set()
            self.gate.wait()
        super()._step()

    def _create(self) -> None:
        _, consumer, producer = self._open_comch(4, 4096, self._ignore, self._ignore, self._sent, self._send_failed, 1)
        consumer.start()
        producer.start()
        end = time.monotonic() + DEADLINE
        while not (consumer.get_state() == producer.get_state() == CtxState.RUNNING):
            assert time.monotonic() < end, "the worker's comch contexts did not start"
            assert self._pe is not None
            self._pe.wait(0.01)

    def _start_data_path(self, remote_consumer_id: int) -> None:
        assert self._pe is not None and self._inv is not None and self._io_mm is not None
        assert self._producer is not None
        buf = self._inv.buf_get_by_data(self._io_mm, self._io_mm.get_memrange()[0], 8)
        task = self._producer.task_send_alloc_init(buf, None, remote_consumer_id, None)
        end = time.monotonic() + DEADLINE
        while True:
            try:
                task.submit()
                break
            except DocaError as exc:  # no credit yet (it travels ahead of the initiator's query: not expected)
                assert exc.code == ErrorCode.AGAIN and time.monotonic() < end, exc
            self._pe.wait(0.01)
        self._in_flight = 1
        self._running = True
        self._pe.progress()  # launched: it waits for the initiator's acknowledgement (the retry window runs)

    def _ignore(self, task: ComchConsumerTaskPostRecv, ud: Any, ctx_ud: Any) -> None:
        pass

    def _sent(self, task: ComchProducerTaskSend, ud: Any, ctx_ud: Any) -> None:
        self._in_flight -= 1

    def _send_failed(self, task: ComchProducerTaskSend, ud: Any, ctx_ud: Any) -> None:
        self._in_flight -= 1
        self._reply_failed(task.get_status())

    def _state_cb(self, name: str) -> Callable[[Any, d.Ctx, CtxState, CtxState], None]:
        return lambda ud, ctx, prev, now: None

    def _close_comch(self) -> None:
        self._close_quietly([("producer", self._producer), ("consumer", self._consumer)])
        self._producer = self._consumer = None

    def _housekeeping(self) -> None:
        pass

    def _drain_over(self, start: float, drain_timeout: float) -> bool:
        return True

    def _teardown(self) -> None:
        self._closing = True
        self._close_comch()
        self._close_quietly([("inventory", self._inv), ("io mmap", self._io_mm), ("pe", self._pe)])


class _Clock:
    """``time`` for `service_control`: the real monotonic clock plus :attr:`ahead`; counts its reads."""

    def __init__(self) -> None:
        self.ahead = 0.0
        self.reads = 0

    def monotonic(self) -> float:
        self.reads += 1
        return time.monotonic() + self.ahead


@dataclass
class _Bridge(BridgeControl[Any]):
    comch: Any
    workers: list[Any]
    abort: threading.Event = field(default_factory=threading.Event)
    config: Any = field(default_factory=lambda: SimpleNamespace(control_timeout=DEADLINE))


@pytest.fixture
def silent_initiator() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    name = f"evidence-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "DOCA_PY_IMPL": CHILD_IMPL, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen([sys.executable, "-m", "tests.storage.silent_initiator", name], cwd=ROOT, env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        yield name, child
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


def test_an_initiator_that_hung_is_named_so_however_late_a_worker_reports(
        silent_initiator: tuple[str, subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    name, child = silent_initiator
    window = emu_comch.config.retry_window()
    emu_comch.configure(retry_window=WINDOW)  # the server's connection is accepted below: it gets WINDOW
    dev = d.Dev.open_by_pci_addr(DPU)
    rep = open_host_representor(dev, DPU, HOST)
    pe = d.Pe()
    abort = threading.Event()
    worker: _HeldWorker | None = None
    closing: list[Any] = []
    try:
        channel, server, conn = listen_comch_server(dev, rep, name, pe, timeout=DEADLINE)
        closing += [channel, server]
        transport = channel.transport
        assert isinstance(transport, ComchTransport)
        for _ in range(2):  # the second comes after the initiator's consumer and its receive's credit
            assert channel.receive(DEADLINE).type.wire_name == "query_storage_request"
        assert len(transport.remote_consumer_ids) == 1
        child.send_signal(signal.SIGSTOP)  # the initiator hangs: nothing it gets is acknowledged
        _until(lambda: _stopped(child.pid), "the initiator to stop")

        worker = _HeldWorker(_Shared(dev, conn), abort)
        worker.start()
        worker.gate.clear()  # from its next round on, the worker is held
        worker.start_data_path(transport.remote_consumer_ids[0])
        _until(worker.parked.is_set, "the worker to be held")

        clock = _Clock()
        monkeypatch.setattr(service_control, "time", clock)
        bridge = _Bridge(transport, [worker], abort)
        held = worker

        def slow_machine() -> None:
            """Once the control thread waits for the worker's word, its clock passes the old wait; the
            worker runs again only after the control thread looked at the clock twice more (or answered)."""
            _until(lambda: clock.reads >= 1, "the control thread to wait for the worker")
            clock.ahead += 2 * OLD_EVIDENCE_WAIT
            seen = clock.reads
            _until(lambda: clock.reads >= seen + 2 or answered.is_set(), "the control thread to read its clock")
            held.gate.set()

        answered = threading.Event()
        driver = threading.Thread(target=slow_machine, daemon=True)
        driver.start()
        try:
            with pytest.raises(InitiatorGone) as info:
                end = time.monotonic() + DEADLINE
                while time.monotonic() < end:
                    transport.pump(0.05)
                    bridge._check_initiator()  # the drop comes after the retry window
        finally:
            answered.set()
            driver.join(DEADLINE)
        assert str(info.value) == INITIATOR_UNANSWERED_TEXT, str(info.value)
        assert info.value.unanswered and worker.initiator_unanswered
    finally:
        if worker is not None:  # first: its producer and consumer are the server's connection's
            worker.gate.set()
            worker.destroy()
        for obj in closing:
            obj.close()
        pe.close()
        rep.close()
        dev.close()
        emu_comch.configure(retry_window=window)
