"""Test helpers for the storage target: the target as a child process, and a requester.

* :class:`TargetProcess` runs ``python -m apps.storage_target ... --listen-port 0``, reads
  its stdout/stderr on two reader threads and learns the port from the
  ``Listening on port <n>`` line.
* :class:`Requester` plays the storage service's part (§3.7, §4.3): TCP control messages,
  one io_control + one io_data RDMA context per core, an RDMA-exported region the target
  reads and writes, and io messages sent / answered over the io_control connection.

As a child process (``python -m tests.storage_target.client PORT CORES [--no-io]``) the requester
runs a whole session up to some io (none with ``--no-io``), prints ``ready`` and then waits on stdin
forever: the test kills or stops it to simulate a client that dies or hangs mid-run.

Every wait is bounded by :data:`DEADLINE`; nothing sleeps.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma, RdmaConnection, RdmaTaskReceive
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from apps.storage.channels.control_channel import ControlChannel, connect_tcp
from apps.storage.wire.control import (
    ControlMessage, IdAllocator, InitStorage, MessageType, RdmaConnection as RdmaConnectionPayload,
    RdmaConnectionRole, StorageDetails, check_response,
)
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessage, IoMessageType

from tests.deadlines import hang
from ..impl import CHILD_IMPL

ROOT = Path(__file__).resolve().parents[2]
DEVICE = "03:00.0"
DEADLINE = hang(20.0)
LISTENING = "Listening on port "
PERMS = A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE
M = MessageType


class TargetProcess:
    """``python -m apps.storage_target`` in a child process (emulated backend)."""

    def __init__(self, *args: str, cpus: Sequence[int] = (0,), env: dict[str, str] | None = None) -> None:
        cmd = [sys.executable, "-m", "apps.storage_target", "-d", DEVICE, "--listen-port", "0",
               *[f"--cpu={c}" for c in cpus], *args]
        full_env = dict(os.environ, DOCA_PY_IMPL=CHILD_IMPL, PYTHONUNBUFFERED="1", **(env or {}))
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=full_env)
        self._cond = threading.Condition()
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(self.p.stdout, self.out), daemon=True),
                         threading.Thread(target=self._read, args=(self.p.stderr, self.err), daemon=True)]
        for t in self._readers:
            t.start()
        try:
            line = self.wait_for(lambda s: s.startswith(LISTENING), "the listening line")
        except BaseException:
            self.kill()  # the caller never gets the object to clean up: no process outlives the test
            raise
        self.port = int(line[len(LISTENING):])

    def _read(self, pipe: Any, into: list[str]) -> None:
        for raw in pipe:
            with self._cond:
                into.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()
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
                    raise AssertionError(f"target: no {what} (rc={self.p.poll()})\nstdout:\n{self.stdout}\n"
                                         f"stderr:\n{self.stderr}")
                self._cond.wait(min(left, 1.0))

    def wait(self, timeout: float = DEADLINE) -> int:
        """The exit status (the process must end within *timeout*); the output is complete then."""
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the target did not exit within {timeout} s\nstdout:\n{self.stdout}\n"
                                 f"stderr:\n{self.stderr}") from None
        for t in self._readers:
            t.join(DEADLINE)
        return rc

    @property
    def stdout(self) -> str:
        with self._cond:
            return "\n".join(self.out)

    @property
    def stderr(self) -> str:
        with self._cond:
            return "\n".join(self.err)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(DEADLINE)
        for t in self._readers:
            t.join(DEADLINE)
        for f in (self.p.stdout, self.p.stderr):
            if f is not None:
                f.close()


@dataclass
class Core:
    """The requester's two RDMA contexts towards one target worker."""

    ctrl: Rdma
    data: Rdma
    conns: dict[RdmaConnectionRole, RdmaConnection] = field(default_factory=dict)
    done: list[tuple[str, Any]] = field(default_factory=list)

    def ctx(self, role: RdmaConnectionRole) -> Rdma:
        return self.ctrl if role is RdmaConnectionRole.IO_CONTROL else self.data


