"""``python -m apps.dma_copy`` in separate processes: the host and DPU sides of this app together, and
each of them against a peer written from the C structs (``peer.py``): byte-exact copies both ways,
the messages byte for byte, and every failure path (each side ends with a clear error and no file
written under ``--file``)."""

from __future__ import annotations

import random
import re
import signal
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

import doca_py as d

from tests.file_compression.procs import DPU_PCI, HOST_PCI, Proc

pytestmark = [pytest.mark.multiprocess, pytest.mark.usefixtures("backend")]

APP = "apps.dma_copy"
PEER = "tests.dma_copy.peer"
Spawn = Callable[..., Proc]

# The C structs as an LP64 little-endian compiler lays them out (dma_copy_core.h)
STATUS_OK = bytes.fromhex("03000000" "01000000")
STATUS_FAIL = bytes.fromhex("03000000" "00000000")
SYS_FILE = Path("/sys/doca_py_dma_copy.bin")


def direction(file_in_host: bool, size: int) -> bytes:
    return bytes([1, 0, 0, 0, int(file_in_host), 0, 0, 0]) + size.to_bytes(8, "big")


def _data(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def _dpu(spawn: Spawn, path: Path) -> Proc:
    dpu = spawn(APP, "-p", DPU_PCI, "-r", HOST_PCI, "-f", str(path))
    dpu.wait_for("Server waiting on a client to connect")
    return dpu


def _host(spawn: Spawn, path: Path) -> Proc:
    return spawn(APP, "-p", HOST_PCI, "-f", str(path))


def _peer(spawn: Spawn, role: str, path: Path, scenario: str = "good") -> Proc:
    peer = spawn(PEER, role, str(path), scenario)
    peer.wait_for("ready")
    return peer


def _received(out: str) -> list[bytes]:
    """What the peer received, message by message."""
    return [bytes.fromhex(line[5:]) for line in out.splitlines() if line.startswith("recv ")]


def _nothing_written(directory: Path, *keep: str) -> None:
    """*directory* holds only *keep*: no file written, no temporary file left."""
    assert sorted(p.name for p in directory.iterdir()) == sorted(keep)


def _sides(tmp_path: Path) -> tuple[Path, Path]:
    host, dpu = tmp_path / "host", tmp_path / "dpu"
    host.mkdir()
    dpu.mkdir()
    return host / "file.bin", dpu / "file.bin"


def _max_dma() -> int:
    dev = d.Dev.open_by_pci_addr(DPU_PCI)
    try:
        return d.Dma.cap_task_memcpy_get_max_buf_size(dev.as_devinfo())
    finally:
        dev.close()


# -- the app on both sides -----------------------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 4096, 4097, 5 * 2**20 + 7])
@pytest.mark.parametrize("to_dpu", [True, False], ids=["host-to-dpu", "dpu-to-host"])
def test_copy_is_byte_exact(spawn: Spawn, tmp_path: Path, size: int, to_dpu: bool) -> None:
    host_file, dpu_file = _sides(tmp_path)
    src, dst = (host_file, dpu_file) if to_dpu else (dpu_file, host_file)
    data = _data(size)
    src.write_bytes(data)
    dpu = _dpu(spawn, dpu_file)
    hrc, hout, herr = _host(spawn, host_file).finish()
    drc, dout, derr = dpu.finish()
    assert (hrc, drc) == (0, 0), (hout, herr, dout, derr)
    assert dst.read_bytes() == data and src.read_bytes() == data
    _nothing_written(dst.parent, "file.bin")
    assert "Final status message was successfully received" in hout
    assert "DMA copy was done Successfully" in dout
    assert (f"it will be DMA copied {'from' if to_dpu else 'to'} the Host") in dout


@pytest.mark.parametrize("to_dpu", [True, False], ids=["host-to-dpu", "dpu-to-host"])
def test_an_empty_file_is_refused_by_both_sides(spawn: Spawn, tmp_path: Path, to_dpu: bool) -> None:
    host_file, dpu_file = _sides(tmp_path)
    (host_file if to_dpu else dpu_file).write_bytes(b"")
    dpu = _dpu(spawn, dpu_file)
    hrc, hout, herr = _host(spawn, host_file).finish()
    drc, dout, derr = dpu.finish()
    assert (hrc, drc) == (1, 1)
    assert "EXCEPTION: Comch DMA metadata negotiation failed: the file is empty" in derr
    assert "EXCEPTION: Failure was detected in dma copy: the DPU reported a failure" in herr
    _nothing_written((dpu_file if to_dpu else host_file).parent)


def test_a_file_on_neither_side_is_refused(spawn: Spawn, tmp_path: Path) -> None:
    host_file, dpu_file = _sides(tmp_path)
    dpu = _dpu(spawn, dpu_file)
    hrc, _, herr = _host(spawn, host_file).finish()
    drc, _, derr = dpu.finish()
    assert (hrc, drc) == (1, 1)
    assert "EXCEPTION: Comch DMA metadata negotiation failed: Error - File was not found on both Host and DPU" in derr
    assert "the DPU reported a failure" in herr
    _nothing_written(host_file.parent)
    _nothing_written(dpu_file.parent)


def test_a_file_on_both_sides_is_refused_and_both_are_kept(spawn: Spawn, tmp_path: Path) -> None:
    host_file, dpu_file = _sides(tmp_path)
    host_file.write_bytes(b"host")
    dpu_file.write_bytes(b"dpu")
    dpu = _dpu(spawn, dpu_file)
    hrc, _, herr = _host(spawn, host_file).finish()
    drc, _, derr = dpu.finish()
    assert (hrc, drc) == (1, 1) and "Error - File was found on both Host and DPU" in derr
    assert (host_file.read_bytes(), dpu_file.read_bytes()) == (b"host", b"dpu")


def test_a_file_larger_than_the_dma_device_allows_is_refused(spawn: Spawn, tmp_path: Path) -> None:
    """The DPU's file, sparse: the DPU refuses it from its size alone, before reading or allocating."""
    host_file, dpu_file = _sides(tmp_path)
    limit = _max_dma()
    with open(dpu_file, "wb") as f:
        f.truncate(limit + 1)
    dpu = _dpu(spawn, dpu_file)
    hrc, _, herr = _host(spawn, host_file).finish()
    drc, _, derr = dpu.finish()
    assert (hrc, drc) == (1, 1)
    assert (f"DMA device maximum allowed file size in bytes is {limit}, received file size is {limit + 1} bytes"
            in derr)
    assert "the DPU reported a failure" in herr
    _nothing_written(host_file.parent)


def _sysfs_refuses_files() -> bool:
    try:
        SYS_FILE.open("xb").close()
    except OSError:
        return True
    SYS_FILE.unlink()
    return False


@pytest.mark.skipif(not _sysfs_refuses_files(), reason="sysfs takes files here")
@pytest.mark.parametrize("writer", ["dpu", "host"])
def test_an_unwritable_destination_fails_before_the_copy(spawn: Spawn, tmp_path: Path, writer: str) -> None:
    """sysfs refuses new files even to root: the side that would write says so before any memory is
    exported, and the other side fails on its failure status."""
    host_file, dpu_file = _sides(tmp_path)
    if writer == "dpu":
        host_file.write_bytes(b"data")
        dpu_file = SYS_FILE
    else:
        dpu_file.write_bytes(b"data")
        host_file = SYS_FILE
    dpu = _dpu(spawn, dpu_file)
    hrc, _, herr = _host(spawn, host_file).finish()
    drc, _, derr = dpu.finish()
    assert (hrc, drc) == (1, 1)
    writer_err, other_err = (derr, herr) if writer == "dpu" else (herr, derr)
    assert f"cannot write the file: Permission denied: {SYS_FILE}" in writer_err
    assert f"the {writer.upper() if writer == 'dpu' else writer} reported a failure" in other_err
    assert not SYS_FILE.exists()


# -- the host against a C-struct DPU --------------------------------------------------------------------
@pytest.mark.parametrize("to_dpu", [True, False], ids=["host-to-dpu", "dpu-to-host"])
def test_the_host_speaks_the_c_protocol(spawn: Spawn, tmp_path: Path, to_dpu: bool) -> None:
    host_file, dpu_file = _sides(tmp_path)
    data = _data(70_001)
    (host_file if to_dpu else dpu_file).write_bytes(data)
    peer = _peer(spawn, "dpu", dpu_file)
    hrc, hout, herr = _host(spawn, host_file).finish()
    prc, pout, _ = peer.finish()
    assert (hrc, prc) == (0, 0), (hout, herr, pout)
    first, export = _received(pout)
    assert first == direction(to_dpu, len(data) if to_dpu else 0)
    kind, pad, host_addr, desc_len = struct.unpack("<I4s", export[:8]) + struct.unpack(">QQ", export[8:24])
    assert (kind, pad) == (2, bytes(4)) and host_addr != 0 and desc_len == len(export) - 24 > 0
    assert host_file.read_bytes() == data and dpu_file.read_bytes() == data


def test_the_host_fails_on_the_dpus_failure_status(spawn: Spawn, tmp_path: Path) -> None:
    host_file, dpu_file = _sides(tmp_path)
    peer = _peer(spawn, "dpu", dpu_file, "fail")
    hrc, _, herr = _host(spawn, host_file).finish()
    assert peer.finish()[0] == 0
    assert hrc == 1 and "EXCEPTION: Failure was detected in dma copy: the DPU reported a failure" in herr
    _nothing_written(host_file.parent)


@pytest.mark.parametrize("to_dpu", [True, False], ids=["host-to-dpu", "dpu-to-host"])
def test_the_host_fails_when_the_dpu_dies_mid_transfer(spawn: Spawn, tmp_path: Path, to_dpu: bool) -> None:
    """The DPU dies once it has the export descriptor: the host says so, writes nothing, keeps its file."""
    host_file, dpu_file = _sides(tmp_path)
    (host_file if to_dpu else dpu_file).write_bytes(b"the file")
    peer = _peer(spawn, "dpu", dpu_file, "die-after-export")
    hrc, hout, herr = _host(spawn, host_file).finish()
    assert peer.finish()[0] == -signal.SIGKILL
    assert hrc == 1 and re.search(r"EXCEPTION: the comch server .* while waiting for the DPU's status message: "
                                  r"no file written", herr), herr
    if to_dpu:
        assert host_file.read_bytes() == b"the file"
    else:
        _nothing_written(host_file.parent)


@pytest.mark.parametrize(("scenario", "error"), [
    ("raw:010000", "Received a message that is too small. Length: 3"),
    ("raw:" + direction(False, 5).hex() + "00", "Direction message has bad length. Length: 17, expected: 16"),
    ("raw:" + STATUS_OK.hex() + "00", "Status message has bad length. Length: 9, expected: 8"),
    ("raw:" + STATUS_OK.hex(), "received a success status before the export descriptor was sent"),
    ("raw:0200000000000000" + "00" * 16 + "ff", "Received bad message type. Type: 2"),
    ("raw:0700000000000000", "Received bad message type. Type: 7"),
    ("raw:" + direction(True, 5).hex(), "the DPU's direction message says the file is on the host, but it is not"),
    ("raw:" + direction(False, 0).hex(), "the file is empty"),
    ("then:" + direction(False, 5).hex(), "received a second direction message"),
])
def test_the_host_refuses_a_malformed_message(spawn: Spawn, tmp_path: Path, scenario: str, error: str) -> None:
    host_file, dpu_file = _sides(tmp_path)
    dpu_file.write_bytes(b"12345")
    peer = _peer(spawn, "dpu", dpu_file, scenario)
    hrc, _, herr = _host(spawn, host_file).finish()
    prc, pout, _ = peer.finish()
    assert prc == 0 and _received(pout)[-1] == STATUS_FAIL, pout
    assert hrc == 1 and f"EXCEPTION: Failure was detected in dma copy: {error}" in herr, herr
    _nothing_written(host_file.parent)


# -- the DPU against a C-struct host --------------------------------------------------------------------
@pytest.mark.parametrize("to_dpu", [True, False], ids=["host-to-dpu", "dpu-to-host"])
def test_the_dpu_speaks_the_c_protocol(spawn: Spawn, tmp_path: Path, to_dpu: bool) -> None:
    host_file, dpu_file = _sides(tmp_path)
    data = _data(123_457)
    (host_file if to_dpu else dpu_file).write_bytes(data)
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file)
    prc, pout, _ = peer.finish()
    drc, dout, derr = dpu.finish()
    assert (prc, drc) == (0, 0), (pout, dout, derr)
    # the answer: file_in_host as seen from the DPU, and the size only when the DPU has the file
    assert _received(pout) == [direction(to_dpu, 0 if to_dpu else len(data)), STATUS_OK]
    assert host_file.read_bytes() == data and dpu_file.read_bytes() == data


