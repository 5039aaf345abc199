"""Cross-process mmap export/import: a child imports, DMAs, and the owner sees the bytes."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import doca_py as d
from doca_py.types import AccessFlag as A

from .helpers import HOST_PCI

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]


class Child:
    """The child process, paused at "ready" until :meth:`go`."""

    def __init__(self, mode: str, blob: bytes) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "tests.core.mp_child", mode, blob.hex()], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        self.first = self.p.stdout.readline().strip()

    def go(self) -> str:
        assert self.first == "ready", self.first
        out, _ = self.p.communicate("go\n", timeout=60)
        return out.strip()

    def result(self) -> str:
        self.p.communicate("", timeout=60)
        assert self.p.returncode == 0
        return self.first


@pytest.fixture
def host(backend: str):  # type: ignore[no-untyped-def]
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev:
        yield dev


def _exported(dev: d.Dev, perms: A) -> tuple[d.Mmap, memoryview, bytes]:
    mm = d.Mmap()
    mem = mm.allocate(8192)
    mem[:6] = b"parent"
    mm.set_permissions(perms)
    mm.add_dev(dev)
    mm.start()
    return mm, mem, mm.export_pci(dev)


def test_child_writes_parent_memory_zero_copy(host: d.Dev) -> None:
    mm, mem, blob = _exported(host, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
    assert Child("write", blob).go() == "ok"
    assert bytes(mem[100:106]) == b"child!"
    assert Child("read", blob).go() == "ok:" + b"parent".hex()
    del mem
    mm.close()


def test_read_only_export_refuses_writes_and_touches_nothing(host: d.Dev) -> None:
    mm, mem, blob = _exported(host, A.LOCAL_READ_WRITE | A.PCI_READ_ONLY)
    assert Child("write", blob).go() == "NOT_PERMITTED"
    assert bytes(mem[100:106]) == bytes(6)
    assert Child("read", blob).go() == "ok:" + b"parent".hex()
    del mem
    mm.close()


def test_out_of_range_buffer_is_refused(host: d.Dev) -> None:
    mm, mem, blob = _exported(host, A.PCI_READ_WRITE)
    assert Child("oob", blob).result() == "DocaInvalidValue"
    del mem
    mm.close()


def test_stop_revokes_access_of_a_live_importer(host: d.Dev) -> None:
    mm, mem, blob = _exported(host, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
    child = Child("write", blob)
    mm.stop()
    assert child.go() == "NOT_PERMITTED"
    assert bytes(mem[100:106]) == bytes(6)
    del mem
    mm.close()


def test_forged_key_and_revoked_blob_are_refused(host: d.Dev, backend: str) -> None:
    if backend != "emulated":
        pytest.skip("forging needs the emulated blob format")
    from doca_py.emulated import export as ex

    mm, mem, blob = _exported(host, A.PCI_READ_WRITE)
    forged = ex.encode(dataclasses.replace(ex.decode(blob), key=bytes(16)))
    assert Child("write", forged).result() == "DocaNotPermitted"
    wider = ex.encode(dataclasses.replace(ex.decode(blob), length=1 << 30))
    assert Child("write", wider).result() in ("DocaInvalidValue", "DocaNotPermitted")
    mm.stop()
    assert Child("write", blob).result() == "DocaNotPermitted"
    del mem
    mm.close()


def test_non_shareable_memory_cannot_cross_processes(host: d.Dev, backend: str) -> None:
    if backend != "emulated":
        pytest.skip("hardware can export any registered memory")
    mm = d.Mmap()
    mm.set_memrange(bytearray(4096))
    mm.set_permissions(A.PCI_READ_WRITE)
    mm.add_dev(host)
    mm.start()
    assert Child("write", mm.export_pci(host)).result() == "DocaNotSupported"
    mm.close()
