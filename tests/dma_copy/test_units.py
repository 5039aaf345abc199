"""The DMA Copy pieces without processes: the messages against the C structs, each side's message
handling, the flags."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from apps.common.cli.usage import EXIT_USAGE
from apps.common.errors import ProtocolError, StorageAppError
from apps.dma_copy import DpuNegotiation, HostNegotiation, State, build_parser, parse_args
from apps.dma_copy import transfer
from apps.dma_copy.wire import (DIRECTION_SIZE, EXPORT_HEADER_SIZE, STATUS_SIZE, Direction, ExportDescriptor, Status,
                                pack_direction, pack_export_descriptor, pack_status, parse)

FAIL = bytes.fromhex("0300000000000000")


# -- the messages ---------------------------------------------------------------------------------------
def test_the_messages_are_the_c_structs() -> None:
    """enum in the host's (little-endian) order, bool and its padding, 64-bit values through htonq."""
    assert (DIRECTION_SIZE, EXPORT_HEADER_SIZE, STATUS_SIZE) == (16, 24, 8)
    assert pack_direction(True, 0x0102030405060708) == bytes.fromhex("01000000" "01000000" "0102030405060708")
    assert pack_direction(False, 0) == bytes.fromhex("01000000" "00000000" "0000000000000000")
    assert pack_status(True) == bytes.fromhex("03000000" "01000000") and pack_status(False) == FAIL
    assert pack_export_descriptor(0xAABBCCDD, b"xyz") == bytes.fromhex(
        "02000000" "00000000" "00000000aabbccdd" "0000000000000003") + b"xyz"


def test_padding_is_ignored_and_a_bool_is_any_non_zero_byte() -> None:
    assert parse(bytes.fromhex("01000000" "02ffffff" "0000000000000005")) == Direction(True, 5)
    assert parse(bytes.fromhex("03000000" "00aaaaaa")) == Status(False)
    assert parse(bytes.fromhex("02000000" "ffffffff" "0000000000001000" "0000000000000002") + b"ab!") == \
        ExportDescriptor(0x1000, b"ab")  # what follows the declared length is left, as the C app does


