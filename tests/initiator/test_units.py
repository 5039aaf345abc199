"""Sans-IO parts of the initiator: strategies, address pools, worker plans, expected content,
the §7.3 block byte for byte, fio JSON keys, percentiles, progress lines, and flag validation."""

from __future__ import annotations

import json
import threading
from array import array
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode

from apps.initiator import build_parser, parse_args
from apps.initiator.metrics import (
    DEFAULT_PERCENTILES, IoRecord, ProgressLine, direction_json, format_percentiles, parse_percentile_list,
    percentiles,
)
from apps.initiator.plan import (
    Action, AddressPool, PoolExhaustedError, first_difference, is_validity_test, load_expected, plan_workers,
    strategy_io_kinds, strategy_steps, synthesize_expected,
)
from apps.initiator.report import JobResult, RunReport, build_json_report, format_normal_report
from apps.initiator.worker import Worker
from apps.common.errors import StorageAppError
from apps.common.cli.manpages import APPS, build_manpage
from apps.common.runtime.stats import RunStats, format_run_stats

A = Action


# -- strategies and plans ---------------------------------------------------------------------------
def test_strategy_steps_follow_the_reference_masks_and_order() -> None:
    assert strategy_steps("read_throughput_test") == (A.READ, A.FINISH)
    assert strategy_steps("write_throughput_test") == (A.WRITE, A.FINISH)
    assert strategy_steps("read_only_data_validity_test") == (A.CLEAR, A.READ, A.VALIDATE, A.FINISH)
    assert strategy_steps("read_write_data_validity_test") == (A.COPY_EXPECTED, A.WRITE, A.CLEAR, A.READ,
                                                               A.VALIDATE, A.FINISH)
    assert (int(A.READ), int(A.WRITE), int(A.COPY_EXPECTED), int(A.CLEAR), int(A.VALIDATE), int(A.FINISH)) == \
        (1, 2, 1 << 28, 1 << 29, 1 << 30, 1 << 31)
    assert strategy_io_kinds("read_write_data_validity_test") == ("write", "read")
    assert not is_validity_test("write_throughput_test") and is_validity_test("read_only_data_validity_test")
    with pytest.raises(ValueError, match="unknown execution strategy"):
        strategy_steps("random_test")


def test_address_pool_is_a_bounded_fifo() -> None:
    pool = AddressPool.of_segment(base=1000, blocks=3, block_size=10, what="local")
    assert len(pool) == 3 and pool.capacity == 3
    a, b = pool.take(), pool.take()
    assert (a, b) == (1000, 1010)
    pool.put(a)
    assert [pool.take(), pool.take()] == [1020, 1000]  # round robin from the base
    with pytest.raises(PoolExhaustedError, match="the local address pool is empty") as info:
        pool.take()
    assert info.value.code == ErrorCode.NO_MEMORY
    for x in (1, 2, 3):
        pool.put(x)
    with pytest.raises(StorageAppError, match="already full"):
        pool.put(4)


def test_plan_workers_splits_segments_and_transactions() -> None:
    plans = plan_workers([4, 7, 9], local_region_size=10 * 4096, capacity=20 * 4096, effective_block_size=4096,
                         transaction_count=5, run_limit=100)
    assert [p.cpu for p in plans] == [4, 7, 9]
    assert [(p.segment.local_blocks, p.segment.storage_blocks) for p in plans] == [(4, 7), (3, 7), (3, 6)]
    assert [p.segment.local_offset for p in plans] == [0, 4 * 4096, 7 * 4096]
    assert [p.segment.storage_offset for p in plans] == [0, 7 * 4096, 14 * 4096]
    assert [p.transaction_count for p in plans] == [4, 3, 3]  # min(T, local, storage)
    pool = plans[1].storage_pool(4096)
    assert [pool.take() for _ in range(7)] == [(7 + i) * 4096 for i in range(7)]
    small = plan_workers([0], local_region_size=4096, capacity=4096, effective_block_size=4096,
                         transaction_count=64, run_limit=1)
    assert small[0].initial_transactions == 1
    with pytest.raises(StorageAppError, match="is to small to give each worker at least one block") as info:
        plan_workers([0, 1, 2], local_region_size=2 * 4096, capacity=8 * 4096, effective_block_size=4096,
                     transaction_count=4, run_limit=10)
    assert info.value.code == ErrorCode.INVALID_VALUE


