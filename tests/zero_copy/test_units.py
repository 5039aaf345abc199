"""The zero-copy bridge without processes: its io message checks and its command line."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode

from apps.common.cli.config import Ipv4Endpoint
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessage, IoMessageType
from apps.common.cli.manpages import APPS, PROGRAMS, build_manpage
from apps.zero_copy import APP_NAME, build_parser, check_request, finish_response_in_place, parse_args
from apps.zero_copy.forwarding import user_data_of
from apps.zero_copy.control import connect_target

R, W = IoMessageType.READ, IoMessageType.WRITE
CAP, HOST = 64 << 10, 32 << 10
REQUIRED = ["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--storage-server", "10.0.0.2:12345"]


# -- requests -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("msg", [
    IoMessage(R, 0, 0, 4096, 0, 0),
    IoMessage(W, 2**64 - 1, 7, 100, HOST - 100, CAP - 100),      # any offsets and sizes inside both ranges
    IoMessage(R, 1, 0, HOST, 0, CAP - HOST),
])
def test_requests_inside_both_ranges_are_forwarded(msg: IoMessage) -> None:
    assert check_request(msg.pack(), IO_MESSAGE_SIZE, capacity=CAP, host_size=HOST) is None


@pytest.mark.parametrize("msg, length, code, text", [
    (IoMessage(R, 0, 0, 4096, 0, 0), 63, ErrorCode.INVALID_VALUE, "io message of 63 bytes"),
    (IoMessage(0, 0, 0, 4096, 0, 0), 64, ErrorCode.NOT_SUPPORTED, "type 0 is not read or write"),
    (IoMessage(3, 0, 0, 4096, 0, 0), 64, ErrorCode.NOT_SUPPORTED, "type 3"),
    (IoMessage(R, 0, 0, 0, 0, 0), 64, ErrorCode.INVALID_VALUE, "io_size is 0"),
    (IoMessage(R, 0, 0, 4096, 0, CAP - 4095), 64, ErrorCode.INVALID_VALUE, "outside the storage"),
    (IoMessage(W, 0, 0, 4096, HOST - 4095, 0), 64, ErrorCode.INVALID_VALUE, "outside the host region"),
    (IoMessage(W, 0, 0, 16, 2**64 - 8, 0), 64, ErrorCode.INVALID_VALUE, "outside the host region"),
    (IoMessage(R, 0, 0, 16, 0, 2**64 - 8), 64, ErrorCode.INVALID_VALUE, "outside the storage"),
])
def test_bad_requests_are_refused(msg: IoMessage, length: int, code: ErrorCode, text: str) -> None:
    problem = check_request(msg.pack(), length, capacity=CAP, host_size=HOST)
    assert problem is not None and problem.code == code and text in problem.reason, problem


def test_user_data_of_short_messages() -> None:
    raw = IoMessage(R, 77, 0, 1, 0, 0).pack()
    assert user_data_of(raw, 64) == user_data_of(raw, 16) == 77
    assert user_data_of(raw, 15) is None


# -- answers --------------------------------------------------------------------------------------------------
def _answer(req: IoMessage, result: int = 0, **changes: int) -> bytearray:
    fields = dict(type=0, user_data=req.user_data, result=result, io_size=req.io_size,
                  requester_offset=req.requester_offset, storage_offset=req.storage_offset)
    fields.update(changes)
    return bytearray(IoMessage(**fields).pack())


def test_a_good_answer_keeps_the_targets_result() -> None:
    req = IoMessage(W, 9, 0, 4096, 8192, 40960)
    ok = _answer(req)
    assert finish_response_in_place(ok, req.pack()) is None
    assert IoMessage.unpack(ok) == req.response(0)
    failed = _answer(req, int(ErrorCode.IO_FAILED))
    assert finish_response_in_place(failed, req.pack()) is None
    assert IoMessage.unpack(failed) == req.response(ErrorCode.IO_FAILED)  # not masked as the reference does


@pytest.mark.parametrize("change", [dict(user_data=10), dict(io_size=1), dict(requester_offset=0),
                                    dict(storage_offset=1), dict(type=1)])
def test_a_wrong_answer_becomes_unexpected_for_the_request(change: dict[str, int]) -> None:
    req = IoMessage(R, 9, 0, 4096, 8192, 40960)
    resp = _answer(req, **change)
    assert finish_response_in_place(resp, req.pack()) is not None
    assert IoMessage.unpack(resp) == req.response(ErrorCode.UNEXPECTED)


# -- command line ---------------------------------------------------------------------------------------------
def test_defaults_and_required_flags() -> None:
    cfg = parse_args(REQUIRED)
    assert (cfg.device, cfg.representor, cfg.cpu) == ("03:00.0", "3b:00.0", [0])
    assert cfg.storage_server == Ipv4Endpoint("10.0.0.2", 12345)
    assert (cfg.command_channel_name, cfg.control_timeout) == ("doca_storage_comch", 5)
    cfg = parse_args([*REQUIRED, "--cpu", "3", "--command-channel-name", "zc", "--control-timeout", "9"])
    assert (cfg.cpu, cfg.command_channel_name, cfg.control_timeout) == ([0, 3], "zc", 9)


@pytest.mark.parametrize("argv, problem", [
    (["-d", "03:00.0", "--cpu", "0", "--storage-server", "10.0.0.2:1"], "--representor: is required"),
    (["-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0"], "--storage-server: is required"),
    (["-d", "03:00.0", "-r", "3b:00.0", "--storage-server", "10.0.0.2:1"], "--cpu: is required"),
    ([*REQUIRED[:-1], "10.0.0.2"], "the port is mandatory"),
    ([*REQUIRED[:-1], "host.example:1"], "is not an IPv4 address"),
    ([*REQUIRED[:-1], "10.0.0.2:70000"], "is not a number from 1 to 65535"),
    ([*REQUIRED, "--control-timeout", "0"], "--control-timeout: 0: the control timeout must be a positive"),
    ([*REQUIRED, "--cpu", "0"], "--cpu: CPU ids must not repeat"),
    ([*REQUIRED, "--command-channel-name", ""], "--command-channel-name: the comch server name must not be empty"),
    ([*REQUIRED, "--data-1-storage", "1.2.3.4:5"], "unrecognized arguments: --data-1-storage"),
    ([*REQUIRED, "--matrix-type", "cauchy"], "unrecognized arguments: --matrix-type"),
])
def test_bad_command_lines_exit_2(argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(argv)
    assert info.value.code == 2
    assert problem in capsys.readouterr().err


def test_json_file_flat_and_grouped(tmp_path: Path) -> None:
    f = tmp_path / "zc.json"
    f.write_text(json.dumps({"doca_general_flags": {"log-level": "debug"},
                             "doca_program_flags": {"device": "03:00.0", "representor": "3b:00.0", "cpu": [1, 2],
                                                    "storage-server": "192.0.2.7:4000", "control-timeout": 8}}))
    cfg = parse_args(["-j", str(f), "--control-timeout", "3"])  # the command line wins
    assert (cfg.cpu, cfg.storage_server, cfg.control_timeout) == ([1, 2], Ipv4Endpoint("192.0.2.7", 4000), 3)
    f.write_text(json.dumps({"device": "03:00.0", "representor": "3b:00.0", "cpu": [0],
                             "storage-server": "192.0.2.7:4000", "data-p-storage": "1.1.1.1:1"}))
    with pytest.raises(SystemExit):
        parse_args(["--json", str(f)])


def test_help_and_man_page(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("-d DEVICE", "-r PCI_ADDR", "--cpu N", "--storage-server ADDR:PORT", "--command-channel-name",
                 "--control-timeout N", "--json FILE", "--log-level"):
        assert flag in out
    assert "apps.zero_copy" in APPS and PROGRAMS[APP_NAME] == "apps.zero_copy"
    page = build_manpage(build_parser())
    assert page.startswith(".TH") and "storage\\-server" in page


def test_connecting_to_a_silent_port_is_abortable() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    abort = threading.Event()
    ticks = []

    def idle() -> None:
        ticks.append(1)
        if len(ticks) >= 3:
            abort.set()

    from apps.common.errors import StorageAppError

    with pytest.raises(StorageAppError) as info:
        connect_target(Ipv4Endpoint("127.0.0.1", port), abort.is_set, idle, retry_interval=0.01)
    assert info.value.code == ErrorCode.CONNECTION_ABORTED
    with pytest.raises(StorageAppError) as info:
        connect_target(Ipv4Endpoint("127.0.0.1", port), lambda: False, None, retry_interval=0.01, timeout=0.05)
    assert info.value.code == ErrorCode.TIME_OUT


def test_forwarding_examples() -> None:
    import doctest

    from apps.zero_copy import forwarding

    result = doctest.testmod(forwarding)
    assert result.failed == 0 and result.attempted > 0
