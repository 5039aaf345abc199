"""Cross-process mmap export/import: a child imports, DMAs, and the owner sees the bytes."""

from __future__ import annotations

import dataclasses
import os
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


def _neighbour_opens(dumpable: bool) -> str:
    """An exporter and a neighbour of the same (unprivileged) user; what the neighbour gets."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    if dumpable:
        env["DOCA_PY_EMU_DUMPABLE"] = "1"
    exporter = subprocess.Popen([sys.executable, "-m", "tests.core.mp_isolation", "export"], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert exporter.stdout is not None
        pid, fd, _blob = exporter.stdout.readline().split()
        out = subprocess.run([sys.executable, "-m", "tests.core.mp_isolation", "neighbour", pid, fd], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or out.stderr
    finally:
        exporter.communicate("done\n", timeout=60)


def test_a_same_user_neighbour_cannot_open_exported_memory_without_the_blob(backend: str) -> None:
    if backend != "emulated":
        pytest.skip("isolation of the emulated memory hand-over")
    assert _neighbour_opens(dumpable=False) == "refused"  # /proc/<pid>/fd is closed to the neighbour
    assert _neighbour_opens(dumpable=True) == "opened"  # the control: what the isolation prevents


def _shared_of(mm: d.Mmap):  # type: ignore[no-untyped-def]
    from doca_py.memory import find_shared

    shm = find_shared(*mm.get_memrange())
    assert shm is not None
    return shm


def test_the_shared_header_holds_no_usable_key(host: d.Dev, backend: str) -> None:
    if backend != "emulated":
        pytest.skip("layout of the emulated export table")
    from doca_py.emulated import export as ex

    mm, mem, blob = _exported(host, A.PCI_READ_WRITE)
    key = ex.decode(blob).key
    header = bytes(_shared_of(mm).header)
    assert key not in header and ex.key_digest(key) in header
    del mem
    mm.close()


def test_the_owner_refuses_a_blob_with_widened_permissions(host: d.Dev, backend: str) -> None:
    if backend != "emulated":
        pytest.skip("forging needs the emulated blob format")
    from doca_py.emulated import export as ex

    mm, mem, blob = _exported(host, A.PCI_READ_ONLY)
    widened = ex.encode(dataclasses.replace(ex.decode(blob), perms=int(A.PCI_READ_WRITE)))
    assert Child("write", widened).result() == "DocaNotPermitted"
    assert Child("write", blob).go() == "NOT_PERMITTED"  # read-only export: the write task fails
    assert bytes(mem[100:106]) == bytes(6)
    del mem
    mm.close()
