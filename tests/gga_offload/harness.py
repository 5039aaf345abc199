"""End-to-end harness for the gga service: child processes and a small test initiator.

* :class:`Proc` runs ``python -m <module> ...`` (emulated backend) and collects its output on
  reader threads; :meth:`Proc.wait_for` waits (bounded) for a line.
* :func:`make_sbc_files` builds the three ``.sbc`` files with ``python -m apps.sbc_generator``.
* :class:`Deployment` starts three ``python -m apps.storage_target`` processes and
  ``python -m apps.gga_offload`` in front of them.
* :class:`TestInitiator` is the host side in the test process: a comch client
  (:func:`~apps.storage.channels.comch_transport.connect_comch_client`), a PCI-exported local region,
  one comch producer/consumer pair, and pipelined io messages. ``with
  TestInitiator.session(dep) as ini:`` closes it and kills the deployment however the test
  ends; :func:`end_session` ends a session cleanly (the service must exit with 0).

Every wait is bounded by :data:`DEADLINE`; nothing sleeps for a fixed time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import doca_py as d
from doca_py.comch import ComchConsumer, ComchConsumerTaskPostRecv, ComchProducer, ComchProducerTaskSend
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from apps.storage.channels.control_channel import ControlChannel
from apps.storage.channels.comch_transport import ComchTransport, connect_comch_client
from apps.storage.wire.control import ControlMessage, ErrorPayload, IdAllocator, InitStorage, MessageType, \
    StorageDetails, check_response
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessage, IoMessageType

from tests import deadlines
from tests.deadlines import hang
from ..impl import CHILD_IMPL

ROOT = Path(__file__).resolve().parents[2]
DPU = "03:00.0"
HOST = "3b:00.0"
DEADLINE = hang(20.0)
M = MessageType
W = IoMessageType.WRITE


class Proc:
    """A child ``python -m`` process with its output collected line by line."""

    def __init__(self, module: str, *args: str, env: dict[str, str] | None = None) -> None:
        full_env = {**os.environ, "DOCA_PY_IMPL": CHILD_IMPL, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.module = module
        self.p = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
        self._cond = threading.Condition()
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(self.p.stdout, self.out), daemon=True),
                         threading.Thread(target=self._read, args=(self.p.stderr, self.err), daemon=True)]
        for t in self._readers:
            t.start()

    def _read(self, pipe: Any, into: list[str]) -> None:
        for raw in pipe:
            with self._cond:
                into.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()
        pipe.close()
        with self._cond:
            self._cond.notify_all()

    def wait_for(self, pred: Callable[[str], bool], what: str, deadline: float = DEADLINE) -> str:
        """The first stdout line matching *pred* (bounded wait)."""
        end = time.monotonic() + deadline
        with self._cond:
            while True:
                for line in self.out:
                    if pred(line):
                        return line
                left = end - time.monotonic()
                if left <= 0 or (self.p.poll() is not None and not any(t.is_alive() for t in self._readers)):
                    raise AssertionError(f"{self.module}: no {what} (rc={self.p.poll()})\n{self.output}")
                self._cond.wait(min(left, 1.0))

    def wait(self, timeout: float = DEADLINE) -> int:
        """The exit status (the process must end within *timeout*); output is complete then."""
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.module} did not exit within {timeout} s\n{self.output}") from None
        for t in self._readers:
            t.join(DEADLINE)
        return rc

    def signal(self, sig: int) -> None:
        if self.p.poll() is None:
            self.p.send_signal(sig)

    @property
    def stdout(self) -> str:
        with self._cond:
            return "\n".join(self.out)

    @property
    def stderr(self) -> str:
        with self._cond:
            return "\n".join(self.err)

    @property
    def output(self) -> str:
        return f"--- stdout:\n{self.stdout}\n--- stderr:\n{self.stderr}"

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.wait()


def plain_content(blocks: int, block_size: int) -> bytes:
    """Compressible but block-distinct content."""
    out = bytearray()
    for b in range(blocks):
        line = f"block {b:05d}: the quick brown fox jumps over the lazy dog {b * 7919 % 1000:03d}\n".encode()
        out += (line * (block_size // len(line) + 1))[:block_size]
    return bytes(out)


def make_sbc_files(tmp: Path, plain: bytes, block_size: int, matrix: str) -> tuple[Path, Path, Path]:
    """``python -m apps.sbc_generator`` over *plain*; the three file paths."""
    src = tmp / "plain.bin"
    src.write_bytes(plain)
    files = (tmp / f"d1-{matrix}.sbc", tmp / f"d2-{matrix}.sbc", tmp / f"dp-{matrix}.sbc")
    g = Proc("apps.sbc_generator", "-d", DPU, "--original-input-data", str(src), "--block-size", str(block_size),
             "--matrix-type", matrix, "--data-1", str(files[0]), "--data-2", str(files[1]), "--data-p",
             str(files[2]))
    assert g.wait() == 0, g.output
    return files


class Deployment:
    """Three targets and the gga service in front of them.

    The service's ``--control-timeout`` (*control_timeout*, default 5 s) and ``--target-io-timeout``
    (*target_io_timeout*, its default unless given) come from `tests.deadlines.product_timeout`, so a
    loaded machine does not make a healthy target miss them; so does *rdma_retry_window*, the emulated
    RDMA transport's (``DOCA_PY_RDMA_RETRY_WINDOW`` of every process, 4 s unless given). `deadline`
    bounds a wait that may include them. *service_env* is the bridge's own environment on top
    (``DOCA_PY_IMPL=native`` and a ``DOCA_PY_LIBDIR``: a native bridge among emulated peers)."""

    def __init__(self, files: Sequence[Path], *, matrix: str = "vandermonde", every_n: int = 0,
                 control_timeout: int | None = None, target_io_timeout: int | None = None,
                 rdma_retry_window: int | None = None, cpus: Sequence[int] = (0,), extra: Sequence[str] = (),
                 service_env: dict[str, str] | None = None) -> None:
        self.name = f"gga-test-{uuid.uuid4().hex[:12]}"
        self.control_timeout = deadlines.product_timeout(5) if control_timeout is None else control_timeout
        self.target_io_timeout = target_io_timeout
        io_args = () if target_io_timeout is None else ("--target-io-timeout", str(target_io_timeout))
        env = None if rdma_retry_window is None else {"DOCA_PY_RDMA_RETRY_WINDOW": str(rdma_retry_window)}
        self.deadline = max(DEADLINE, deadlines.bound(self.control_timeout, target_io_timeout or 5,
                                                      rdma_retry_window or 4, starts=1))
        """A wait of the tests that may include the service's time-outs (`tests.deadlines.bound`)."""
        self.targets: list[Proc] = []
        self.service: Proc | None = None
        try:
            for f in files:
                t = Proc("apps.storage_target", "-d", DPU, "--listen-port", "0", *[f"--cpu={c}" for c in cpus],
                         "--binary-content", str(f), env=env)
                self.targets.append(t)
            ports = [int(t.wait_for(lambda s: s.startswith("Listening on port "), "listening line").split()[-1])
                     for t in self.targets]
            self.service = Proc("apps.gga_offload", "-d", DPU, "-r", HOST, *[f"--cpu={c}" for c in cpus],
                                "--data-1-storage", f"127.0.0.1:{ports[0]}",
                                "--data-2-storage", f"127.0.0.1:{ports[1]}",
                                "--data-p-storage", f"127.0.0.1:{ports[2]}",
                                "--matrix-type", matrix, "--trigger-recovery-read-every-n", str(every_n),
                                "--command-channel-name", self.name, "--control-timeout",
                                str(self.control_timeout), *io_args, *extra, env={**(env or {}), **(service_env or {})})
        except BaseException:
            self.kill()
            raise

    @property
    def svc(self) -> Proc:
        assert self.service is not None
        return self.service

    def kill(self) -> None:
        for p in ([self.service] if self.service else []) + self.targets:
            p.kill()


