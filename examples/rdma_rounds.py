"""A multi-round host <-> DPU RDMA application, run on the emulator by the test kit: a seed replays it.

Each round, the host fills its buffer with the round's data, posts a receive and sends ``ready <round>``;
the DPU reads the buffer with ``READS`` RDMA reads (pipelined on the connection's send queue) and answers
the CRC-32 of what it read with an RDMA send; the host checks it. The first failed task ends the run on
both sides: the side that saw it tells the other out of band, and each side returns how far it got and
the faults the emulator injected into its tasks.

Run both sides on the emulator (``doca_py.testing.DocaPair``: one process per side)::

    python examples/rdma_rounds.py --rounds 40                                  # every round passes
    python examples/rdma_rounds.py --rounds 40 --faults rdma_read=0.05 --seed 7  # a read fails ...
    python examples/rdma_rounds.py --rounds 40 --faults rdma_read=0.05 --seed 7  # ... the same one, again

With faults, whichever round fails and whichever task is failed depend on the seed only: completions
still arrive in batches that depend on timing between the two processes (and shuffling reorders each
batch), but each fault is decided by the seed and the task's identity (its side, its ctx, its number
among the ctx's tasks of its type), never by what ran before (see docs/testing.md, "Replay").

The sides run in lockstep, and each side decides every fault of a round before the other side can go
on: the host launches its receive (one ``progress()``) before it says ``ready``, and the DPU's reads,
next receive and send follow one another. So the tasks that are started, and hence the faults that can
be injected, are the same in every run; only the moments differ.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from collections.abc import Callable
from typing import Any

import doca_py as d
from doca_py.rdma import Rdma
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

BLOCK = 4096
"""Bytes per read."""
READS = 2
"""Reads per round."""
MSG = 64
"""Bytes of a message buffer."""
TIMEOUT = 30.0
"""Seconds any one wait may take."""

Send = Callable[[Any], None]
Recv = Callable[[float], Any]


def round_data(n: int) -> bytes:
    """The host's buffer in round *n*."""
    return random.Random(n).randbytes(READS * BLOCK)


class _Tasks:
    """Completion bookkeeping of one side: the tasks that completed, with their status."""

    def __init__(self) -> None:
        self.done: dict[Any, d.ErrorCode] = {}

    def ok(self, task: Any, user_data: Any, ctx_user_data: Any) -> None:
        self.done[user_data] = d.ErrorCode.SUCCESS
        task.free()

    def err(self, task: Any, user_data: Any, ctx_user_data: Any) -> None:
        self.done[user_data] = task.get_status()
        task.free()


class PeerFailed(Exception):
    """The other side said it failed (out of band)."""


def _wait(pe: d.Pe, cond: Callable[[], bool], recv: Recv, what: str) -> None:
    """Progress *pe* until *cond()*; a ``failed`` word from the peer raises ``PeerFailed``."""
    end = time.monotonic() + TIMEOUT
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(f"no {what} within {TIMEOUT} s")
        pe.wait(0.01)
        if cond():
            return
        try:
            word = recv(0)
        except TimeoutError:
            continue
        raise PeerFailed(f"the peer failed in round {word[1]}" if word[0] == "failed" else f"peer said {word!r}")


def _tell(send: Send, word: Any) -> None:
    """Send *word* to the peer, which may have ended already (it failed too, and returned)."""
    try:
        send(word)
    except (EOFError, OSError):
        pass


def _failure(t: _Tasks, n: int) -> tuple[int, str, str] | None:
    """``(round, task, status)`` of the first task that failed (its ctx then flushes the rest), or ``None``."""
    for key, status in t.done.items():
        if status != d.ErrorCode.SUCCESS:
            return n, key[0], status.name
    return None


def _outcome(rounds: int, failed: tuple[int, str, str] | None) -> dict[str, Any]:
    from doca_py.emulated import strict

    return {"rounds": rounds, "failed": failed, "faults": strict.injected()}


def _setup(dev: d.Dev, pe: d.Pe, t: _Tasks, perms: A) -> Rdma:
    rdma = Rdma(dev)
    pe.connect_ctx(rdma)
    rdma.set_permissions(perms)
    rdma.task_receive_set_conf(t.ok, t.err, 2)
    rdma.task_send_set_conf(t.ok, t.err, 2)
    rdma.task_read_set_conf(t.ok, t.err, READS)
    rdma.start()
    return rdma