@pytest.mark.parametrize(("msg", "problem"), [
    (b"", "too small. Length: 0"),
    (b"\x01\0\0", "too small. Length: 3"),
    (pack_direction(True, 1)[:-1], "Direction message has bad length. Length: 15, expected: 16"),
    (pack_status(True) + b"\0", "Status message has bad length. Length: 9, expected: 8"),
    (pack_export_descriptor(1, b"x")[:24], "Export descriptor message has bad length. Length: 24"),
    (pack_export_descriptor(1, b"xy")[:-1], "declared length: 2 exceeds the 1 bytes after the header"),
    (bytes.fromhex("02000000" "00000000" "0000000000000001" "0000000000000000") + b"x", "empty export descriptor"),
    (bytes.fromhex("04000000" "00000000"), "Received bad message type. Type: 4"),
])
def test_malformed_messages_are_refused_with_the_c_wording(msg: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        parse(msg)


# -- the host's side ------------------------------------------------------------------------------------
def _never() -> None:
    raise AssertionError("the destination is checked only on the side that writes")


def test_the_host_sending_its_file() -> None:
    host = HostNegotiation(100, _never)
    assert host.request() == pack_direction(True, 100)
    # the DPU's answer: the file is in the host, no size (the DPU has none)
    assert host.on_message(pack_direction(True, 0)) is None and host.state is State.EXPORTING
    assert host.file_size == 100
    host.exported()
    assert host.on_message(pack_status(True)) is None and host.state is State.COMPLETE


def test_the_host_receiving_checks_its_destination_first() -> None:
    checked: list[bool] = []
    host = HostNegotiation(None, lambda: checked.append(True))
    assert host.request() == pack_direction(False, 0)
    assert host.on_message(pack_direction(False, 42)) is None
    assert (host.state, host.file_size, checked) == (State.EXPORTING, 42, [True])

    def refuse() -> None:
        raise PermissionError(13, "Permission denied", "/x/out.bin")

    host = HostNegotiation(None, refuse)
    assert host.on_message(pack_direction(False, 42)) == FAIL
    assert host.state is State.ERROR and host.error == "cannot write the file: Permission denied: /x/out.bin"


def test_the_host_takes_a_failure_status_at_any_time_without_answering() -> None:
    host = HostNegotiation(10, _never)
    assert host.on_message(FAIL) is None
    assert host.state is State.ERROR and host.peer_failed and "the DPU reported a failure" in host.error
    assert host.on_message(pack_status(True)) is None and host.state is State.ERROR  # nothing after that


# -- the DPU's side -------------------------------------------------------------------------------------
def test_the_dpu_receiving() -> None:
    checked: list[bool] = []
    dpu = DpuNegotiation(None, 1000, lambda: checked.append(True))
    assert dpu.on_message(pack_direction(True, 1000)) == pack_direction(True, 0)
    assert (dpu.state, dpu.file_size, checked) == (State.NEGOTIATING, 1000, [True])
    assert dpu.on_message(pack_status(True)) is None and dpu.state is State.NEGOTIATING  # ignored, as in C
    assert dpu.on_message(pack_export_descriptor(0x5000, b"blob")) is None
    assert (dpu.state, dpu.host_addr, dpu.export_desc) == (State.COMPLETE, 0x5000, b"blob")


def test_the_dpu_sending_answers_with_its_size() -> None:
    dpu = DpuNegotiation(7, 1000, _never)
    assert dpu.on_message(pack_direction(False, 0)) == pack_direction(False, 7)


@pytest.mark.parametrize(("local", "msg", "problem"), [
    (5, pack_direction(True, 5), "Error - File was found on both Host and DPU"),
    (None, pack_direction(False, 0), "Error - File was not found on both Host and DPU"),
    (None, pack_direction(True, 1001), "maximum allowed file size in bytes is 1000, received file size is 1001"),
    (1001, pack_direction(False, 0), "maximum allowed file size in bytes is 1000, received file size is 1001"),
    (None, pack_direction(True, 0), "the file is empty"),
    (0, pack_direction(False, 0), "the file is empty"),
    (None, pack_export_descriptor(1, b"x"), "export descriptor before the direction message"),
])
def test_the_dpu_refuses_with_a_failure_status(local: int | None, msg: bytes, problem: str) -> None:
    dpu = DpuNegotiation(local, 1000, lambda: None)
    assert dpu.on_message(msg) == FAIL
    assert dpu.state is State.ERROR and problem in dpu.error and not dpu.peer_failed
    assert dpu.on_message(pack_direction(True, 1)) is None  # one failure status, then nothing


def test_the_dpu_refuses_a_second_export() -> None:
    dpu = DpuNegotiation(None, 1000, lambda: None)
    dpu.on_message(pack_direction(True, 10))
    dpu.on_message(pack_export_descriptor(1, b"x"))
    assert dpu.on_message(pack_export_descriptor(1, b"x")) == FAIL and "after the export descriptor" in dpu.error


# -- the file -------------------------------------------------------------------------------------------
def test_a_failed_write_leaves_nothing_and_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out.bin"
    out.write_bytes(b"previous")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(transfer.os, "fsync", full)
    with pytest.raises(StorageAppError, match="out.bin: No space left on device"):
        transfer.write_atomically(out, memoryview(b"new"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"] and out.read_bytes() == b"previous"
    monkeypatch.undo()
    transfer.write_atomically(out, memoryview(b"new"))
    umask = os.umask(0)
    os.umask(umask)
    assert out.read_bytes() == b"new" and out.stat().st_mode & 0o777 == 0o666 & ~umask  # fopen(path, "w")


def test_a_file_that_changed_size_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(b"12345")
    with pytest.raises(StorageAppError, match="changed size"):
        transfer.read_into(src, memoryview(bytearray(4)))
    with pytest.raises(StorageAppError, match="changed size"):
        transfer.read_into(src, memoryview(bytearray(6)))


# -- the flags ------------------------------------------------------------------------------------------
def test_the_flags_are_the_c_apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    c = parse_args(["-p", "03:00.0", "-r", "3b:00.0", "-f", "x.bin"])
    assert (c.pci_addr, c.rep_pci, str(c.file)) == ("03:00.0", "3b:00.0", "x.bin")
    c = parse_args(["--pci-addr", "3b:00.0", "--file", "y.bin", "--rep-pci", "b1:00.0"])
    assert (c.pci_addr, c.rep_pci, str(c.file)) == ("3b:00.0", "b1:00.0", "y.bin")
    # dma_copy_params.json of the C app, comments and all
    cfg = tmp_path / "dma_copy_params.json"
    cfg.write_text('{\n"doca_general_flags": {\n// -l\n"log-level": 60\n},\n"doca_program_flags": {\n'
                   '// -f\n"file": "z.bin",\n"pci-addr": "03:00.0",\n"rep-pci": "b1:00.0"\n}\n}\n')
    c = parse_args(["-j", str(cfg), "-f", "w.bin"])  # the command line wins
    assert (str(c.file), c.pci_addr, c.rep_pci, int(c.log_level)) == ("w.bin", "03:00.0", "b1:00.0", 60)


@pytest.mark.parametrize(("argv", "problem"), [
    (["-f", "x"], "--pci-addr: is required"),
    (["-p", "3b:00.0"], "--file: is required"),
    (["-p", "3b:00.0", "-f", "x" * 128], "exceeded buffer size - MAX=127"),
    (["-p", "0000:3b:00.0x", "-f", "x"], "maximum size of 12"),
    (["-p", "03:00.0", "-r", "0000:3b:00.00", "-f", "x"], "maximum size of 12"),
    (["-p", "3b:00.0", "-f", ""], "the file name must not be empty"),
    (["-p", "3b:00.0", "-f", "."], "'.' is a directory, not a file"),
    (["-p", "3b:00.0", "-f", "out/"], "'out/' names a directory, not a file"),
    (["-p", "3b:00.0", "-f", "no/such/dir/x"], "the directory of 'no/such/dir/x' does not exist"),
    (["-p", "3b:00.0", "-f", "fifo"], "'fifo' is not a regular file"),
])
def test_bad_flags_exit_2(argv: list[str], problem: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    err = capsys.readouterr().err
    assert exc.value.code == EXIT_USAGE and problem in err, err


def test_a_path_of_127_bytes_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(str(parse_args(["-p", "3b:00.0", "-f", "x" * 127]).file)) == 127


def test_help_names_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["-h"])
    text = capsys.readouterr().out
    assert exc.value.code == 0
    for flag in ("-f FILE, --file FILE", "-p PCI_ADDR, --pci-addr PCI_ADDR", "-r PCI_ADDR, --rep-pci PCI_ADDR",
                 "-j FILE, --json FILE", "-l LEVEL, --log-level LEVEL", "--sdk-log-level", "-v, --version"):
        short_once = re.sub(r"^(-\w) \S+, ", r"\1, ", flag)  # Python 3.13's argparse names the metavar once
        assert flag in text or short_once in text, flag
    assert "dma copy server" in text and "maximum memcpy size" in text