class Requester:
    """The requester side of a target session, all in the calling thread."""

    def __init__(self, port: int, *, cores: int = 1, transactions: int = 8, region_size: int = 1 << 16) -> None:
        self.cores_wanted, self.transactions = cores, transactions
        self.dev = d.Dev.open_by_pci_addr(DEVICE)
        self.pe = d.Pe()
        self.inv = d.BufInventory(4 * transactions * cores + 16)
        self.mm = d.Mmap()
        self.region = self.mm.allocate(region_size)
        self.mm.set_permissions(PERMS)
        self.mm.add_dev(self.dev)
        self.mm.start()
        self.io_mm = d.Mmap()
        self.io_mem = self.io_mm.allocate(2 * transactions * IO_MESSAGE_SIZE)
        self.io_mm.set_permissions(A.LOCAL_READ_WRITE)
        self.io_mm.add_dev(self.dev)
        self.io_mm.start()
        self.io_base = self.io_mm.get_memrange()[0]
        self.ids = IdAllocator()
        self.cores: list[Core] = []
        self.channel: ControlChannel = connect_tcp("127.0.0.1", port, timeout=DEADLINE)

    # -- control -----------------------------------------------------------------------------
    def message(self, mtype: MessageType, payload: Any = None) -> ControlMessage:
        mid = self.ids.next()
        return ControlMessage(mtype, mid, mid, payload)

    def exchange(self, msg: ControlMessage) -> ControlMessage:
        """Send *msg*, return whatever comes back (the ids must echo)."""
        self.channel.send(msg)
        resp = self.channel.receive(DEADLINE)
        assert (resp.message_id, resp.correlation_id) == (msg.message_id, msg.correlation_id)
        return resp

    def call(self, mtype: MessageType, payload: Any = None) -> ControlMessage:
        """A request that must succeed."""
        msg = self.message(mtype, payload)
        return check_response(msg, self.exchange(msg))

    def query(self) -> StorageDetails:
        p = self.call(M.QUERY_STORAGE_REQUEST).payload
        assert isinstance(p, StorageDetails)
        return p

    def init(self) -> None:
        self.call(M.INIT_STORAGE_REQUEST, InitStorage(self.transactions, self.cores_wanted,
                                                      self.mm.export_rdma(self.dev)))
        for _ in range(self.cores_wanted):
            self.cores.append(self._make_core())

    def _make_core(self) -> Core:
        ctrl, data = Rdma(self.dev), Rdma(self.dev)
        core = Core(ctrl, data)
        for ctx in (ctrl, data):
            self.pe.connect_ctx(ctx)
            ctx.set_permissions(PERMS)
        ctrl.task_send_set_conf(lambda t, u, c: core.done.append(("sent", t)),
                                lambda t, u, c: core.done.append(("send_error", t)), 2 * self.transactions)
        ctrl.task_receive_set_conf(lambda t, u, c: core.done.append(("received", t)),
                                   lambda t, u, c: core.done.append(("receive_error", t)), 2 * self.transactions)
        ctrl.start()
        data.start()
        return core

    def connect(self, index: int, role: RdmaConnectionRole, *, core: int | None = None) -> ControlMessage:
        """``create_rdma_connection_request{index, role}`` with core *core*'s blob (default
        *index*); connects on success; returns the raw response."""
        c = self.cores[index if core is None else core]
        blob, conn = c.ctx(role).export()
        resp = self.exchange(self.message(M.CREATE_RDMA_CONNECTION_REQUEST,
                                          RdmaConnectionPayload(index, role, blob)))
        if resp.type is M.CREATE_RDMA_CONNECTION_RESPONSE:
            p = resp.payload
            assert isinstance(p, RdmaConnectionPayload)
            assert (p.context_idx, p.known_role) == (index, role)
            c.ctx(role).connect(p.connection_details, conn)
            c.conns[role] = conn
        return resp

    def connect_all(self) -> None:
        for i in range(len(self.cores)):
            for role in (RdmaConnectionRole.IO_DATA, RdmaConnectionRole.IO_CONTROL):
                resp = self.connect(i, role)
                assert resp.type is M.CREATE_RDMA_CONNECTION_RESPONSE, resp

    def wait(self, cond: Callable[[], bool], what: str) -> None:
        end = time.monotonic() + DEADLINE
        while not cond():
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting for {what}")
            self.pe.wait(0.2)

    def start(self) -> None:
        self.wait(lambda: all(c.ctrl.get_state() == CtxState.RUNNING and c.data.get_state() == CtxState.RUNNING
                              for c in self.cores), "the requester's contexts to run")
        self.call(M.START_STORAGE_REQUEST)

    def setup(self) -> StorageDetails:
        """query, init, all connections, start."""
        details = self.query()
        self.init()
        self.connect_all()
        self.start()
        return details

    # -- io --------------------------------------------------------------------------------
    def io(self, core: int, msgs: Sequence[IoMessage | bytes]) -> list[IoMessage]:
        """Send *msgs* (pipelined, at most ``transactions`` at once) on core *core*'s io_control
        connection; the responses in the order of *msgs* (matched by ``user_data``)."""
        assert len(msgs) <= self.transactions
        c = self.cores[core]
        conn = c.conns[RdmaConnectionRole.IO_CONTROL]
        n = len(msgs)
        start = len(c.done)
        self.io_mem[:] = bytes(len(self.io_mem))
        recv_bufs: list[d.Buf] = []
        tasks: list[d.Task] = []
        for i in range(n):
            b = self.inv.buf_get_by_addr(self.io_mm, self.io_base + (n + i) * IO_MESSAGE_SIZE, IO_MESSAGE_SIZE)
            recv_bufs.append(b)
            rt = c.ctrl.task_receive_allocate_init(b)
            rt.submit()
            tasks.append(rt)
        send_bufs = []
        for i, m in enumerate(msgs):
            raw = m.pack() if isinstance(m, IoMessage) else bytes(m)
            self.io_mem[i * IO_MESSAGE_SIZE:i * IO_MESSAGE_SIZE + len(raw)] = raw
            b = self.inv.buf_get_by_data(self.io_mm, self.io_base + i * IO_MESSAGE_SIZE, len(raw))
            send_bufs.append(b)
            t2 = c.ctrl.task_send_allocate_init(conn, b)
            t2.submit()
            tasks.append(t2)
        self.wait(lambda: len(c.done) >= start + 2 * n, "io responses")
        events = c.done[start:]
        bad = [(k, t.get_status().name) for k, t in events if k.endswith("error")]
        assert not bad, bad
        responses = []
        for k, t in events:
            if k == "received":
                assert isinstance(t, RdmaTaskReceive) and t.get_result_len() == IO_MESSAGE_SIZE
                dst = t.get_dst_buf()
                assert dst is not None
                responses.append(IoMessage.unpack(dst.data_view()))
        for task in tasks:
            task.free()
        for b in recv_bufs + send_bufs:
            b.dec_refcount()
        by_ud = {r.user_data: r for r in responses}
        assert len(by_ud) == n, responses
        out = []
        for i, m in enumerate(msgs):
            ud = m.user_data if isinstance(m, IoMessage) else IoMessage.unpack(bytes(m).ljust(64, b"\0")).user_data
            out.append(by_ud[ud])
        return out

    def read(self, core: int, storage_offset: int, requester_offset: int, size: int, user_data: int = 1) -> int:
        """One read; its result code."""
        (r,) = self.io(core, [IoMessage(IoMessageType.READ, user_data, 0, size, requester_offset, storage_offset)])
        return r.result

    def write(self, core: int, storage_offset: int, requester_offset: int, size: int, user_data: int = 1) -> int:
        """One write; its result code."""
        (r,) = self.io(core, [IoMessage(IoMessageType.WRITE, user_data, 0, size, requester_offset, storage_offset)])
        return r.result

    def close(self) -> None:
        self.channel.close()
        for c in self.cores:
            c.ctrl.close()
            c.data.close()
        self.inv.close()
        self.pe.close()
        self.mm.close()
        self.io_mm.close()
        self.dev.close()


def _child(port: int, cores: int, io: bool = True) -> int:
    """Set a session up, do one read per core (none with *io* false: an idle session, as the gga bridge's
    with its parity target in a read-only run), print ``ready`` and wait to be killed."""
    req = Requester(port, cores=cores)
    details = req.setup()
    for i in range(cores if io else 0):
        assert req.read(i, 0, 0, details.block_size) == 0
    print("ready", flush=True)
    sys.stdin.readline()
    req.close()
    return 0


if __name__ == "__main__":
    sys.exit(_child(int(sys.argv[1]), int(sys.argv[2]), io="--no-io" not in sys.argv[3:]))