def test_the_dpu_refuses_an_announced_file_too_large(spawn: Spawn, tmp_path: Path) -> None:
    host_file, dpu_file = _sides(tmp_path)
    limit = _max_dma()
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file, f"announce:{limit + 1}")
    prc, pout, _ = peer.finish()
    drc, _, derr = dpu.finish()
    assert prc == 0 and _received(pout) == [STATUS_FAIL]
    assert drc == 1 and (f"DMA device maximum allowed file size in bytes is {limit}, received file size is "
                         f"{limit + 1} bytes") in derr
    _nothing_written(dpu_file.parent)


def test_the_dpu_fails_when_the_host_dies_mid_transfer(spawn: Spawn, tmp_path: Path) -> None:
    host_file, dpu_file = _sides(tmp_path)
    host_file.write_bytes(b"the file")
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file, "die-after-direction")
    assert peer.finish()[0] == -signal.SIGKILL
    drc, _, derr = dpu.finish()
    assert drc == 1 and re.search(r"EXCEPTION: the comch client .* while waiting for the host's DMA metadata: "
                                  r"no file written", derr), derr
    _nothing_written(dpu_file.parent)


_HEADER = "0200000000000000" + "0000000000001000"


@pytest.mark.parametrize(("scenario", "error"), [
    ("raw:01", "Received a message that is too small. Length: 1"),
    ("raw:" + direction(True, 5).hex()[:-2], "Direction message has bad length. Length: 15, expected: 16"),
    ("raw:0900000001000000", "Received bad message type. Type: 9"),
    ("raw:" + STATUS_FAIL.hex()[:-2], "Status message has bad length. Length: 7, expected: 8"),
    ("raw:" + _HEADER + "0000000000000001" + "aa", "received the export descriptor before the direction message"),
    ("then:" + _HEADER + "0000000000000000", "Export descriptor message has bad length. Length: 24"),
    ("then:" + _HEADER + "0000000000000002" + "aa", "declared length: 2 exceeds the 1 bytes after the header"),
    ("then:" + _HEADER + "0000000000000000" + "aa", "declares an empty export descriptor"),
    ("then:" + direction(True, 5).hex(), "received a second direction message"),
    ("then:" + _HEADER + "0000000000000004" + "deadbeef", "Failed to create memory map from export"),
])
def test_the_dpu_refuses_a_malformed_message(spawn: Spawn, tmp_path: Path, scenario: str, error: str) -> None:
    host_file, dpu_file = _sides(tmp_path)
    host_file.write_bytes(b"12345")
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file, scenario)
    prc, pout, _ = peer.finish()
    drc, _, derr = dpu.finish()
    assert prc == 0 and _received(pout)[-1] == STATUS_FAIL, pout
    assert drc == 1 and error in derr, derr
    _nothing_written(dpu_file.parent)