def test_expected_content(tmp_path: Path) -> None:
    assert synthesize_expected(300) == bytes(range(256)) + bytes(range(44))
    assert load_expected("read_throughput_test", None, 4096) is None
    assert load_expected("read_write_data_validity_test", None, 512) == bytes(range(256)) * 2
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"\x07" * 100)
    assert load_expected("read_only_data_validity_test", plain, 100) == b"\x07" * 100
    with pytest.raises(StorageAppError, match="Validation tests require that the plain data: 100 size is the same "
                                              "as the storage capacity: 4096"):
        load_expected("read_only_data_validity_test", plain, 4096)
    with pytest.raises(StorageAppError, match="--storage-plain-content is required"):
        load_expected("read_only_data_validity_test", None, 4096)


@pytest.mark.parametrize("k", [0, 1, 63, 64, 4095])
def test_first_difference(k: int) -> None:
    a = bytes(4096)
    b = bytearray(a)
    b[k] = 1
    assert first_difference(a, bytes(b)) == k
    assert first_difference(a, a) is None


# -- the §7.3 block, percentiles, JSON ---------------------------------------------------------------
def _job(index: int, completed: int, lat: tuple[int, int, int], reads: list[int], writes: list[int]) -> JobResult:
    io = {"read": IoRecord.from_values([1000] * len(reads), reads),
          "write": IoRecord.from_values([500] * len(writes), writes)}
    return JobResult(index=index, cpu=index * 2, transaction_count=8, completed=completed, duration_s=2.0,
                     pe_hits=30 + index, pe_misses=10, lat_min_us=lat[0], lat_max_us=lat[1], lat_sum_us=lat[2], io=io)


def _report(**kw: object) -> RunReport:
    jobs = [_job(0, 3, (10, 30, 60), [100_000, 200_000, 300_000], []),
            _job(1, 1, (5, 5, 5), [400_000], [])]
    args: dict[str, object] = dict(strategy="read_throughput_test", io_size=8192, storage_block_size=4096,
                                   capacity=1 << 20, run_limit=3, duration_s=2.0, jobs=jobs,
                                   percentiles=(50.0, 99.0))
    args.update(kw)
    return RunReport(**args)  # type: ignore[arg-type]


def test_stats_block_is_byte_exact() -> None:
    expected = (
        "+================================================+\n"
        "| Stats\n"
        "+================================================+\n"
        "| Duration (seconds): 2.000000\n"
        "| Operation count: 4\n"
        "| Data rate: 0.000 GiB/s\n"
        "| IO rate: 0.000 MIOP/s\n"
        "| PE hit rate: 75.309% (61:20)\n"
        "| Latency:\n"
        "| \tMin: 5us\n"
        "| \tMax: 30us\n"
        "| \tMean: 16us\n"
        "+================================================+")
    text = format_normal_report(_report())
    assert text.startswith(expected + "\n")
    assert "read: clat percentiles (usec), 4 IOs:\n     | 50.00th=[  200], 99.00th=[  400]" in text
    big = RunStats(duration_s=1.5, operation_count=3_000_000, effective_block_size=4096, pe_hits=2, pe_misses=1,
                   latency_min_us=1, latency_max_us=99, latency_sum_us=3_000_001)
    lines = format_run_stats(big).splitlines()
    assert lines[3:8] == ["| Duration (seconds): 1.500000", "| Operation count: 3000000",
                          "| Data rate: 7.629 GiB/s", "| IO rate: 2.000 MIOP/s", "| PE hit rate: 66.667% (2:1)"]
    assert lines[-2] == "| \tMean: 1us"


def test_percentiles_are_nearest_rank_with_fio_keys() -> None:
    values = array("Q", range(1, 101))
    assert percentiles(values, (1.0, 50.0, 99.0, 99.9, 100.0)) == {
        "1.000000": 1, "50.000000": 50, "99.000000": 99, "99.900000": 100, "100.000000": 100}
    assert percentiles(array("Q"), (50.0,)) == {}
    assert parse_percentile_list("1:5:99.99") == (1.0, 5.0, 99.99)
    for bad, match in (("0", "not in"), ("101", "not in"), ("x", "not a number"), ("", "empty"),
                       (":".join(["50"] * 21), "at most 20")):
        with pytest.raises(ValueError, match=match):
            parse_percentile_list(bad)
    assert len(DEFAULT_PERCENTILES) == 17
    table = format_percentiles("clat percentiles (usec)", {"50.000000": 1500, "99.000000": 2_000_000})
    assert table == "  clat percentiles (usec):\n     | 50.00th=[    2], 99.00th=[ 2000]"