def run_host(dev: d.Dev, send: Send, recv: Recv, rounds: int) -> dict[str, Any]:
    """The host's side: *rounds* rounds; how many passed, the failure (round, task, status) and the faults."""
    t = _Tasks()
    failed: tuple[int, str, str] | None = None
    passed = 0
    with d.Pe() as pe, d.BufInventory(4) as inv:
        rdma = _setup(dev, pe, t, A.LOCAL_READ_WRITE | A.RDMA_READ)
        mm = d.Mmap()
        mem = mm.allocate(READS * BLOCK + 2 * MSG)
        mm.set_permissions(A.LOCAL_READ_WRITE | A.RDMA_READ)
        mm.add_dev(dev)
        mm.start()
        base = mm.get_memrange()[0]
        blob, conn = rdma.export()
        send(("hello", blob, mm.export_rdma(dev)))
        _, peer_blob = recv(TIMEOUT)
        rdma.connect(peer_blob, conn)
        _wait(pe, lambda: rdma.get_state() == CtxState.RUNNING, recv, "RUNNING")  # 2.6: once connected
        try:
            for n in range(1, rounds + 1):
                mem[:READS * BLOCK] = round_data(n)
                answer = inv.buf_get_by_addr(mm, base + READS * BLOCK, MSG)
                ready = inv.buf_get_by_data(mm, base + READS * BLOCK + MSG, MSG)
                word = f"ready {n}".encode()
                mem[READS * BLOCK + MSG:READS * BLOCK + MSG + len(word)] = word
                ready.set_data(ready.get_data(), len(word))
                rdma.task_receive_allocate_init(answer, user_data=("receive", n)).submit()
                pe.progress()  # the receive is posted (its fault decided) before the DPU hears of the round
                failed = _failure(t, n)
                if failed is None:
                    rdma.task_send_allocate_init(conn, ready, user_data=("send", n)).submit()
                    try:
                        _wait(pe, lambda: ("receive", n) in t.done and ("send", n) in t.done
                              or _failure(t, n) is not None, recv, f"round {n}")
                    except PeerFailed:
                        failed = (n, "peer", "")
                        break
                    failed = _failure(t, n)
                if failed is None:
                    got = bytes(answer.data_view())
                    if got != f"crc {zlib.crc32(round_data(n))}".encode():
                        failed = (n, "crc", got.decode(errors="replace"))
                if failed is not None:
                    _tell(send, ("failed", n))
                    break
                answer.dec_refcount()
                ready.dec_refcount()
                t.done.clear()
                passed = n
        finally:
            rdma.close()  # stops the ctx and frees its tasks (flushed ones too)
            del mem
            mm.close()
    return _outcome(passed, failed)


