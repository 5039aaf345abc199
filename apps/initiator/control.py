"""The initiator's control phase and run (storage-apps-spec §3.7 "Initiator", §7, §8.1).

Order: connect (comch client) → query → allocate and PCI-export the io region → init →
workers (producer + consumer each, created one after the other so that the service sees
their consumers in worker order) and wait for the service's consumers → start → data path
→ stop → report → workers destroyed → shutdown → wait until the service's consumers expired.

Failures before the data path are fatal (``EXCEPTION: …``, status 1). During and after
it, problems are collected: the report says ``Test failed!!`` and the status is 1, but
stop/shutdown are still performed while the service is reachable. Ctrl-C stops every
wait within 100 ms; after it, each remaining control step gets a share of a 1.5 s budget.

Every wait is bounded, every control wait by ``--control-timeout``: the connection, each control
response (the reference waits a fixed 5 s, its default), the data-path set-up and the expiry of the
service's consumers; each IO by ``--io-timeout`` (the workers end the run with the IOs that timed
out); ``stop_storage_response`` as long as an IO too (:func:`stop_response_timeout`): a bridge finds a
stalled target that no IO waited for (a parity target under plain reads) only when it relays the
stop, after its ``--target-io-timeout``. After an IO timeout the service is given ``--control-timeout``
to answer ``stop_storage_request``; if it does not, it is taken as unresponsive and the shutdown is
skipped, so a stopped service ends the run within the IO deadline plus ``--control-timeout``.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from contextlib import ExitStack
from typing import Any, TextIO, cast

import doca_py as d
from doca_py.errors import DocaError, ErrorCode

from apps.common.runtime.stall import stall_note
from apps.storage.channels.control_channel import ControlChannel
from apps.common.cli.argp import version_text
from apps.storage.channels.comch_transport import ComchTransport, connect_comch_client
from apps.storage.wire.control import ControlMessage, IdAllocator, InitStorage, MessageType, Payload, StorageDetails, \
    check_response
from apps.common.runtime.device import open_device
from apps.common.errors import PeerClosedError, ProtocolError, StorageAppError
from apps.common.runtime.live_stats import live_stats
from apps.common.runtime.stats import FAILED_BANNER

from .config import IO_TIMEOUT_DEFAULT, InitiatorAppConfig
from .metrics import IntervalLatency, ProgressLine
from .plan import WorkerPlan, load_expected, plan_workers, strategy_steps
from .report import JobResult, RunReport, build_json_report, format_normal_report
from .worker import Worker

__all__ = ["APP_NAME", "Initiator", "ABORT_BUDGET", "stop_response_timeout"]

APP_NAME = "doca_storage_initiator_comch"
ABORT_BUDGET = 1.5
"""Seconds the control steps may still take after Ctrl-C (so the program ends within 2 s)."""
_TICK = 0.05
_WORKER_JOIN = 3.0


def stop_response_timeout(io_timeout: int, control_timeout: int) -> float:
    """Seconds to wait for ``stop_storage_response``: as long as for an IO (``--io-timeout``; its
    default when that is 0), never less than for any control response (``--control-timeout``).

    The rule: a bridge answers stop within its ``--target-io-timeout`` plus
    :data:`apps.storage.runtime.service_control.STOP_DRAIN_MIN` (it takes a target that has not
    answered the relayed stop by then out), and ``--io-timeout`` is kept above the bridge's
    ``--target-io-timeout`` (8 s against 5 s by default), as for the reads it serves degraded.
    """
    return float(max(control_timeout, io_timeout or IO_TIMEOUT_DEFAULT))

_log = logging.getLogger("apps.initiator")
M = MessageType


class Initiator:
    """One run of the initiator with *config*; :meth:`run` returns the exit status."""

    def __init__(self, config: InitiatorAppConfig, *, abort: threading.Event | None = None,
                 out: TextIO | None = None, err: TextIO | None = None, tty: bool | None = None) -> None:
        self.config = config
        self.abort = abort if abort is not None else threading.Event()
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.tty = self.err.isatty() if tty is None else tty
        self.json = config.output_format == "json"
        self._mids = IdAllocator()
        self._cids = IdAllocator()
        self._abort_at: float | None = None
        self._channel: ControlChannel | None = None
        self._transport: ComchTransport | None = None
        self._peer_lost = False
        self._unresponsive = False
        self._workers: list[Worker] = []
        self._stuck = False
        self.report: RunReport | None = None

    # -- output -----------------------------------------------------------------------------------------
    def _info(self, text: str) -> None:
        """Banner and configuration: stdout normally, stderr with JSON output (stdout is the document)."""
        stream = self.err if self.json else self.out
        stream.write(text + "\n")
        stream.flush()

    def _error(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()

    def _print_config(self) -> None:
        c = self.config
        self._info("Configuration: {")
        for name in ("device", "cpu", "storage_plain_content", "execution_strategy", "run_limit_operation_count",
                     "transaction_count", "command_channel_name", "control_timeout", "local_io_region_size",
                     "blocks_per_io", "output_format"):
            value = getattr(c, name)
            shown = ", ".join(str(v) for v in value) if isinstance(value, list) else \
                "" if value is None else str(value)
            self._info(f"\t{name.replace('_', '-')} : \"{shown}\",")
        self._info("}")

    # -- abort ------------------------------------------------------------------------------------------
    def _aborting(self) -> bool:
        if self.abort.is_set():
            if self._abort_at is None:
                self._abort_at = time.monotonic()
            return True
        return False

    def _budget(self, normal: float) -> float:
        """*normal*, or what is left of the post-abort budget."""
        if not self._aborting():
            return normal
        assert self._abort_at is not None
        return max(0.05, min(normal, ABORT_BUDGET - (time.monotonic() - self._abort_at)))

    # -- control requests -------------------------------------------------------------------------------
    def _request(self, mtype: MessageType, payload: Payload | None = None,
                 timeout: float | None = None) -> ControlMessage:
        """Send *mtype* and wait for its response, *timeout* seconds (default: ``--control-timeout``)."""
        channel = self._channel
        assert channel is not None
        if timeout is None:
            timeout = float(self.config.control_timeout)
        msg = ControlMessage(mtype, self._mids.next(), self._cids.next(), payload)
        abortable = not self._aborting()
        timeout = self._budget(timeout)
        try:
            channel.send(msg)
            response = channel.receive(timeout, should_abort=self.abort.is_set if abortable else None,
                                       tick=_TICK)
        except PeerClosedError:
            self._peer_lost = True
            raise PeerClosedError(f"the service closed the control connection while waiting for the "
                                  f"{mtype.response_type.wire_name}") from None
        except StorageAppError as exc:
            if exc.code == ErrorCode.TIME_OUT:
                flag = " (--control-timeout)" if timeout == self.config.control_timeout else ""
                raise StorageAppError(ErrorCode.TIME_OUT, f"no {mtype.response_type.wire_name} from the service "
                                                          f"within {timeout:g} s{flag}") from None
            raise
        return check_response(msg, response)

    def _poll_quiet(self, timeout: float, context: str) -> None:
        """Progress the control channel; messages are logged and ignored (after the data path)."""
        channel = self._channel
        if channel is None or self._peer_lost:
            return
        try:
            msg = channel.poll(timeout)
        except PeerClosedError:
            self._peer_lost = True
            return
        if msg is not None:
            _log.warning("ignoring %s received %s", msg, context)

    # -- run --------------------------------------------------------------------------------------------
    def run(self) -> int:
        """Run the whole test; the exit status (0: passed). Fatal errors raise."""
        self._info(version_text(APP_NAME))
        self._print_config()
        with ExitStack() as stack:
            status = self._session(stack)
        return status

    def _session(self, stack: ExitStack) -> int:
        cfg = self.config
        steps = strategy_steps(cfg.execution_strategy)
        dev = open_device(cfg.device)
        stack.callback(self._close_unless_stuck, dev)  # a Dev closes its children: not from this thread
        pe = d.Pe()
        stack.callback(self._close_unless_stuck, pe)
        channel, client = connect_comch_client(dev, cfg.command_channel_name, pe, timeout=float(cfg.control_timeout),
                                               should_abort=self.abort.is_set)
        stack.callback(self._close_unless_stuck, client)
        stack.callback(channel.close)
        self._channel = channel
        self._transport = cast(ComchTransport, channel.transport)

        # Query.
        details = self._request(M.QUERY_STORAGE_REQUEST).payload
        assert isinstance(details, StorageDetails)
        capacity, block_size = details.total_size, details.block_size
        if block_size == 0 or capacity == 0:
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"the service reports a storage of {capacity} bytes in "
                                                           f"blocks of {block_size} bytes")
        io_size = block_size * cfg.blocks_per_io
        if io_size > 0xFFFFFFFF:
            raise StorageAppError(ErrorCode.INVALID_VALUE, f"an IO of {cfg.blocks_per_io} blocks of {block_size} "
                                                           f"bytes does not fit in the u32 io_size")
        _log.info("storage: %d bytes in blocks of %d bytes; IO size %d", capacity, block_size, io_size)
        expected = load_expected(cfg.execution_strategy, cfg.storage_plain_content, capacity)

        # The io region, exported to the service over PCI.
        region_size = cfg.local_io_region_size or capacity
        t_sent = min(cfg.transaction_count, cfg.run_limit_operation_count)
        plans = plan_workers(cfg.cpu, region_size, capacity, io_size, t_sent, cfg.run_limit_operation_count)
        region_mmap = d.Mmap()
        stack.callback(self._close_unless_stuck, region_mmap)
        region = region_mmap.allocate(region_size)
        region_mmap.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE
                                    | d.AccessFlag.RDMA_READ | d.AccessFlag.RDMA_WRITE)
        region_mmap.add_dev(dev)
        region_mmap.start()
        blob = region_mmap.export_pci(dev)

        # Init, then the data-path objects.
        self._request(M.INIT_STORAGE_REQUEST, InitStorage(t_sent, len(cfg.cpu), blob))
        stack.callback(self._teardown_workers)
        self._launch_workers(plans, steps, io_size, dev, client, region, expected)

        # Start and run.
        self._request(M.START_STORAGE_REQUEST)
        latency = IntervalLatency(lambda: [r for w in self._workers for r in w.result.io.values()])
        with live_stats(APP_NAME, cfg.stats_interval, cfg.stats_format, stream=self.err, latency=latency):
            report = self._run_data_path(plans, io_size, block_size, capacity)
        self.report = report

        # Stop, report, destroy the workers, shut down.
        timed_out = sum(len(w.timed_out) for w in self._workers)
        if not self._peer_lost:
            try:
                # After IO timeouts the service is suspect: a control wait, not an IO's.
                self._request(M.STOP_STORAGE_REQUEST, timeout=None if timed_out
                              else stop_response_timeout(cfg.io_timeout, cfg.control_timeout))
            except StorageAppError as exc:
                report.errors.append(f"stop_storage_request failed: {exc}")
                if timed_out and exc.code == ErrorCode.TIME_OUT:
                    self._unresponsive = True
        if timed_out and self._unanswered():
            report.errors.append(f"{timed_out} IO(s) timed out: no answer within the comch retry window")
        elif timed_out:
            report.errors.append(f"{timed_out} IO(s) timed out after {cfg.io_timeout} s (--io-timeout)"
                                 + ("; the service does not answer" if self._unresponsive else ""))
        self._print_report(report)
        self._teardown_workers()
        if self._peer_lost:
            self._error(self._lost_text()[:1].upper() + self._lost_text()[1:] + "; shutdown skipped")
            return 1
        if self._unresponsive:
            self._error("The service does not answer; shutdown skipped")
            return 1
        try:
            self._request(M.SHUTDOWN_REQUEST)
            self._wait_consumers_expired(len(plans))
        except StorageAppError as exc:
            self._error(f"shutdown failed: {exc}")
            return 1
        return 1 if report.failed else 0

    # -- workers ------------------------------------------------------------------------------------------
    def _launch_workers(self, plans: list[WorkerPlan], steps: tuple[Any, ...], io_size: int, dev: d.Dev,
                        client: d.ComchClient, region: memoryview, expected: bytes | None) -> None:
        transport = self._transport
        assert transport is not None
        timeout = float(self.config.control_timeout)
        deadline = time.monotonic() + timeout
        connection = client.get_connection()
        for plan in plans:
            w = Worker(plan, steps=steps, io_size=io_size, dev=dev, connection=connection, region=region,
                       expected=expected, io_timeout=float(self.config.io_timeout))
            self._workers.append(w)
            w.launch()
            # One at a time: the service pairs its workers with our consumers in arrival order.
            while not w.ready.is_set():
                self._poll_init(deadline, timeout)
            if w.error is not None:
                raise StorageAppError(ErrorCode.INITIALIZATION, w.error)
        while len(transport.remote_consumer_ids) < len(plans):
            self._poll_init(deadline, timeout)
        _log.info("data path ready: local consumers %s, remote consumers %s",
                  [w.consumer_id for w in self._workers], transport.remote_consumer_ids[:len(plans)])

    def _poll_init(self, deadline: float, timeout: float) -> None:
        if self._aborting():
            raise StorageAppError(ErrorCode.CONNECTION_ABORTED, "Aborted: User requested abort")
        left = deadline - time.monotonic()
        if left <= 0:
            transport = self._transport
            seen = 0 if transport is None else len(transport.remote_consumer_ids)
            ready = sum(1 for w in self._workers if w.ready.is_set() and w.error is None)
            raise StorageAppError(ErrorCode.TIME_OUT,
                                  f"Timed out after {timeout:g} s waiting for the data path: {seen} of "
                                  f"{len(self.config.cpu)} remote consumers announced, {ready} of "
                                  f"{len(self.config.cpu)} local workers ready")
        channel = self._channel
        assert channel is not None
        try:
            msg = channel.poll(min(_TICK, left))
        except PeerClosedError:
            self._peer_lost = True
            raise PeerClosedError("the service closed the control connection while the data path was being "
                                  "set up") from None
        if msg is not None:
            raise StorageAppError(ErrorCode.UNEXPECTED, f"Received unexpected {msg.type.wire_name} while "
                                                        f"initialising")

    def _teardown_workers(self) -> None:
        """Destroy every worker's objects (on its thread) and join it (idempotent)."""
        for w in self._workers:
            w.teardown()
        for w in self._workers:
            timeout = self._budget(_WORKER_JOIN)
            deadline = time.monotonic() + timeout
            while not w.exited.is_set() and time.monotonic() < deadline:
                # Keep the client's PE progressing (consumer-expiry events, disconnects).
                if self._channel is not None and not self._peer_lost:
                    self._poll_quiet(_TICK, "while stopping the workers")
                else:
                    w.exited.wait(_TICK)
            if not w.join(0.5):
                self._stuck = True
                _log.error("worker %d did not stop within %.1f s", w.index, timeout)

    def _close_unless_stuck(self, obj: d.Dev | d.Pe | d.ComchClient | d.Mmap) -> None:
        if self._stuck:
            return  # a worker thread still uses children of these objects: leave them to the process exit
        try:
            obj.close()
        except DocaError as exc:
            _log.debug("closing %s: %s", type(obj).__name__, exc)

    # -- data path ------------------------------------------------------------------------------------------
    def _run_data_path(self, plans: list[WorkerPlan], io_size: int, block_size: int, capacity: int) -> RunReport:
        cfg = self.config
        transport = self._transport
        assert transport is not None
        workers = self._workers
        total = sum(p.run_limit for p in plans)
        eta = cfg.eta
        progress = ProgressLine(total_ops=total, io_size=io_size, tty=eta == "always" or (eta == "auto" and self.tty),
                                interval=float(cfg.status_interval), workers=len(workers))
        show = eta != "never"
        start = time.monotonic()
        progress.start(start)
        for w, cid in zip(workers, transport.remote_consumer_ids):
            w.go(cid)
        stopped = False
        while not all(w.finished.is_set() for w in workers):
            if not stopped and (self._aborting() or self._peer_lost):
                for w in workers:
                    w.stop()
                stopped = True
            if self._peer_lost:
                # The last one may have finished since the loop's test: then there is none to wait on.
                running = next((w for w in workers if not w.finished.is_set()), None)
                if running is not None:
                    running.finished.wait(_TICK)
            else:
                try:
                    self._poll_quiet(_TICK, "during the data path")
                except ProtocolError as exc:
                    self._peer_lost = True
                    _log.error("control channel: %s", exc)
            now = time.monotonic()
            if show and progress.due(now):
                self.err.write(progress.render(now, sum(w.completed for w in workers),
                                               sum(1 for w in workers if not w.finished.is_set())))
                self.err.flush()
        if show:
            self.err.write(progress.clear())
            self.err.flush()
        if any(w.unanswered for w in workers):  # the whole connection went unanswered, not one worker's
            for w in workers:
                w.name_unanswered()
        ends = [w.result.end_time for w in workers if w.result.end_time is not None]
        duration = (max(ends) if ends else time.monotonic()) - start
        jobs = [JobResult(index=w.index, cpu=w.plan.cpu, transaction_count=w.plan.transaction_count,
                          completed=w.result.completed, duration_s=duration, pe_hits=w.result.pe_hits,
                          pe_misses=w.result.pe_misses,
                          lat_min_us=w.result.lat_min_us if w.result.completed else 0,
                          lat_max_us=w.result.lat_max_us, lat_sum_us=w.result.lat_sum_us, io=w.result.io,
                          error=w.error) for w in workers]
        aborted = self._aborting()
        report = RunReport(strategy=cfg.execution_strategy, io_size=io_size, storage_block_size=block_size,
                           capacity=capacity, run_limit=cfg.run_limit_operation_count, duration_s=duration,
                           jobs=jobs, percentiles=cfg.percentiles, aborted=aborted,
                           options={"group_reporting": cfg.group_reporting})
        if self._peer_lost:
            report.errors.append(self._lost_text() + " during the run")
        return report

    def _unanswered(self) -> bool:
        return any(w.unanswered for w in self._workers)

    def _lost_text(self) -> str:
        """How the service went away: it closed the connection, or it stopped answering (a stopped or hung
        service: the transport dropped the connection after its retry window)."""
        if self._unanswered():
            return "the service did not answer within the comch retry window: the connection was dropped" + stall_note()
        return "the service closed the control connection"

    def _print_report(self, report: RunReport) -> None:
        if self.json:
            doc = build_json_report(report, version=d.__version__)
            self.out.write(json.dumps(doc, indent=2) + "\n")
            self.out.flush()
        if report.failed:
            for job in report.jobs:
                if job.error:
                    self._error(job.error)
            for problem in report.errors:
                self._error(problem)
            if report.aborted:
                done = sum(j.completed for j in report.jobs)
                self._error(f"Run aborted by the user: {done} of {report.run_limit * len(report.jobs)} "
                            f"transactions completed")
            self._error(FAILED_BANNER)
        elif not self.json:
            self.out.write(format_normal_report(report) + "\n")
            self.out.flush()

    def _wait_consumers_expired(self, cores: int) -> None:
        transport = self._transport
        assert transport is not None
        remote = set(transport.remote_consumer_ids[:cores])
        timeout = self._budget(float(self.config.control_timeout))
        deadline = time.monotonic() + timeout
        while not remote <= set(transport.expired_consumer_ids):
            left = deadline - time.monotonic()
            if left <= 0:
                raise StorageAppError(ErrorCode.TIME_OUT, f"the service's consumers did not expire within "
                                                          f"{timeout:g} s after the shutdown")
            if self._peer_lost:
                return  # gone: its consumers went with it
            self._poll_quiet(min(_TICK, left), "while waiting for the service's consumers to expire")