def test_fio_json_keys_and_values() -> None:
    doc = build_json_report(_report(), version="1.2.3", now=1_700_000_000.5)
    json.dumps(doc)  # serialisable
    assert {"fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs",
            "doca_storage_initiator"} <= set(doc)
    assert doc["timestamp"] == 1_700_000_000 and doc["timestamp_ms"] == 1_700_000_000_500
    assert doc["global options"]["rw"] == "read" and doc["global options"]["bs"] == "8192"
    assert [j["jobname"] for j in doc["jobs"]] == ["worker0", "worker1"]
    job = doc["jobs"][0]
    assert {"jobname", "groupid", "error", "elapsed", "job options", "read", "write", "trim", "job_runtime"} <= \
        set(job)
    read = job["read"]
    assert {"io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios", "short_ios", "drop_ios",
            "slat_ns", "clat_ns", "lat_ns"} <= set(read)
    assert read["total_ios"] == 3 and read["io_bytes"] == 3 * 8192 and read["io_kbytes"] == 24
    assert read["iops"] == pytest.approx(1.5) and read["bw_bytes"] == 12288 and read["bw"] == 12
    assert read["runtime"] == 2000
    # a bounded histogram: within half a sub-bucket (1/256) of the exact value, exact at min/max
    assert read["clat_ns"]["percentile"] == {"50.000000": pytest.approx(200_000, rel=1 / 256),
                                             "99.000000": 300_000}
    assert (read["clat_ns"]["min"], read["clat_ns"]["max"], read["clat_ns"]["N"]) == (100_000, 300_000, 3)
    assert read["clat_ns"]["mean"] == pytest.approx(200_000.0)
    assert read["lat_ns"]["min"] == 101_000 and read["slat_ns"]["mean"] == pytest.approx(1000.0)
    assert job["write"]["total_ios"] == 0 and "percentile" not in job["write"]["clat_ns"]
    ns = doc["doca_storage_initiator"]
    assert ns["status"] == "passed" and ns["operation_count"] == 4 and ns["latency_us"] == {"min": 5, "max": 30,
                                                                                         "mean": 16}
    grouped = build_json_report(_report(options={"group_reporting": True}), version="1")
    assert len(grouped["jobs"]) == 1 and grouped["jobs"][0]["read"]["total_ios"] == 4
    failed = _report(errors=["boom"])
    doc = build_json_report(failed, version="1")
    assert doc["doca_storage_initiator"]["status"] == "failed" and doc["jobs"][0]["error"] == 1
    assert direction_json(IoRecord(), 4096, 1.0, (50.0,))["iops"] == 0.0


def test_progress_lines() -> None:
    plain = ProgressLine(total_ops=1000, io_size=4096, tty=False, interval=1.0)
    plain.start(0.0)
    assert not plain.due(0.5) and plain.due(1.0)
    line = plain.render(1.0, 250, 2)
    assert line == "progress: 25.0% (250/1000 transactions), 250 IOPS, 1000.0KiB/s, elapsed 1.0s\n"
    tty = ProgressLine(total_ops=1000, io_size=4096, tty=True, interval=0.0)
    tty.start(0.0)
    assert tty.due(0.25)
    first = tty.render(0.5, 500, 2)
    assert first.startswith("\rJobs: 2: [ 50.0% done] [1.0k IOPS]") and "\n" not in first
    assert first.endswith("[eta 00m:00s]")
    assert tty.clear() == "\r" + " " * (len(first) - 1) + "\r"
    assert ProgressLine(total_ops=1, io_size=1, tty=False, interval=0.0).due(100.0) is False


# -- flags -------------------------------------------------------------------------------------------------
def _errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    with pytest.raises(SystemExit) as info:
        parse_args(argv)
    assert info.value.code == 2
    return [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]