def test_the_dpu_refuses_an_address_outside_the_export(spawn: Spawn, tmp_path: Path) -> None:
    """A well-formed export whose announced file runs one byte past the exported memory."""
    host_file, dpu_file = _sides(tmp_path)
    host_file.write_bytes(b"12345")
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file, "shift:1")
    prc, pout, _ = peer.finish()
    drc, _, derr = dpu.finish()
    assert prc == 0 and _received(pout)[-1] == STATUS_FAIL, pout
    assert drc == 1 and "Unable to acquire DOCA remote buffer of 5 bytes" in derr, derr
    _nothing_written(dpu_file.parent)


def test_the_dpu_fails_on_the_hosts_failure_status(spawn: Spawn, tmp_path: Path) -> None:
    host_file, dpu_file = _sides(tmp_path)
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file, "raw:" + STATUS_FAIL.hex())
    peer.finish()
    drc, _, derr = dpu.finish()
    assert drc == 1 and "negotiation failed: the host reported a failure" in derr, derr
    _nothing_written(dpu_file.parent)


# -- Ctrl-C / SIGTERM ------------------------------------------------------------------------------------
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_dpu_tells_the_host(spawn: Spawn, tmp_path: Path, sig: int) -> None:
    host_file, dpu_file = _sides(tmp_path)
    host_file.write_bytes(b"the file")
    dpu = _dpu(spawn, dpu_file)
    peer = _peer(spawn, "host", host_file, "stall-after-direction")
    peer.wait_for("stalled")
    dpu.kill(sig)
    drc, _, derr = dpu.finish()
    prc, pout, _ = peer.finish()
    assert prc == 0 and _received(pout)[-1] == STATUS_FAIL, pout
    assert drc == 1 and "stopped while waiting for the host's DMA metadata" in derr, derr
    _nothing_written(dpu_file.parent)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_host_tells_the_dpu(spawn: Spawn, tmp_path: Path, sig: int) -> None:
    host_file, dpu_file = _sides(tmp_path)
    dpu_file.write_bytes(b"the file")
    peer = _peer(spawn, "dpu", dpu_file, "stall-after-export")
    host = _host(spawn, host_file)
    peer.wait_for("stalled")
    host.kill(sig)
    hrc, _, herr = host.finish()
    prc, pout, _ = peer.finish()
    assert prc == 0 and _received(pout)[-1] == STATUS_FAIL, pout
    assert hrc == 1 and "stopped while waiting for the DPU's status message" in herr, herr
    _nothing_written(host_file.parent)
