"""Secure Channel without a peer: the metadata message, the receive callback's checks, the
statistics lines, the flags and the man page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.common.cli.usage import EXIT_USAGE
from apps.secure_channel import PeerMessages, build_parser, parse_args, statistics_lines
from apps.secure_channel.wire import METADATA_SIZE, Metadata, MsgType, pack_metadata, parse_metadata
from apps.secure_channel.worker import ThreadResult, message_pattern
from apps.common.cli.manpages import PROGRAMS, build_manpage
from apps.common.errors import ProtocolError

pytestmark = pytest.mark.usefixtures("backend")


def test_metadata_layout_is_the_c_struct() -> None:
    # enum msg_type as the CPU stores it (little endian), then htonl(num_msgs), htonl(msg_size)
    assert METADATA_SIZE == 12
    assert pack_metadata(MsgType.START, 1000, 0x1234) == bytes.fromhex("00000000" "000003e8" "00001234")
    assert pack_metadata(MsgType.END, 1, 2) == bytes.fromhex("01000000" "00000001" "00000002")
    assert parse_metadata(bytes.fromhex("00000000" "000003e8" "00001234")) == Metadata(MsgType.START, 1000, 0x1234)
    assert parse_metadata(pack_metadata(MsgType.END, 0, 0)) == Metadata(MsgType.END, 0, 0)  # END's counts are free


@pytest.mark.parametrize(("msg", "problem"), [
    (b"", "invalid message length detected: 0"),
    (b"\0" * 11, "invalid message length detected: 11"),
    (b"\0" * 16, "invalid message length detected: 16"),
    (bytes.fromhex("02000000" "00000001" "00000001"), "unknown metadata message type 2"),
    (bytes.fromhex("00000001" "00000001" "00000001"), "unknown metadata message type 16777216"),  # big-endian type
    (pack_metadata(MsgType.START, 0, 10), "announces 0 messages"),
    (pack_metadata(MsgType.START, 1 << 31, 10), "announces 2147483648 messages"),
    (pack_metadata(MsgType.START, 5, 0), "messages of 0 bytes"),
    (pack_metadata(MsgType.START, 5, 65536), "messages of 65536 bytes"),
])
def test_bad_metadata_is_refused(msg: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        parse_metadata(msg)


def test_peer_messages_accept_one_start_then_end() -> None:
    peer = PeerMessages()
    peer.on_message(memoryview(pack_metadata(MsgType.START, 7, 64)))
    assert peer.start == Metadata(MsgType.START, 7, 64) and not peer.ended and peer.error is None
    peer.on_message(memoryview(pack_metadata(MsgType.END, 7, 64)))
    assert peer.ended and peer.error is None


@pytest.mark.parametrize(("msgs", "problem"), [
    ([pack_metadata(MsgType.END, 1, 1)], "END before START"),
    ([pack_metadata(MsgType.START, 1, 1), pack_metadata(MsgType.START, 2, 2)], "a second START"),
    ([b"\0" * 5], "invalid message length detected: 5"),
])
def test_peer_messages_record_the_first_problem(msgs: list[bytes], problem: str) -> None:
    peer = PeerMessages()
    for m in msgs:
        peer.on_message(memoryview(m))
    assert peer.error is not None and problem in peer.error


def test_statistics_lines_are_the_c_apps() -> None:
    sent = ThreadResult(start=10.0, end=10.25, processed=100)
    received = ThreadResult(start=1.0, end=1.0005, processed=7)
    assert statistics_lines(sent, received) == [
        "Producer sent 100 messages in approximately 250.0000 milliseconds",
        "Consumer received 7 messages in approximately 0.5000 milliseconds",
    ]
    assert ThreadResult().elapsed_ms == 0.0


def test_message_pattern() -> None:
    assert message_pattern(3) == b"\0\1\2" and len(message_pattern(65535)) == 65535
    assert message_pattern(300)[256:260] == b"\0\1\2\3"


def test_flags_are_dogas(tmp_path: Path) -> None:
    c = parse_args(["-s", "256", "-n", "10", "-p", "03:00.0", "-r", "3b:00.0"])
    assert (c.msg_size, c.num_msgs, c.pci_addr, c.rep_pci) == (256, 10, "03:00.0", "3b:00.0")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"doca_program_flags": {"msg-size": 8, "num-msgs": 3, "pci-addr": "3b:00.0"}}))
    c = parse_args(["-j", str(cfg), "--num-msgs", "5"])
    assert (c.msg_size, c.num_msgs, c.pci_addr, c.rep_pci) == (8, 5, "3b:00.0", "")


@pytest.mark.parametrize(("argv", "problem"), [
    (["-n", "1", "-p", "x"], "--msg-size: is required"),
    (["-s", "1", "-p", "x"], "--num-msgs: is required"),
    (["-s", "1", "-n", "1"], "--pci-addr: is required"),
    (["-s", "0", "-n", "1", "-p", "x"], "message size is not supported. Max is 65535"),
    (["-s", "65536", "-n", "1", "-p", "x"], "message size is not supported"),
    (["-s", "1", "-n", "0", "-p", "x"], "must be from 1"),
])
def test_bad_flags_exit_2(argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == EXIT_USAGE and problem in capsys.readouterr().err


def test_man_page_is_named_like_the_doca_binary() -> None:
    assert PROGRAMS["doca_secure_channel"] == "apps.secure_channel"
    page = build_manpage(build_parser())
    assert page.startswith(".TH DOCA_SECURE_CHANNEL") and "\\-\\-num\\-msgs" in page


class _DroppedChannel:
    """The channel once the transport dropped the connection (ComchChannel's own wording)."""

    connected = False
    is_server = True
    unanswered = False

    def peer_closed(self) -> Exception:
        from apps.common.comch_channel import ComchChannel

        return ComchChannel._gone_error(self)  # type: ignore[arg-type]


@pytest.mark.parametrize("unanswered", [False, True])
def test_a_stopped_peer_is_not_one_that_closed_the_connection(unanswered: bool) -> None:
    """A peer that stops (SIGSTOP) leaves this side's fast-path sends unanswered until the transport's
    retry window drops the connection (IO_FAILED): that is said, not "closed the connection"."""
    from types import SimpleNamespace

    from apps.secure_channel.control import _thread_failure

    producer = SimpleNamespace(result=ThreadResult(error="received a producer send task completion error: "
                                                         + ("IO_FAILED" if unanswered else "CONNECTION_RESET"),
                                                   unanswered=unanswered))
    consumer = SimpleNamespace(result=ThreadResult())
    failure = _thread_failure(_DroppedChannel(), producer, consumer)  # type: ignore[arg-type]
    if unanswered:
        assert str(failure).startswith("the comch client did not answer within the retry window: it stopped or hangs")
    else:
        assert str(failure) == "the comch client closed the connection"


class _LossInTheEngine(_DroppedChannel):
    """The channel as DOCA (the native path) leaves it: the transport dropped the connection, and the
    channel's progress engine reports it at its next progress."""

    def __init__(self) -> None:
        self.connected = True  # type: ignore[misc]
        self.progressed = 0

    def progress(self, timeout: float = 0.0) -> bool:
        self.progressed += 1
        self.connected = False  # type: ignore[misc]
        return True


def test_a_thread_that_meets_the_lost_connection_first_reports_the_loss() -> None:
    """The producer thread's create is refused on a connection DOCA already tore down while the loss still
    waits in the channel's progress engine: the loss is the failure, not the thread's symptom."""
    from types import SimpleNamespace

    from apps.secure_channel.control import _thread_failure

    producer = SimpleNamespace(result=ThreadResult(error="DOCA_ERROR_BAD_STATE: Bad state: doca_comch_producer_create"))
    consumer = SimpleNamespace(result=ThreadResult())
    channel = _LossInTheEngine()
    failure = _thread_failure(channel, producer, consumer)  # type: ignore[arg-type]
    assert str(failure) == "the comch client closed the connection" and channel.progressed == 1


class _Clock:
    """``time`` for `apps.secure_channel.control`, moved only by the channel's progress."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


class _SlowLoss(_DroppedChannel):
    """A loaded machine: each progress of the channel takes *step* seconds, and the transport, which failed
    the thread's task first, posts the loss to the channel's engine only *late* seconds later."""

    def __init__(self, clock: _Clock, step: float, late: float) -> None:
        self.connected = True  # type: ignore[misc]
        self.clock = clock
        self.step = step
        self.lost_at = clock.now + late

    def progress(self, timeout: float = 0.0) -> bool:
        self.clock.now += self.step
        if self.clock.now >= self.lost_at:
            self.connected = False  # type: ignore[misc]
        return True


@pytest.mark.parametrize("status", ["CONNECTION_RESET", "IO_FAILED"])
def test_a_loss_a_thread_met_is_reported_however_late_the_channel_learns_it(
        monkeypatch: pytest.MonkeyPatch, status: str) -> None:
    """A thread's task failed because the connection is gone; the loss reaches the channel's progress engine
    only after the 2 s grace the main thread used to give it (a loaded machine): it used to report the
    thread's symptom ("Send thread finished unsuccessfully: ...") instead of the peer's departure."""
    from types import SimpleNamespace

    from apps.secure_channel import control

    clock = _Clock()
    monkeypatch.setattr(control, "time", clock)
    channel = _SlowLoss(clock, step=0.5, late=3 * control.LOSS_GRACE)
    producer = SimpleNamespace(result=ThreadResult(error=f"received a producer send task completion error: {status}",
                                                   unanswered=status == "IO_FAILED", lost=True))
    consumer = SimpleNamespace(result=ThreadResult())
    failure = control._thread_failure(channel, producer, consumer)  # type: ignore[arg-type]
    if status == "IO_FAILED":
        assert str(failure).startswith("the comch client did not answer within the retry window"), str(failure)
    else:
        assert str(failure) == "the comch client closed the connection"


def test_a_loss_that_never_reaches_the_channel_is_said_as_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from apps.secure_channel import control

    clock = _Clock()
    monkeypatch.setattr(control, "time", clock)
    channel = _SlowLoss(clock, step=1.0, late=float("inf"))
    producer = SimpleNamespace(result=ThreadResult(error="received a producer send task completion error: "
                                                         "CONNECTION_RESET", lost=True))
    failure = control._thread_failure(channel, producer, SimpleNamespace(result=ThreadResult()))  # type: ignore[arg-type]
    assert str(failure) == ("Send thread finished unsuccessfully: received a producer send task completion error: "
                            "CONNECTION_RESET (the comch connection looked lost to it, but the channel did not "
                            f"report a loss within {control.LOSS_TIMEOUT:g} s)")


def test_a_thread_failure_on_a_connection_that_stays_up_is_the_thread_s(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from apps.secure_channel import control

    monkeypatch.setattr(control, "LOSS_GRACE", 0.0)  # the connection is up: nothing to wait for
    channel = _LossInTheEngine()
    consumer = SimpleNamespace(result=ThreadResult(error="received a message of 3 bytes where the peer announced 4"))
    producer = SimpleNamespace(result=ThreadResult())
    failure = control._thread_failure(channel, producer, consumer)  # type: ignore[arg-type]
    assert str(failure) == "Receive thread finished unsuccessfully: received a message of 3 bytes where the peer " \
                           "announced 4"


def test_help_says_what_a_user_meets() -> None:
    """Start order and exit statuses (issue 26 item 16)."""
    help_text = " ".join(build_parser().format_help().split())
    assert "A client started before its server waits for it silently, as NVIDIA's does, until Ctrl-C" in help_text
    assert "2 on a usage error" in help_text
