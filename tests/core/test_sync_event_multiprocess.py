"""A sync event shared with another process (emulated backend): the child imports the remote-PCI export
(the memfd handed over with SCM_RIGHTS after the key check), both sides update the one value atomically,
and stopping the event revokes the child's access."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import doca_py as d

from ..libdoca.env import native_is_libdoca
from .helpers import HOST_PCI

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]


class Child:
    """``tests.core.mp_sync_event``: one command per line, one answer per line."""

    def __init__(self, blob: bytes) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "tests.core.mp_sync_event", blob.hex()], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.first = self.read()

    def read(self) -> str:
        assert self.p.stdout is not None
        return self.p.stdout.readline().strip()

    def ask(self, cmd: str) -> str:
        assert self.p.stdin is not None
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.p.communicate("", timeout=60)
        assert self.p.returncode == 0


@pytest.fixture
def event(backend: str) -> Iterator[tuple[d.SyncEvent, bytes]]:
    if backend != "emulated" and not native_is_libdoca():
        pytest.skip("another process imports the event through the emulator's export hand-over (libdoca's too)")
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev, d.SyncEvent() as se:
        se.add_publisher_location_cpu(dev)
        se.add_subscriber_location_remote_pci()
        se.start()
        yield se, se.export_to_remote_pci(dev)


def test_both_processes_update_one_value(event: tuple[d.SyncEvent, bytes]) -> None:
    se, blob = event
    child = Child(blob)
    assert child.first == "ready"
    se.update_set(10)
    assert child.ask("get") == "10"
    assert child.ask("add 5") == "10"
    assert se.get() == 15
    assert child.ask("set 0") == "ok"
    # Concurrent atomic adds from both processes lose nothing (the record lock on the memfd).
    assert child.p.stdin is not None
    child.p.stdin.write("".join("add 1\n" for _ in range(200)))
    child.p.stdin.flush()
    for _ in range(200):
        se.update_add(1)
    answers = [child.read() for _ in range(200)]
    assert all(a.isdigit() for a in answers)
    se.wait_gt(399)  # 400 (wait_gt: DOCA 2.6 too)
    # The child blocks in its wait until the parent publishes.
    child.p.stdin.write("wait_ge 1000\n")
    child.p.stdin.flush()
    se.update_set(1000)
    assert child.read() == "ok"
    se.stop()  # revokes the export: the child's next access is refused
    assert child.ask("get") == "DocaNotPermitted"
    child.close()


def test_forged_and_revoked_blobs_are_refused(event: tuple[d.SyncEvent, bytes]) -> None:
    from doca_py.emulated import export as ex
    from doca_py.emulated import sync_event as emu

    se, blob = event
    inner = emu.decode_blob(blob, emu.BlobKind.PCI)
    forged = emu.encode_blob(emu.BlobKind.PCI, ex.encode(dataclasses.replace(inner, key=bytes(16))))
    assert _first(forged) == "DocaNotPermitted"  # the exporter checks the key before handing the memfd over
    for field, value in (("fd", inner.fd + 1), ("slot", inner.slot + 1), ("offset", inner.offset + 8)):
        # ... and every other field against the blob it issued
        forged = emu.encode_blob(emu.BlobKind.PCI, ex.encode(dataclasses.replace(inner, **{field: value})))
        assert _first(forged) == "DocaNotPermitted", field
    assert _first(blob[:-1]) == "DocaInvalidValue"
    se.stop()
    assert _first(blob) == "DocaNotPermitted"


def _first(blob: bytes) -> str:
    child = Child(blob)
    child.close()
    return child.first
