"""The target's command line, man page and start-up failures (in process, no network)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.common.cli.manpages import APPS, build_manpage
from apps.storage_target import abort_on_signals, build_parser, main, parse_args


@pytest.fixture
def keep_logging() -> Iterator[None]:
    """``main`` points the ``apps`` logger at the (captured) stdout; put it back."""
    app = logging.getLogger("apps")
    handlers, level, propagate = list(app.handlers), app.level, app.propagate
    yield
    app.handlers[:] = handlers
    app.setLevel(level)
    app.propagate = propagate


def test_help_lists_the_reference_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("-d DEVICE", "--cpu N", "--listen-port N", "--listen-address ADDR", "--first-message-timeout N",
                 "--binary-content FILE", "--block-count N", "--block-size N", "--json FILE"):
        assert flag in out
    assert "Listening on port" in out and "authentication" in out


def test_registered_for_man_pages() -> None:
    assert "apps.storage_target" in APPS
    page = build_manpage(build_parser())
    assert page.startswith(".TH") and "listen\\-port" in page


def test_parse_args() -> None:
    cfg = parse_args(["-d", "03:00.0", "--cpu", "1", "--cpu", "0", "--listen-port", "0"])
    assert (cfg.cpu, cfg.listen_port, cfg.block_size, cfg.block_count, cfg.binary_content) == \
        ([1, 0], 0, 4096, 128, None)
    # every interface by default, as the reference; no first-message limit (a service sends its
    # first request only when its initiator does)
    assert (cfg.listen_address, cfg.first_message_timeout) == ("0.0.0.0", 0)
    cfg = parse_args(["-d", "03:00.0", "--cpu", "0", "--listen-port", "0", "--listen-address", "127.0.0.1",
                      "--first-message-timeout", "30"])
    assert (cfg.listen_address, cfg.first_message_timeout) == ("127.0.0.1", 30)


@pytest.mark.parametrize("bad, problem", [
    (["--listen-address", "localhost"], "--listen-address: 'localhost' is not an IPv4 address (a.b.c.d)"),
    (["--listen-address", "::1"], "--listen-address: '::1' is not an IPv4 address (a.b.c.d)"),
    (["--first-message-timeout", "-1"], "--first-message-timeout: -1 must be from 0 (no limit) to 86400 seconds"),
])
def test_bad_control_port_flags(bad: list[str], problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(["-d", "03:00.0", "--cpu", "0", "--listen-port", "0", *bad])
    assert info.value.code == 2
    assert problem in capsys.readouterr().err


def test_raw_file_of_the_wrong_size(tmp_path: Path, capsys: pytest.CaptureFixture[str], keep_logging: None) -> None:
    raw = tmp_path / "plain.bin"
    raw.write_bytes(bytes(1000))
    assert main(["-d", "03:00.0", "--cpu", "0", "--listen-port", "0", "--binary-content", str(raw),
                 "--block-size", "256", "--block-count", "4"]) == 1
    captured = capsys.readouterr()
    assert "doca_storage_target_rdma: v" in captured.out
    assert captured.err.strip() == (f"EXCEPTION: Content file {str(raw)!r} of 1000 bytes does not match the "
                                    f"storage size of 1024 bytes (256 x 4)")


def test_unknown_device(capsys: pytest.CaptureFixture[str], keep_logging: None) -> None:
    assert main(["-d", "mlx5_99", "--cpu", "0", "--listen-port", "0", "--block-size", "64",
                 "--block-count", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("EXCEPTION: ") and "no DOCA device matches 'mlx5_99'" in err and "Traceback" not in err


def test_signal_handlers_set_the_flag_and_are_restored() -> None:
    before = signal.getsignal(signal.SIGINT)
    abort = threading.Event()
    with abort_on_signals(abort):
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler) and handler is not before
        handler(signal.SIGINT, None)
        assert abort.is_set()
    assert signal.getsignal(signal.SIGINT) is before
