"""Two processes: every rdma task type across a process boundary, a peer killed mid-transfer,
and two network namespaces joined by a veth pair (when this test may create them).

Send/receive runs as a ``doca_pair`` (a host function and a DPU function). The other tests drive a
scripted child (``python -m tests.rdma.peer``) from this process, to hang or SIGKILL it at chosen
points. ``cross`` gives the child (or the DPU side) a different ``DOCA_PY_RDMA_HOST_ID``, so the
streams and one-sided access go over TCP as between two hosts.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import netns
import doca_py as d
from doca_py import errors as e
from doca_py.rdma import RdmaOpcode
from doca_py.testing import DocaPair
from doca_py.testing import Side as PairSide
from doca_py.types import CtxState

from .helpers import DEADLINE, Side, backing, close_side, make_side, rig, run, wait_for

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]


class Peer:
    """The child process, answering one line per command (every read bounded)."""

    def __init__(self, env: dict[str, str] | None = None, prefix: list[str] | None = None) -> None:
        full = dict(os.environ, DOCA_PY_IMPL="emulated", **(env or {}))
        self.p = subprocess.Popen([*(prefix or []), sys.executable, "-m", "tests.rdma.peer"], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=full)
        self.buf = b""
        words = self.line().split()
        assert words[0] == "hello", words
        self.conn_blob, self.mm_blob = bytes.fromhex(words[1]), bytes.fromhex(words[2])

    def line(self) -> str:
        """The next line the child printed (bounded wait; our own buffer over the raw pipe)."""
        assert self.p.stdout is not None
        fd = self.p.stdout.fileno()
        end = time.monotonic() + DEADLINE
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError("the peer did not answer in time")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise AssertionError(f"the peer exited (rc={self.p.poll()})")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode().strip()

    def send(self, line: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def ask(self, line: str) -> str:
        self.send(line)
        return self.line()

    def quit(self) -> None:
        if self.p.poll() is None:
            assert self.ask("quit") == "bye"
            assert self.p.wait(DEADLINE) == 0

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait(DEADLINE)
        for f in (self.p.stdin, self.p.stdout):
            if f is not None:
                f.close()


class Parent:
    def __init__(self, dev: d.Dev, pe: d.Pe, inv: d.BufInventory, peer: Peer) -> None:
        self.dev, self.pe, self.inv, self.peer = dev, pe, inv, peer
        self.side = s = make_side(dev, pe)
        s.rdma.start()
        blob, s.conn = s.rdma.export()
        peer.send(f"connect {blob.hex()} {s.mm.export_rdma(dev).hex()}")
        s.rdma.connect(peer.conn_blob, s.conn)
        self.remote = d.Mmap.create_from_export(peer.mm_blob, dev)
        self.rbase = self.remote.get_memrange()[0]
        wait_for(pe, lambda: s.rdma.get_state() == CtxState.RUNNING, "RUNNING")
        assert peer.line() == "running"

    def close(self) -> None:
        self.side.rdma.close()
        self.inv.close()
        self.remote.close()
        self.side.mm.close()


@pytest.fixture(params=["same", "cross"])
def parent(backend: str, request: pytest.FixtureRequest) -> Iterator[Parent]:
    env = {"DOCA_PY_RDMA_HOST_ID": f"child-{uuid.uuid4()}"} if request.param == "cross" else {}
    peer = Peer(env)
    try:
        with rig(128) as (dev, pe, inv):
            par = Parent(dev, pe, inv, peer)
            assert par.side.conn is not None
            assert backing(par.side.conn).same_host is (request.param == "same")
            yield par
            peer.quit()
            par.close()
    finally:
        peer.kill()


def _connected(side: PairSide) -> tuple[d.Pe, d.BufInventory, Side]:
    """This side's rdma ctx, connected to the other side's through the blobs they exchange."""
    pe, inv = d.Pe(), d.BufInventory(128)
    s = make_side(side.dev, pe)
    s.rdma.start()
    blob, s.conn = s.rdma.export()
    side.send(blob)
    s.rdma.connect(side.recv(DEADLINE), s.conn)
    wait_for(pe, lambda: s.rdma.get_state() == CtxState.RUNNING, "RUNNING")
    return pe, inv, s


def _host_sends_then_receives(side: PairSide) -> dict[str, Any]:
    pe, inv, s = _connected(side)
    assert s.conn is not None
    assert side.recv(DEADLINE) == "posted 3"
    s.mem[:5] = b"hello"
    big = os.urandom(40000)
    s.mem[4096:4096 + len(big)] = big
    tasks = [s.rdma.task_send_allocate_init(s.conn, inv.buf_get_by_data(s.mm, s.base, 5)),
             s.rdma.task_send_imm_allocate_init(s.conn, inv.buf_get_by_data(s.mm, s.base + 4096, len(big)), 99),
             s.rdma.task_send_imm_allocate_init(s.conn, None, 0xFFFFFFFF)]
    outcomes = run(pe, s, *tasks)
    # The other side -> this one, with and without immediate.
    recvs = [s.rdma.task_receive_allocate_init(inv.buf_get_by_addr(s.mm, s.base + (1 << 20) + i * 4096, 4096))
             for i in range(2)]
    for r in recvs:
        r.submit()
    pe.progress()  # receives are posted inside progress
    side.send("posted 2")
    wait_for(pe, lambda: len(s.done) == 5, "receives")
    r0, r1 = recvs
    out = {"outcomes": outcomes, "big": big, "same_host": backing(s.conn).same_host,
           "r0": (r0.get_result_opcode(), r0.get_result_len(), bytes(r0.get_dst_buf().data_view())),  # type: ignore[union-attr]
           "r1": (r1.get_result_opcode(), r1.get_result_immediate_data(), bytes(r1.get_dst_buf().data_view())),  # type: ignore[union-attr]
           "same_conn": r0.get_result_rdma_connection() is s.conn}
    assert side.recv(DEADLINE) == "done"
    close_side(s)
    inv.close()
    pe.close()
    return out


def _dpu_receives_then_sends(side: PairSide) -> tuple[list[tuple[str, int, int, int, bytes]], list[str]]:
    pe, inv, s = _connected(side)
    assert s.conn is not None
    slot = 1 << 16
    recvs = [s.rdma.task_receive_allocate_init(inv.buf_get_by_addr(s.mm, s.base + (1 << 20) + i * slot, slot))
             for i in range(3)]
    for r in recvs:
        r.submit()
    pe.progress()  # posted inside progress, before the other side sends
    side.send("posted 3")
    wait_for(pe, lambda: len(s.done) >= 3, "3 receives")
    # Receives take the messages in the order they were posted (RC).
    got = [(r.get_status().name, int(r.get_result_opcode()), r.get_result_len(), r.get_result_immediate_data(),
            bytes(r.get_dst_buf().data_view())) for r in recvs]  # type: ignore[union-attr]
    assert side.recv(DEADLINE) == "posted 2"
    sent = []
    for data, imm in ((b"from child", None), (b"imm", 12345)):
        s.mem[:len(data)] = data
        src = inv.buf_get_by_data(s.mm, s.base, len(data))
        t = s.rdma.task_send_allocate_init(s.conn, src) if imm is None else \
            s.rdma.task_send_imm_allocate_init(s.conn, src, imm)
        run(pe, s, t)
        sent.append(t.get_status().name)
    side.send("done")
    wait_for(pe, lambda: ("disconnection", s.conn) in s.events, "the other side to leave")
    close_side(s)
    inv.close()
    pe.close()
    return got, sent


@pytest.mark.parametrize("where", ["same", "cross"])
def test_send_receive_both_directions_with_and_without_imm(doca_pair: DocaPair, where: str) -> None:
    if where == "cross":  # the DPU side on another host: the streams go over TCP
        doca_pair.side_env["dpu"] = {"DOCA_PY_RDMA_HOST_ID": f"child-{uuid.uuid4()}"}
    host, (got, sent) = doca_pair.run(_host_sends_then_receives, _dpu_receives_then_sends, timeout=120)
    assert host["same_host"] is (where == "same")
    assert host["outcomes"] == ["ok"] * 3
    big = host["big"]
    assert got == [("SUCCESS", int(RdmaOpcode.RECV_SEND), 5, 0, b"hello"),
                   ("SUCCESS", int(RdmaOpcode.RECV_SEND_WITH_IMM), len(big), 99, big),
                   ("SUCCESS", int(RdmaOpcode.RECV_SEND_WITH_IMM), 0, 0xFFFFFFFF, b"")]
    assert sent == ["SUCCESS", "SUCCESS"]
    assert host["r0"] == (RdmaOpcode.RECV_SEND, 10, b"from child")
    assert host["r1"] == (RdmaOpcode.RECV_SEND_WITH_IMM, 12345, b"imm")
    assert host["same_conn"]


def test_one_sided_read_write_write_imm_both_directions(parent: Parent) -> None:
    p, s = parent, parent.side
    assert s.conn is not None
    data = os.urandom(300_000)  # larger than a stream buffer on the TCP path
    s.mem[:len(data)] = data
    src = p.inv.buf_get_by_data(s.mm, s.base, len(data))
    assert p.peer.ask(f"fill 0 {bytes(16).hex()}") == "filled"
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase + 8, len(data))
    assert run(p.pe, s, s.rdma.task_write_allocate_init(s.conn, src, dst)) == ["ok"]
    assert p.peer.ask("dump 0 16") == f"dump {(bytes(8) + data[:8]).hex()}"
    assert p.peer.ask(f"dump {8 + len(data) - 16} 16") == f"dump {data[-16:].hex()}"
    back = p.inv.buf_get_by_addr(s.mm, s.base + (1 << 20), len(data))
    rsrc = p.inv.buf_get_by_data(p.remote, p.rbase + 8, len(data))
    assert run(p.pe, s, s.rdma.task_read_allocate_init(s.conn, rsrc, back)) == ["ok"]
    assert bytes(back.data_view()) == data
    assert p.peer.ask("recv 1") == "posted"
    wdst = p.inv.buf_get_by_addr(p.remote, p.rbase + 500_000, 4)
    four = p.inv.buf_get_by_data(s.mm, s.base, 4)
    assert run(p.pe, s, s.rdma.task_write_imm_allocate_init(s.conn, four, wdst, 4242)) == ["ok"]
    assert p.peer.line() == f"rcv SUCCESS {int(RdmaOpcode.RECV_WRITE_WITH_IMM)} 4 4242 -"
    assert p.peer.ask("dump 500000 4") == f"dump {data[:4].hex()}"
    # The child as requester against our memory.
    s.mem[2000:2004] = b"\0\0\0\0"
    assert p.peer.ask(f"write 2000 {b'kid!'.hex()}") == "wrote SUCCESS"
    assert bytes(s.mem[2000:2004]) == b"kid!"
    assert p.peer.ask("read 0 32") == f"read SUCCESS {data[:32].hex()}"
    r = s.rdma.task_receive_allocate_init(None)
    r.submit()
    p.pe.progress()  # the receive is posted inside progress (we block on the child below)
    assert p.peer.ask(f"writeimm 3000 {b'imm!'.hex()} 77") == "wrote SUCCESS"
    wait_for(p.pe, lambda: s.done and s.done[-1][1] is r, "write-with-imm receive")
    assert bytes(s.mem[3000:3004]) == b"imm!" and r.get_result_immediate_data() == 77  # type: ignore[attr-defined]


def test_owner_refuses_out_of_range_and_forged_access(parent: Parent) -> None:
    import dataclasses

    p, s = parent, parent.side
    assert s.conn is not None
    sentinel = b"\x5a" * 32
    assert p.peer.ask(f"fill 0 {sentinel.hex()}") == "filled"
    h = backing(p.remote)
    h.blob = dataclasses.replace(h.blob, key=bytes(16))
    src = p.inv.buf_get_by_data(s.mm, s.base, 32)
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase, 32)
    t = s.rdma.task_write_allocate_init(s.conn, src, dst)
    assert run(p.pe, s, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED
    assert p.peer.ask("dump 0 32") == f"dump {sentinel.hex()}"


def _wait_done(pe: d.Pe, side: Side, n: int) -> None:
    wait_for(pe, lambda: len(side.done) >= n, f"{n} completions")


def test_peer_killed_mid_transfer_fails_tasks_and_reports_disconnection(backend: str) -> None:
    for mode in ("same", "cross"):
        env = {"DOCA_PY_RDMA_HOST_ID": f"child-{uuid.uuid4()}"} if mode == "cross" else {}
        peer = Peer(env)
        try:
            with rig(128) as (dev, pe, inv):
                par = Parent(dev, pe, inv, peer)
                s = par.side
                assert s.conn is not None
                peer.send("hang")  # the child posts no receive: our sends wait (RNR window 6.4 s)
                s.mem[:64] = b"x" * 64
                sends = [s.rdma.task_send_allocate_init(s.conn, inv.buf_get_by_data(s.mm, s.base, 64))
                         for _ in range(4)]
                recv = s.rdma.task_receive_allocate_init(inv.buf_get_by_addr(s.mm, s.base + 4096, 64))
                for t in (*sends, recv):
                    t.submit()
                for _ in range(3):
                    pe.progress()  # the sends start, then leave
                peer.kill()
                _wait_done(pe, s, 5)
                assert {k for k, _ in s.done} == {"err"}
                # The first completion reports the reset and stops the ctx, which flushes the rest;
                # which send completes first is not defined (DOCA promises no completion order).
                statuses = sorted(t.get_status() for t in sends)
                assert statuses == [e.ErrorCode.CONNECTION_RESET] + [e.ErrorCode.IO_FAILED] * 3, statuses
                wait_for(pe, lambda: ("disconnection", s.conn) in s.events, "disconnection callback")
                assert s.rdma.get_state() in (CtxState.STOPPING, CtxState.IDLE)
                for t in (*sends, recv):
                    t.free()
                wait_for(pe, lambda: s.rdma.get_state() == CtxState.IDLE, "IDLE")
                # New work on the dead connection fails at once instead of hanging.
                s.rdma.start()
                assert s.rdma.get_state() == CtxState.STARTING
                par.close()
        finally:
            peer.kill()


def test_two_hosts_in_network_namespaces(backend: str) -> None:
    why = netns.unavailable()
    if why is not None:
        pytest.skip(why)
    from doca_py.emulated import rdma as emu

    with netns.veth_namespace("r") as (ns, net):
        peer = Peer({"DOCA_PY_RDMA_BIND_ADDR": f"{net}.2", "DOCA_PY_RDMA_HOST_ID": f"ns-{uuid.uuid4()}"},
                    prefix=["ip", "netns", "exec", ns])
        emu.configure(bind_addr=f"{net}.1")
        try:
            with rig(64) as (dev, pe, inv):
                par = Parent(dev, pe, inv, peer)
                s = par.side
                assert s.conn is not None and not backing(s.conn).same_host
                assert backing(s.conn).peer_addr[0] == f"{net}.2"
                s.mem[:6] = b"veth!!"
                dst = inv.buf_get_by_addr(par.remote, par.rbase + 64, 6)
                assert run(pe, s, s.rdma.task_write_allocate_init(s.conn, inv.buf_get_by_data(s.mm, s.base, 6),
                                                                  dst)) == ["ok"]
                assert peer.ask("dump 64 6") == f"dump {b'veth!!'.hex()}"
                assert peer.ask("recv 1") == "posted"
                assert run(pe, s, s.rdma.task_send_imm_allocate_init(s.conn, None, 5)) == ["ok"]
                assert peer.line().startswith(f"rcv SUCCESS {int(RdmaOpcode.RECV_SEND_WITH_IMM)} 0 5")
                peer.quit()
                par.close()
        finally:
            emu.configure(bind_addr="127.0.0.1")
            peer.kill()