def test_defaults_and_extra_flags(tmp_path: Path) -> None:
    cfg = parse_args(["-d", "3b:00.0", "--cpu", "0", "--execution-strategy", "read_throughput_test"])
    assert (cfg.run_limit_operation_count, cfg.transaction_count, cfg.command_channel_name, cfg.control_timeout,
            cfg.local_io_region_size, cfg.blocks_per_io) == (1_000_000, 64, "doca_storage_comch", 5, 0, 1)
    assert (cfg.output_format, cfg.eta, cfg.status_interval, cfg.group_reporting) == ("normal", "auto", 1, False)
    assert cfg.percentiles == DEFAULT_PERCENTILES
    conf = tmp_path / "init.json"
    conf.write_text(json.dumps({"doca_program_flags": {"device": "3b:00.0", "cpu": [0, 1],
                                                       "execution-strategy": "write_throughput_test",
                                                       "output-format": "json", "group-reporting": True}}))
    cfg = parse_args(["-j", str(conf), "--percentile-list", "50:99"])
    assert cfg.cpu == [0, 1] and cfg.output_format == "json" and cfg.group_reporting
    assert cfg.percentiles == (50.0, 99.0)


def test_every_problem_reported_once_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    errors = _errors(capsys, ["--cpu", "1", "--cpu", "1", "--execution-strategy", "fastest", "--transaction-count",
                              "0", "--run-limit-operation-count", "-5", "--blocks-per-io", "256",
                              "--control-timeout", "0", "--output-format", "xml", "--percentile-list", "200",
                              "--status-interval", "-1", "--local-io-region-size", "-1", "--bogus"])
    text = "\n".join(errors)
    for needle in ("unrecognized arguments: --bogus", "--device: is required", "--cpu: CPU ids must not repeat",
                   "--execution-strategy: 'fastest' is not allowed", "--transaction-count: 0 must be from 1",
                   "--run-limit-operation-count: -5: the run limit must be positive",
                   "--blocks-per-io: 256 must be from 1 to 255", "--control-timeout: 0: the control timeout",
                   "--output-format: 'xml' is not allowed", "--percentile-list: 200 is not in (0, 100]",
                   "--status-interval: -1 must not be negative", "--local-io-region-size: -1 must not be negative"):
        assert sum(needle in e for e in errors) == 1, (needle, text)
    assert len(errors) == 12
    errors = _errors(capsys, ["-d", "x", "--cpu", "0", "--execution-strategy", "read_only_data_validity_test"])
    assert errors == ["python -m apps.initiator: error: --storage-plain-content is required for "
                      "read_only_data_validity_test"]
    errors = _errors(capsys, ["-d", "x", "--cpu", "0", "--execution-strategy", "read_throughput_test",
                              "--storage-plain-content", str(tmp_path / "missing.bin")])
    assert len(errors) == 1 and "does not exist" in errors[0]


def test_help_and_man_page() -> None:
    assert "apps.initiator" in APPS
    text = build_parser().format_help()
    for flag in ("--execution-strategy", "--run-limit-operation-count", "--transaction-count", "--blocks-per-io",
                 "--storage-plain-content", "--cpu", "--command-channel-name", "--control-timeout",
                 "--local-io-region-size", "--output-format", "--percentile-list", "--eta", "--group-reporting"):
        assert flag in text
    pytest.importorskip("argparse_manpage")
    page = build_manpage(build_parser())
    assert "execution\\-strategy" in page or "execution-strategy" in page


@pytest.mark.parametrize("name", ["apps.initiator.plan", "apps.initiator.metrics"])
def test_module_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0


def test_the_wait_for_stop_outlasts_the_bridges_stall_deadline() -> None:
    from apps.gga_offload.config import GgaOffloadConfig
    from apps.initiator.config import IO_TIMEOUT_DEFAULT, InitiatorConfig
    from apps.initiator.control import stop_response_timeout
    from apps.storage.runtime.service_control import STOP_DRAIN_MIN

    bridge_stall = GgaOffloadConfig.model_fields["target_io_timeout"].default
    control = InitiatorConfig.model_fields["control_timeout"].default
    # The bridge answers stop within its stall deadline plus the drain's minimum: the initiator waits longer.
    assert stop_response_timeout(IO_TIMEOUT_DEFAULT, control) > bridge_stall + STOP_DRAIN_MIN
    assert stop_response_timeout(0, control) == IO_TIMEOUT_DEFAULT  # no IO deadline: still the default wait
    assert stop_response_timeout(1, control) == control  # never shorter than any control response's wait
    assert stop_response_timeout(1, 20) == 20  # issue 35 item 25: --control-timeout, not a fixed 5 s
    assert stop_response_timeout(30, control) == 30


def test_help_says_what_a_user_meets() -> None:
    """No service: it does not wait for ever; exit statuses (issue 26 item 16)."""
    help_text = " ".join(build_parser().format_help().split())
    assert "with none, it fails after --control-timeout seconds" in help_text
    assert "2 on a usage error" in help_text