class Deployed(Protocol):
    """A deployment a test initiator connects to (this module's or the zero-copy harness's)."""

    name: str

    def kill(self) -> None: ...


_I = TypeVar("_I", bound="TestInitiator")  # typing.Self is 3.11+


class TestInitiator:
    """The initiator side in the calling thread: control over comch, one producer/consumer."""

    __test__ = False  # not a pytest class

    #: The permissions of the exported region (a subclass may add RDMA access).
    region_permissions = A.LOCAL_READ_WRITE | A.PCI_READ_WRITE
    #: What the tests call the DPU side in wait messages.
    peer = "service"

    def __init__(self, name: str) -> None:
        self.dev = d.Dev.open_by_pci_addr(HOST)
        self.pe = d.Pe()
        self.ids = IdAllocator()
        self.channel: ControlChannel
        self.channel, self.client = connect_comch_client(self.dev, name, self.pe, timeout=DEADLINE)
        transport = self.channel.transport
        assert isinstance(transport, ComchTransport)
        self.transport = transport
        self.mm: d.Mmap | None = None
        self.io_mm: d.Mmap | None = None
        self.inv: d.BufInventory | None = None
        self.consumers: list[ComchConsumer] = []
        self.producers: list[ComchProducer] = []
        self.responses: dict[int, IoMessage] = {}
        self.send_errors: list[ErrorCode] = []
        self.block_size = 0
        self.capacity = 0
        self.transactions = 0
        self.cores = 1
        self.remote_consumers: list[int] = []
        self._closed = False
        self.deadline = DEADLINE
        """Each wait's bound: at least the deployment's time-outs (`session` sets it)."""

    @classmethod
    @contextlib.contextmanager
    def session(cls: type[_I], dep: Deployed) -> Iterator[_I]:
        """An initiator connected to *dep*; on the way out, however the block ends, it is closed
        (again: :meth:`close` may already have run) and *dep* is killed."""
        try:
            ini = cls(dep.name)
            ini.deadline = max(ini.deadline, getattr(dep, "deadline", DEADLINE))
            try:
                yield ini
            finally:
                ini.close()
        finally:
            dep.kill()

    # -- control -------------------------------------------------------------------------------
    def exchange(self, mtype: MessageType, payload: Any = None) -> ControlMessage:
        mid = self.ids.next()
        msg = ControlMessage(mtype, mid, mid, payload)
        self.channel.send(msg)
        resp = self.channel.receive(self.deadline)
        assert (resp.message_id, resp.correlation_id) == (mid, mid), resp
        return resp

    def call(self, mtype: MessageType, payload: Any = None) -> ControlMessage:
        resp = self.exchange(mtype, payload)
        req = ControlMessage(mtype, resp.message_id, resp.correlation_id, payload)
        return check_response(req, resp)

    def query(self) -> StorageDetails:
        p = self.call(M.QUERY_STORAGE_REQUEST).payload
        assert isinstance(p, StorageDetails)
        self.block_size, self.capacity = p.block_size, p.total_size
        return p

    def wait(self, cond: Callable[[], bool], what: str, deadline: float | None = None) -> None:
        end = time.monotonic() + (self.deadline if deadline is None else deadline)
        while not cond():
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting for {what}")
            self.transport.pump(0.05)

    def init(self, transactions: int, cores: int = 1) -> None:
        """init_storage_request, then one producer/consumer pair per core, waiting for the
        service's consumers (core *i* sends to the *i*-th one announced); the region gets
        :attr:`region_permissions`."""
        self.transactions = t = transactions
        self.cores = cores
        self.mm = mm = d.Mmap()
        self.region = mm.allocate(self.capacity)
        mm.set_permissions(self.region_permissions)
        mm.add_dev(self.dev)
        mm.start()
        self.call(M.INIT_STORAGE_REQUEST, InitStorage(t, cores, mm.export_pci(self.dev)))
        self.io_mm = io_mm = d.Mmap()
        self.io_mem = io_mm.allocate(3 * t * cores * IO_MESSAGE_SIZE)
        io_mm.set_permissions(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
        io_mm.add_dev(self.dev)
        io_mm.start()
        self.io_base = io_mm.get_memrange()[0]
        self.inv = d.BufInventory(8 * t * cores + 8)
        conn = self.client.get_connection()
        for _ in range(cores):
            c = ComchConsumer(conn, io_mm)
            self.pe.connect_ctx(c)
            c.task_post_recv_set_conf(self._on_recv, self._on_recv_error, 2 * t)
            p = ComchProducer(conn)
            self.pe.connect_ctx(p)
            p.task_send_set_conf(self._on_sent, self._on_send_error, t)
            c.start()
            p.start()
            self.consumers.append(c)
            self.producers.append(p)
        self.wait(lambda: len(self.transport.remote_consumer_ids) >= cores
                  and all(x.get_state() == CtxState.RUNNING for x in self.consumers + self.producers),
                  f"the {self.peer}'s consumers")
        self.remote_consumers = self.transport.remote_consumer_ids[:cores]
        for k, c in enumerate(self.consumers):
            for i in range(2 * t):
                slot = k * 2 * t + i
                b = self.inv.buf_get_by_addr(io_mm, self.io_base + slot * IO_MESSAGE_SIZE, IO_MESSAGE_SIZE)
                c.task_post_recv_alloc_init(b, slot).submit()

    def setup(self, transactions: int = 4, cores: int = 1) -> StorageDetails:
        details = self.query()
        self.init(transactions, cores)
        self.call(M.START_STORAGE_REQUEST)
        return details

    # -- data path -----------------------------------------------------------------------------
    def _on_recv(self, task: ComchConsumerTaskPostRecv, slot: int, _ud: Any) -> None:
        buf = task.get_buf()
        raw = bytes(buf.data_view())
        msg = IoMessage.unpack(raw.ljust(IO_MESSAGE_SIZE, b"\0"))
        self.responses[msg.user_data] = msg
        buf.reuse_by_addr(self.io_base + slot * IO_MESSAGE_SIZE, IO_MESSAGE_SIZE)
        task.submit()

    def _on_recv_error(self, task: ComchConsumerTaskPostRecv, slot: int, _ud: Any) -> None:
        pass

    def _on_sent(self, task: ComchProducerTaskSend, ud: Any, _cud: Any) -> None:
        buf = task.get_buf()
        task.free()
        buf.dec_refcount()

    def _on_send_error(self, task: ComchProducerTaskSend, ud: Any, _cud: Any) -> None:
        self.send_errors.append(task.get_status())  # fatal: AGAIN is raised by submit, never reported here
        buf = task.get_buf()
        task.free()
        buf.dec_refcount()

    def send_raw(self, slot: int, raw: bytes) -> None:
        """Send *raw* (any length ≤ 64) from request slot *slot* (core ``slot % cores``)."""
        assert self.io_mm is not None and self.inv is not None and self.producers
        core = slot % self.cores
        off = (2 * self.transactions * self.cores + slot) * IO_MESSAGE_SIZE
        self.io_mem[off:off + len(raw)] = raw
        b = self.inv.buf_get_by_data(self.io_mm, self.io_base + off, len(raw))
        task = self.producers[core].task_send_alloc_init(b, None, self.remote_consumers[core], slot)
        # DOCA 3.x: submit raises AGAIN while the service's consumer has no receive posted.
        end = time.monotonic() + DEADLINE
        while True:
            try:
                task.submit()
                return
            except DocaError as exc:
                if exc.code != ErrorCode.AGAIN or time.monotonic() > end:
                    raise
            self.pe.wait(0.001)

    def run(self, msgs: Sequence[IoMessage | bytes]) -> list[IoMessage]:
        """Send *msgs* (at most ``transactions`` in flight per core, each a distinct
        ``user_data``, spread over the cores); their responses in order."""
        out: list[IoMessage] = []
        per = self.transactions * self.cores
        for start in range(0, len(msgs), per):
            batch = msgs[start:start + per]
            uds = []
            for slot, m in enumerate(batch):
                raw = m.pack() if isinstance(m, IoMessage) else m
                ud = m.user_data if isinstance(m, IoMessage) else \
                    IoMessage.unpack(raw.ljust(IO_MESSAGE_SIZE, b"\0")).user_data
                uds.append(ud)
                self.responses.pop(ud, None)
                self.send_raw(slot, raw)
            self.wait(lambda: all(u in self.responses for u in uds) or bool(self.send_errors), "io responses")
            assert not self.send_errors, self.send_errors
            out += [self.responses.pop(u) for u in uds]
        return out

    def finish(self) -> None:
        """stop, destroy the fast path, shutdown."""
        self.call(M.STOP_STORAGE_REQUEST)
        self.close_fast_path()
        self.wait(lambda: len(self.transport.expired_consumer_ids) >= self.cores, "the service's consumers to expire")
        self.call(M.SHUTDOWN_REQUEST)

    def close_fast_path(self) -> None:
        for ctx in [*self.consumers, *self.producers]:
            if not ctx.closed:
                ctx.close()

    def close(self) -> None:
        """Destroy everything (a second call does nothing)."""
        if self._closed:
            return
        self._closed = True
        self.close_fast_path()
        for obj in (self.inv, self.io_mm, self.mm):
            if obj is not None and not obj.closed:
                obj.close()
        self.channel.close()
        self.client.close()
        self.pe.close()
        self.dev.close()


def end_session(ini: TestInitiator, svc: Proc, *, finish: bool = True) -> None:
    """End *ini*'s session cleanly: stop and shut down (*finish*), close the initiator; then
    *svc* must exit with 0."""
    if finish:
        ini.finish()
    ini.close()
    assert svc.wait(ini.deadline) == 0, svc.output


def write_four_blocks(ini: TestInitiator, plain: bytes, new: bytes) -> bytearray:
    """Write *new* (4 blocks, from the start of the region) as one 2-block IO to storage blocks 8
    and 9 and two single ones to blocks 10 and 15 (``user_data`` 20 to 22), each answered with
    success; what the storage holds afterwards (*plain* with those blocks replaced)."""
    b = ini.block_size
    expect = bytearray(plain)
    ini.region[:4 * b] = new
    wr = ini.run([IoMessage(W, 20, 0, 2 * b, 0, 8 * b), IoMessage(W, 21, 0, b, 2 * b, 10 * b),
                  IoMessage(W, 22, 0, b, 3 * b, 15 * b)])
    assert [x.result for x in wr] == [0, 0, 0]
    expect[8 * b:10 * b] = new[:2 * b]
    expect[10 * b:11 * b] = new[2 * b:3 * b]
    expect[15 * b:16 * b] = new[3 * b:]
    return expect


def end_after_a_failed_init(ini: TestInitiator, svc: Proc) -> None:
    """The rest of a session whose init failed (and consumed its position): a start is answered
    with ``BAD_STATE``, a query out of order with ``UNEXPECTED``; the shutdown is relayed and the
    target(s), which never got an init, answer it positionally (``UNEXPECTED``), passed on with
    their code and text; then the session ends cleanly (:func:`end_session`, no stop)."""
    s = ini.exchange(M.START_STORAGE_REQUEST)
    assert s.type is M.ERROR_RESPONSE and isinstance(s.payload, ErrorPayload)
    assert s.payload.code == ErrorCode.BAD_STATE
    u = ini.exchange(M.QUERY_STORAGE_REQUEST)          # out of order: stop expected
    assert u.type is M.ERROR_RESPONSE and isinstance(u.payload, ErrorPayload)
    assert u.payload.code == ErrorCode.UNEXPECTED
    assert u.payload.message == "Unexpected query_storage_request while expecting a stop_storage_request"
    sd = ini.exchange(M.SHUTDOWN_REQUEST)
    assert sd.type is M.ERROR_RESPONSE and isinstance(sd.payload, ErrorPayload)
    assert sd.payload.code == ErrorCode.UNEXPECTED
    assert "while expecting a init_storage_request" in sd.payload.message
    end_session(ini, svc, finish=False)


def interrupt(proc: Proc) -> float:
    """Send SIGINT; seconds until the process exited."""
    t0 = time.monotonic()
    proc.signal(signal.SIGINT)
    proc.wait(DEADLINE)
    return time.monotonic() - t0
