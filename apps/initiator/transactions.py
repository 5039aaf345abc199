"""The transaction engine of an initiator worker (storage-apps-spec §7.2 / §8.1): its IOs, their
completions and responses, their deadlines. :class:`DataPath` is the base of
:class:`~apps.initiator.worker.Worker`, which builds the objects it runs on.

Data path: every transaction owns one 64-byte request message and one producer send
task, made once and re-used by each of its IOs (the request is packed in place); the
consumer has ``2·T_w`` receive buffers, emptied and posted again per response. An IO submits the producer send and
completes when both the send completion and the response (matched by ``user_data``)
have arrived, in either order. A response is checked: ``user_data`` in range, a
transaction waiting for it, the echoed fields unchanged, and ``result`` — an error
result is a failed IO and stops the worker (the reference ignores ``result``).

IO deadline (``--io-timeout``, not in the reference): an IO whose send completion or response
has not arrived within the deadline has **timed out**; the worker checks at least every 0.1 s
while idle (and every few thousand completions while busy), records the IOs that timed out
(:attr:`Worker.timed_out`) and stops with an error naming them, so a service that stops
answering (stopped, hung) ends the run instead of stalling it forever.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import doca_py as d
from doca_py.comch import ComchConsumerTaskPostRecv, ComchProducerTaskSend
from doca_py.errors import DocaError, ErrorCode

from apps.common.errors import StorageAppError
from apps.common.runtime.stall import LoopClock, describe_stall, stall_note
from apps.common.runtime.worker_thread import WorkerThread
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessageType, pack_io_message_into, unpack_io_message_from

from .metrics import IoRecord
from .plan import Action, AddressPool, WorkerPlan, first_difference

__all__ = ["DataPath", "WorkerResult", "DRAIN_TIMEOUT", "HEX_WINDOW", "TIMED_OUT_SHOWN"]

_log = logging.getLogger("apps.initiator")

DRAIN_TIMEOUT = 0.3
"""After an error or an abort, how long a worker waits for its IOs in flight to finish."""
HEX_WINDOW = 32
"""Bytes shown (as uppercase hex) around the first difference of a failed validation."""
TIMED_OUT_SHOWN = 8
"""IOs named in the error of an IO timeout (the rest are counted)."""
_IDLE_SLEEP = 0.1
_BUSY_CHECK = 4096
"""Completions between two deadline checks while the PE keeps finding work."""
_READ = int(IoMessageType.READ)
_WRITE = int(IoMessageType.WRITE)
_RESULT = int(IoMessageType.RESULT)
_AGAIN = ErrorCode.AGAIN
_IO_FAILED = ErrorCode.IO_FAILED
_CONNECTION_GONE = (ErrorCode.CONNECTION_RESET, ErrorCode.CONNECTION_ABORTED, ErrorCode.NOT_CONNECTED,
                    ErrorCode.IO_FAILED)
_now_ns = time.perf_counter_ns  # several times per IO: bound once


class WorkerResult:
    """What a worker measured (read by the control thread once :attr:`Worker.finished` is set)."""

    __slots__ = ("completed", "end_time", "pe_hits", "pe_misses", "lat_min_us", "lat_max_us", "lat_sum_us",
                 "io", "failed_ios")

    def __init__(self) -> None:
        self.completed = 0
        self.end_time: float | None = None
        self.pe_hits = 0
        self.pe_misses = 0
        self.lat_min_us = 0xFFFFFFFF
        self.lat_max_us = 0
        self.lat_sum_us = 0
        self.io: dict[str, IoRecord] = {"read": IoRecord(), "write": IoRecord()}
        self.failed_ios = 0


class _Txn:
    __slots__ = ("index", "step", "refs", "start_ns", "io_start_ns", "io_submit_ns", "local", "storage", "kind",
                 "task", "submit", "awaiting", "active")

    def __init__(self, index: int) -> None:
        self.index = index
        self.step = 0
        self.refs = 0
        self.start_ns = 0
        self.io_start_ns = 0
        self.io_submit_ns = 0
        self.local = 0
        self.storage = 0
        self.kind = 0
        self.task: ComchProducerTaskSend | None = None
        self.submit: Callable[[], None] | None = None  # the task's one-call submit (fast lane)
        self.awaiting = False  # a response is expected
        self.active = False



class DataPath(WorkerThread):
    """The data path of one worker thread: what :class:`~apps.initiator.worker.Worker` sets up runs here."""

    plan: WorkerPlan
    steps: tuple[Action, ...]
    io_size: int
    region: memoryview
    expected: memoryview | None
    io_timeout: float
    timed_out: list[str]
    unanswered: bool
    result: WorkerResult
    aborted: bool
    finished: threading.Event
    _connection_failed: bool
    _stop: threading.Event
    _txns: list[_Txn]
    _n_txns: int
    _retry: deque[ComchProducerTaskSend]
    _started: int
    _inflight_ios: int
    _io_read: IoRecord
    _io_write: IoRecord
    _recv_bufs: list[d.Buf]
    _mem: memoryview
    _req_base: int
    _phase: Callable[[], None]
    _one_io: bool
    _first_kind: int
    _local_ring: deque[int]
    _storage_ring: deque[int]
    _recv_submits: list[Callable[[], None]]
    _recv_resets: list[Callable[[], None]]

    def _fail(self, text: str) -> None:
        if self.error is None:
            self.error = f"{self.name}: {text}"
            _log.debug("%s", self.error)
        self._running = False

    def _end_phase(self) -> None:
        """The data path is over (or never ran): say so, then idle until the teardown."""
        self.finished.set()
        self._phase = self._finished

    def _finished(self) -> None:
        self._sleep(_IDLE_SLEEP)

    # -- data path --------------------------------------------------------------------------------------
    def _start_data_path(self, recv_tasks: list[ComchConsumerTaskPostRecv]) -> None:
        plan = self.plan
        self._local_pool: AddressPool = plan.local_pool(self.io_size)
        self._storage_pool: AddressPool = plan.storage_pool(self.io_size)
        self._local_ring, self._storage_ring = self._local_pool.ring, self._storage_pool.ring
        # The fast lane: each receive's one-call submit and its buffer's one-call reset, by slot.
        self._recv_submits = [t.submitter() for t in recv_tasks]
        self._recv_resets = [b.fast_lane().reset_data_len for b in self._recv_bufs]
        for txn in self._txns:
            if txn.task is not None:
                txn.submit = txn.task.submitter()
        self._timeout_ns = int(self.io_timeout * 1e9)
        self._clock = LoopClock(_IDLE_SLEEP)  # the deadline checks: a stop of this process is not a late service
        self._busy = _BUSY_CHECK
        steps = self.steps
        # A throughput test's transaction is one IO then FINISH: its completion finishes it and starts the
        # next IO inline (_io_complete), no step dispatch (_advance) per IO.
        self._one_io = len(steps) == 2 and steps[0] in (Action.READ, Action.WRITE) and steps[1] is Action.FINISH
        self._first_kind = _READ if steps[0] is Action.READ else _WRITE
        self._running = True
        self._phase = self._data_round
        try:
            for t in recv_tasks:
                t.submit()
            for txn in self._txns[:plan.initial_transactions]:
                self._start_txn(txn)
                if not self._running:
                    break
        except (DocaError, StorageAppError) as exc:
            self._fail(f"starting the data path failed: {exc}")

    def _data_round(self) -> None:
        """Progress while there is work; once idle, check the stop and the deadlines, then sleep
        once and return (the next step continues). Nothing here is per IO but ``progress``."""
        res = self.result
        run_limit = self.plan.run_limit
        progress = self._pe.progress  # type: ignore[union-attr]  # set while the data path runs
        retry = self._retry
        timeout_ns = self._timeout_ns
        hits = misses = 0
        try:
            while self._running and res.completed < run_limit:
                if progress():
                    hits += 1
                    if retry:
                        self._resubmit()
                    if timeout_ns:
                        self._busy -= 1
                        if not self._busy:
                            self._busy = _BUSY_CHECK
                            self._check_deadlines(timeout_ns)
                    continue
                misses += 1
                if self._stop.is_set():
                    self.aborted = True
                    self._running = False
                    break
                if timeout_ns and self._check_deadlines(timeout_ns):
                    break
                if retry:
                    self._resubmit()
                    if retry:
                        time.sleep(0.001)  # the peer has no receive posted: back off a little
                    continue
                self._sleep(_IDLE_SLEEP)
                return
        finally:
            res.pe_hits += hits
            res.pe_misses += misses
        self._end_data_path()

    def _end_data_path(self) -> None:
        res = self.result
        if res.end_time is None:
            res.end_time = time.monotonic()
        self._running = False
        retry = self._retry
        while retry:  # never submitted: not in flight
            txn = retry.popleft().user_data
            txn.awaiting = False
            self._inflight_ios -= 1
        # Let the IOs in flight finish (so no response lands in a buffer being torn down).
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while self._inflight_ios > 0 and time.monotonic() < deadline:
            self._sleep(min(_IDLE_SLEEP, max(0.0, deadline - time.monotonic())))
        self._end_phase()

    def _check_deadlines(self, timeout_ns: int) -> bool:
        """Fail the worker if an IO has been in flight for longer than the IO deadline; whether it did. After a
        stop of this process (the check came far too late) the IOs in flight get the whole deadline again."""
        stall = self._clock.tick()
        if stall:
            waiting = [t for t in self._txns if t.refs > 0]
            for t in waiting:
                t.io_start_ns += int(stall * 1e9)
            _log.warning("%s: %s%s", self.name, describe_stall(stall),
                         f"; its {len(waiting)} IO(s) in flight get their --io-timeout again from now" if waiting else "")
            return False
        now = _now_ns()
        late = [t for t in self._txns if t.refs > 0 and now - t.io_start_ns >= timeout_ns]
        if not late:
            return False
        self._timed_out(late, f"no response from the service within {self.io_timeout:g} s (--io-timeout)")
        return True

    def name_unanswered(self) -> None:
        """Once finished, when another worker learnt that the service stopped answering (`unanswered`): if
        this one only saw the connection drop (a failed receive), name its IOs in flight as timed out too."""
        assert self.finished.is_set()
        late = [t for t in self._txns if t.refs > 0]
        if self.unanswered or not self._connection_failed or not late:
            return
        self.unanswered = True
        self.error = None
        self._timed_out(late, "the service did not answer within the comch retry window (the connection was "
                              "dropped)")

    def _timed_out(self, late: list[_Txn], why: str) -> None:
        """Fail the worker naming the IOs *late* (in flight without a response) and *why*."""
        late.sort(key=lambda t: t.io_start_ns)
        self.timed_out = [f"{'read' if t.kind == _READ else 'write'} of storage offset {t.storage} "
                          f"(transaction {t.index})" for t in late]
        self.result.failed_ios += len(late)
        shown = "; ".join(self.timed_out[:TIMED_OUT_SHOWN])
        more = len(late) - TIMED_OUT_SHOWN
        self._fail(f"{len(late)} IO(s) timed out: {why}: {shown}" + (f"; and {more} more" if more > 0 else ""))

    def _resubmit(self) -> None:
        """Submit again the sends refused with AGAIN (each at most once per call)."""
        retry = self._retry
        for _ in range(len(retry)):
            task = retry.popleft()
            try:
                task.submit()
            except DocaError as exc:
                if exc.code == _AGAIN:
                    retry.append(task)  # still no receive posted: next round
                    continue
                retry.appendleft(task)  # accounted for when the data path ends
                self._fail(f"resubmitting a producer send failed: {exc}")
                return
            task.user_data.io_submit_ns = _now_ns()

    def _start_txn(self, txn: _Txn) -> None:
        self._started += 1
        txn.active = True
        txn.step = 0
        txn.start_ns = _now_ns()
        txn.local = self._local_pool.take()
        txn.storage = self._storage_pool.take()
        self._advance(txn)

    def _advance(self, txn: _Txn) -> None:
        steps = self.steps
        e = self.io_size
        while self._running:
            a = steps[txn.step]
            txn.step += 1
            if a is Action.READ or a is Action.WRITE:
                self._submit_io(txn, _READ if a is Action.READ else _WRITE)
                return
            if a is Action.COPY_EXPECTED:
                assert self.expected is not None
                self.region[txn.local:txn.local + e] = self.expected[txn.storage:txn.storage + e]
            elif a is Action.CLEAR:
                self.region[txn.local:txn.local + e] = bytes(e)
            elif a is Action.VALIDATE:
                if not self._validate(txn):
                    return
            else:  # FINISH
                self._finish(txn)
                return

    def _submit_io(self, txn: _Txn, kind: int) -> None:
        task = txn.task
        assert task is not None
        txn.kind = kind
        txn.refs = 2
        txn.awaiting = True
        pack_io_message_into(self._mem, self._req_base + txn.index * IO_MESSAGE_SIZE, kind, txn.index, 0, self.io_size,
                       txn.local, txn.storage)
        self._inflight_ios += 1
        txn.io_start_ns = _now_ns()
        try:
            task.submit()
        except DocaError as exc:
            if exc.code == _AGAIN:  # DOCA 3.x: no receive posted by the peer yet; the task stays ours
                self._retry.append(task)
            else:
                self._inflight_ios -= 1
                self._fail(f"submitting the producer send of transaction {txn.index} failed: {exc}")
                return
        txn.io_submit_ns = _now_ns()

    def _io_complete(self, txn: _Txn) -> None:
        """Both the send completion and the response of *txn*'s IO arrived: record it and take the
        transaction's next step. A throughput test's next step (FINISH, then the next transaction's IO) is
        done here inline: what ``_advance`` → ``_finish`` → ``_start_txn`` → ``_advance`` → ``_submit_io`` do."""
        self._inflight_ios -= 1
        now = _now_ns()
        (self._io_read if txn.kind == _READ else self._io_write).add(txn.io_submit_ns - txn.io_start_ns,
                                                                     now - txn.io_submit_ns)
        if not self._running:
            return
        if not self._one_io:
            self._advance(txn)
            return
        # FINISH (_finish); the IO's end is the transaction's (one clock read for both)
        res = self.result
        us = ((now - txn.start_ns) // 1000) & 0xFFFFFFFF
        res.lat_sum_us += us
        if us < res.lat_min_us:
            res.lat_min_us = us
        if us > res.lat_max_us:
            res.lat_max_us = us
        local_pool, storage_pool = self._local_pool, self._storage_pool
        local_ring, storage_ring = self._local_ring, self._storage_ring
        if len(local_ring) >= local_pool.capacity or len(storage_ring) >= storage_pool.capacity:
            local_pool.put(txn.local)  # raises the pool's error
            storage_pool.put(txn.storage)
        local_ring.append(txn.local)
        storage_ring.append(txn.storage)
        txn.active = False
        res.completed += 1
        run_limit = self.plan.run_limit
        if res.completed >= run_limit:
            res.end_time = time.monotonic()
            self._running = False
            return
        if self._started >= run_limit:
            return
        # the next transaction on this one (_start_txn)
        self._started += 1
        txn.active = True
        txn.start_ns = now  # the next transaction starts where this one ended
        if not local_ring or not storage_ring:
            txn.local = local_pool.take()  # raises PoolExhaustedError
            txn.storage = storage_pool.take()
        else:
            txn.local = local_ring.popleft()
            txn.storage = storage_ring.popleft()
        # its IO (_submit_io)
        txn.step = 1
        submit = txn.submit
        assert submit is not None
        txn.kind = kind = self._first_kind
        txn.refs = 2
        txn.awaiting = True
        pack_io_message_into(self._mem, self._req_base + txn.index * IO_MESSAGE_SIZE, kind, txn.index, 0,
                             self.io_size, txn.local, txn.storage)
        self._inflight_ios += 1
        txn.io_start_ns = _now_ns()
        try:
            submit()
        except DocaError as exc:
            if exc.code == _AGAIN:  # DOCA 3.x: no receive posted by the peer yet; the task stays ours
                assert txn.task is not None
                self._retry.append(txn.task)
            else:
                self._inflight_ios -= 1
                self._fail(f"submitting the producer send of transaction {txn.index} failed: {exc}")
                return
        txn.io_submit_ns = _now_ns()

    def _io_abandon(self, txn: _Txn) -> None:
        """The response arrived but the IO failed: stop counting it as in flight once the send
        completion has arrived too."""
        txn.refs -= 1
        if txn.refs == 0:
            self._inflight_ios -= 1

    def _validate(self, txn: _Txn) -> bool:
        e = self.io_size
        assert self.expected is not None
        got = self.region[txn.local:txn.local + e]
        want = self.expected[txn.storage:txn.storage + e]
        if got == want:
            return True
        k = first_difference(got, want) or 0
        lo = max(0, k - HEX_WINDOW // 2)
        hi = min(e, lo + HEX_WINDOW)
        self._fail(f"data validation failed: storage offset {txn.storage} (local offset {txn.local}), {e} bytes: "
                   f"first difference at byte {k}; bytes {lo}-{hi - 1}: expected "
                   f"{bytes(want[lo:hi]).hex().upper()} got {bytes(got[lo:hi]).hex().upper()}")
        return False

    def _finish(self, txn: _Txn) -> None:
        res = self.result
        us = ((_now_ns() - txn.start_ns) // 1000) & 0xFFFFFFFF
        res.lat_sum_us += us
        if us < res.lat_min_us:
            res.lat_min_us = us
        if us > res.lat_max_us:
            res.lat_max_us = us
        self._local_pool.put(txn.local)
        self._storage_pool.put(txn.storage)
        txn.active = False
        res.completed += 1
        if res.completed >= self.plan.run_limit:
            res.end_time = time.monotonic()
            self._running = False
            return
        if self._started < self.plan.run_limit:
            self._start_txn(txn)

    # -- callbacks (inside Pe.progress on this thread) -------------------------------------------------
    def _on_sent(self, task: ComchProducerTaskSend, txn: _Txn, ctx_user_data: Any) -> None:
        txn.refs -= 1
        if not txn.refs:  # the response came first
            self._io_complete(txn)

    def _on_send_error(self, task: ComchProducerTaskSend, txn: _Txn, ctx_user_data: Any) -> None:
        # Fatal, as in the reference: AGAIN is returned by submit itself, never reported here.
        status = task.get_status()
        late = [t for t in self._txns if t.refs > 0]  # before this one stops counting
        self._inflight_ios -= 1
        txn.awaiting = False
        if status == _IO_FAILED and not self.unanswered and (self._running or self._connection_failed):
            # The transport's retry window ran out: the service did not answer (stopped, hung), and the
            # connection is dropped. The IOs in flight will never have their response: name them (in
            # place of the failed receive that may have come first from the same drop).
            self.unanswered = True
            self.error = None
            self._timed_out(late or [txn], "the service did not answer within the comch retry window (the "
                                           "connection was dropped)" + stall_note())
        else:
            # A send launched in the moment the connection went down fails NOT_CONNECTED, and may come
            # before the retry window's IO_FAILED: the connection failed all the same (as for a failed
            # receive), so that IO_FAILED, here or in another worker, still names the IOs in flight.
            self._connection_failed = self._connection_failed or status in _CONNECTION_GONE
            if self._running:
                self._fail(f"producer send of transaction {txn.index} failed: {status.name}")

    def _on_recv(self, task: ComchConsumerTaskPostRecv, slot: int, ctx_user_data: Any) -> None:
        kind, user_data, result, io_size, req_off, sto_off = unpack_io_message_from(self._mem,
                                                                                 slot * IO_MESSAGE_SIZE)
        if self._running:
            self._recv_resets[slot]()
            try:
                self._recv_submits[slot]()
            except DocaError as exc:
                self._fail(f"re-posting a consumer receive failed: {exc}")
        if user_data >= self._n_txns:
            self._fail(f"response with invalid user_data {user_data} (this worker has {len(self._txns)} "
                       f"transactions)")
            return
        txn = self._txns[user_data]
        if not txn.awaiting:
            self._fail(f"unexpected response for transaction {user_data}, which has no IO in flight")
            return
        txn.awaiting = False
        if kind != _RESULT or io_size != self.io_size or req_off != txn.local or sto_off != txn.storage:
            self._fail(f"response of transaction {user_data} does not echo its request: type {kind}, io_size "
                       f"{io_size}, requester_offset {req_off}, storage_offset {sto_off} (sent io_size "
                       f"{self.io_size}, requester_offset {txn.local}, storage_offset {txn.storage})")
            self._io_abandon(txn)
            return
        if result != 0:
            self.result.failed_ios += 1
            self._io_abandon(txn)
            name = ErrorCode(result).name if result in ErrorCode._value2member_map_ else str(result)
            self._fail(f"{'read' if txn.kind == _READ else 'write'} of storage offset {txn.storage} "
                       f"(transaction {user_data}) failed: DOCA_ERROR_{name}")
            return
        txn.refs -= 1
        if not txn.refs:  # the send completion came first
            self._io_complete(txn)

    def _on_recv_error(self, task: ComchConsumerTaskPostRecv, slot: int, ctx_user_data: Any) -> None:
        if self._running:
            status = task.get_status()
            self._connection_failed = status in _CONNECTION_GONE
            self._fail(f"consumer receive failed: {status.name}")