# -- the run's control loop ---------------------------------------------------------------------------------


class _FinishedMeanwhile(threading.Event):
    """A worker's ``finished`` that is clear when the run loop tests it and set when it looks again: the
    worker finished in between (its own thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0

    def is_set(self) -> bool:
        self.looks += 1
        return self.looks > 1


def test_the_last_worker_finishing_as_the_lost_service_is_waited_on() -> None:
    """The service closed the connection; the run loop waits on a worker still running, which finishes
    between the loop's test and the choice of the worker to wait on: the run ends with its report (it
    raised StopIteration, printed as a bare ``EXCEPTION:``)."""
    import io
    from types import SimpleNamespace

    from apps.initiator.control import Initiator
    from apps.initiator.worker import Worker

    cfg = parse_args(["-d", "3b:00.0", "--cpu", "0", "--execution-strategy", "read_throughput_test",
                      "--eta", "never"])
    init = Initiator(cfg, err=io.StringIO(), out=io.StringIO(), tty=False)
    plans = plan_workers([0], local_region_size=4 * 4096, capacity=4 * 4096, effective_block_size=4096,
                         transaction_count=1, run_limit=1)
    w = Worker(plans[0], steps=strategy_steps("read_throughput_test"), io_size=4096, dev=None,  # type: ignore[arg-type]
               connection=None, region=memoryview(bytearray(4 * 4096)), expected=None,  # type: ignore[arg-type]
               pin=False)
    try:
        w.finished = _FinishedMeanwhile()
        init._workers = [w]
        init._transport = SimpleNamespace(remote_consumer_ids=[7])  # type: ignore[assignment]
        init._peer_lost = True
        report = init._run_data_path(plans, 4096, 4096, 4 * 4096)
    finally:
        assert w.join(0)
    assert report.errors == ["the service closed the control connection during the run"]



class _FailedTask:
    def __init__(self, status: ErrorCode) -> None:
        self.status = status

    def get_status(self) -> ErrorCode:
        return self.status


def _worker_with_ios_in_flight(index: int) -> Worker:
    """A worker (no thread, no DOCA objects) whose two transactions have a read in flight each."""
    plans = plan_workers([index, index + 1], local_region_size=8 * 4096, capacity=8 * 4096,
                         effective_block_size=4096, transaction_count=2, run_limit=100)
    w = Worker(plans[index], steps=strategy_steps("read_throughput_test"), io_size=4096, dev=None,  # type: ignore[arg-type]
               connection=None, region=memoryview(bytearray(8 * 4096)), expected=None,  # type: ignore[arg-type]
               pin=False)
    for k, txn in enumerate(w._txns):
        txn.refs, txn.awaiting, txn.kind, txn.storage, txn.io_start_ns = 2, True, 1, 4096 * k, k
    w._inflight_ios = len(w._txns)
    w._running = True
    return w


def _send_failed(w: Worker, k: int, status: ErrorCode) -> None:
    w._on_send_error(_FailedTask(status), w._txns[k], None)  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["same worker", "other worker"])
def test_a_send_refused_as_the_connection_drops_does_not_hide_the_unanswered_ios(where: str) -> None:
    """Issue 35 (a once-seen failure of test_a_stopped_service_is_not_one_that_closed_the_connection): the
    transport drops a silent service's connection (its retry window ran out) and fails the sends it waited on
    with IO_FAILED; a send the worker launched in that moment (a resubmitted one, or a new IO) fails with
    NOT_CONNECTED instead, and its callback may come first. That NOT_CONNECTED used to stop the worker as a
    plain send failure ("producer send of transaction 1 failed: NOT_CONNECTED"), so the IO_FAILED that
    followed, in this worker or another, no longer named its IOs as unanswered."""
    w = _worker_with_ios_in_flight(0)
    try:
        _send_failed(w, 1, ErrorCode.NOT_CONNECTED)
        if where == "same worker":
            _send_failed(w, 0, ErrorCode.IO_FAILED)
        else:
            other = _worker_with_ios_in_flight(1)
            try:
                _send_failed(other, 0, ErrorCode.IO_FAILED)
                assert other.unanswered
            finally:
                assert other.join(0)
            w.finished.set()
            w.name_unanswered()
    finally:
        assert w.join(0)
    assert w.unanswered, w.error
    assert w.error is not None and w.error.startswith(
        "worker 0 (cpu 0): 2 IO(s) timed out: the service did not answer within the comch retry window (the "
        "connection was dropped)"), w.error