def run_dpu(dev: d.Dev, send: Send, recv: Recv, rounds: int) -> dict[str, Any]:
    """The DPU's side: reads the host's buffer and answers its CRC, round by round."""
    t = _Tasks()
    failed: tuple[int, str, str] | None = None
    passed = 0
    with d.Pe() as pe, d.BufInventory(2 * READS + 4) as inv:
        rdma = _setup(dev, pe, t, A.LOCAL_READ_WRITE)
        mm = d.Mmap()
        mem = mm.allocate(READS * BLOCK + 2 * MSG)
        mm.add_dev(dev)
        mm.start()
        base = mm.get_memrange()[0]
        _, peer_blob, mmap_blob = recv(TIMEOUT)
        blob, conn = rdma.export()
        send(("hello", blob))
        rdma.connect(peer_blob, conn)
        _wait(pe, lambda: rdma.get_state() == CtxState.RUNNING, recv, "RUNNING")
        remote = d.Mmap.create_from_export(mmap_blob, dev)
        rbase = remote.get_memrange()[0]

        def post_receive(n: int) -> d.Buf:
            buf = inv.buf_get_by_addr(mm, base + READS * BLOCK, MSG)
            rdma.task_receive_allocate_init(buf, user_data=("receive", n)).submit()
            pe.progress()  # posted now: its fault is decided before the crc goes out
            return buf

        def step(keys: list[Any], n: int) -> tuple[int, str, str] | None:
            _wait(pe, lambda: all(k in t.done for k in keys) or _failure(t, n) is not None, recv, f"round {n}")
            return _failure(t, n)

        try:
            msg = post_receive(1)
            failed = _failure(t, 0)
            for n in range(1, rounds + 1):
                if failed is not None:
                    break
                failed = step([("receive", n)], n)
                if failed is not None:
                    break
                if bytes(msg.data_view()) != f"ready {n}".encode():
                    failed = (n, "ready", bytes(msg.data_view()).decode(errors="replace"))
                    break
                msg.dec_refcount()
                t.done.clear()
                dsts = []
                for j in range(READS):
                    src = inv.buf_get_by_data(remote, rbase + j * BLOCK, BLOCK)
                    dst = inv.buf_get_by_addr(mm, base + j * BLOCK, BLOCK)
                    rdma.task_read_allocate_init(conn, src, dst, user_data=("read", n, j)).submit()
                    dsts.append((src, dst))
                failed = step([("read", n, j) for j in range(READS)], n)
                if failed is not None:
                    break
                data = b"".join(bytes(dst.data_view()) for _, dst in dsts)
                for src, dst in dsts:
                    src.dec_refcount()
                    dst.dec_refcount()
                if n < rounds:
                    msg = post_receive(n + 1)
                    failed = _failure(t, n)
                    if failed is not None:
                        break
                crc = inv.buf_get_by_data(mm, base + READS * BLOCK + MSG, MSG)
                word = f"crc {zlib.crc32(data)}".encode()
                mem[READS * BLOCK + MSG:READS * BLOCK + MSG + len(word)] = word
                crc.set_data(crc.get_data(), len(word))
                rdma.task_send_allocate_init(conn, crc, user_data=("send", n)).submit()
                failed = step([("send", n)], n)
                if failed is not None:
                    break
                crc.dec_refcount()
                for k in [k for k in t.done if k[0] != "receive"]:
                    del t.done[k]
                passed = n
        except PeerFailed:
            failed = (passed + 1, "peer", "")
        finally:
            if failed is not None and failed[1] != "peer":
                _tell(send, ("failed", failed[0]))
            rdma.close()
            remote.close()
            del mem
            mm.close()
    return _outcome(passed, failed)


def host(side: Any) -> dict[str, Any]:
    """The host's function for ``DocaPair.run`` (``side.args``: the number of rounds)."""
    return run_host(side.dev, side.send, side.recv, side.args)


def dpu(side: Any) -> dict[str, Any]:
    """The DPU's function for ``DocaPair.run``."""
    return run_dpu(side.dev, side.send, side.recv, side.args)


def first_failure(host_result: dict[str, Any], dpu_result: dict[str, Any]) -> int | None:
    """The round in which the run failed (``None``: every round passed): that of a side a fault was
    injected into, when one was (the other side learns of it only later, when its timing allows: it may
    or may not have finished the same round), else the earliest failure."""
    failed = [r for r in (host_result, dpu_result) if r["failed"] is not None]
    rounds = [r["failed"][0] for r in failed if r["faults"]] or [r["failed"][0] for r in failed]
    return min(rounds) if rounds else None


def main(argv: list[str] | None = None) -> int:
    from doca_py.testing import DocaPair, Knobs

    parser = argparse.ArgumentParser(description="Multi-round host <-> DPU RDMA read + send, on the emulator")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--faults", default=None, help="DOCA_PY_EMU_FAULTS spec, e.g. rdma_read=0.05")
    parser.add_argument("--seed", type=int, default=None, help="DOCA_PY_EMU_SEED (random when not given)")
    args = parser.parse_args(argv)
    knobs = Knobs.resolve(seed=args.seed, faults=args.faults)
    print(f"knobs: {knobs.describe()}")
    h, p = DocaPair(knobs).run(host, dpu, timeout=120, args=args.rounds)
    for role, r in (("host", h), ("dpu", p)):
        print(f"{role}: {r['rounds']} rounds passed, failure: {r['failed']}, faults injected: {r['faults']}")
    failed = first_failure(h, p)
    print("every round passed" if failed is None else f"the run failed in round {failed}")
    return 0 if failed is None else 1


if __name__ == "__main__":
    sys.exit(main())
