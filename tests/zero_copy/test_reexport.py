"""The zero-copy memory chain at the doca_py level (doca-c-api.md §7.2 D.19–D.22, spec §11.5).

host mmap (LOCAL_RW | PCI_RW | RDMA_RW) --export_pci--> DPU ``create_from_export`` --export_rdma-->
target ``create_from_export`` → the target's RDMA read/write tasks reach **host** memory, with
the DPU's io_data context as the connection peer.

``same``: target and bridge contexts on one host (one-sided access through shared memory);
``cross``: a host identity per context, so one-sided access travels to the bridge's context,
which resolves the re-exported blob itself. ``test_cross_process_*`` puts the host in a child
process, as in the deployment.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.emulated.rdma import EmuRdmaConnection
from doca_py.rdma import RdmaTaskRead, RdmaTaskWrite
from doca_py.types import AccessFlag as A

from tests.deadlines import hang
from tests.rdma.helpers import Side, connect_pair, make_side, run

ROOT = Path(__file__).resolve().parents[2]
HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"
HOST_PERMS = A.LOCAL_READ_WRITE | A.PCI_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE  # as the initiator sets them
SIZE = 64 << 10
PATTERN = bytes(i % 251 for i in range(SIZE))
DEADLINE = hang(20.0)


@dataclasses.dataclass
class Chain:
    dev: d.Dev              # the DPU's (and, emulated, the target's) device
    pe: d.Pe
    inv: d.BufInventory
    target: Side            # the target's io_data context and its storage
    bridge: Side            # the bridge's io_data context (the connection peer)
    host_mm: d.Mmap
    host_mem: memoryview
    pci_blob: bytes         # the host's export for the DPU
    imported: d.Mmap        # the DPU's import of the host's PCI export
    rdma_blob: bytes        # its re-export for RDMA
    remote: d.Mmap          # the target's import of the re-export

    @property
    def rbase(self) -> int:
        return self.remote.get_memrange()[0]

    def write(self, host_offset: int, data: bytes) -> RdmaTaskWrite:
        """An RDMA write of *data* (from the target's storage) to the host at *host_offset*."""
        t = self.target
        assert t.conn is not None
        t.mem[:len(data)] = data
        src = self.inv.buf_get_by_data(t.mm, t.base, len(data))
        dst = self.inv.buf_get_by_addr(self.remote, self.rbase + host_offset, len(data))
        return t.rdma.task_write_allocate_init(t.conn, src, dst)

    def read(self, host_offset: int, n: int, into: int = 1 << 20) -> RdmaTaskRead:
        """An RDMA read of *n* host bytes at *host_offset* into the target's storage at *into*."""
        t = self.target
        assert t.conn is not None
        src = self.inv.buf_get_by_data(self.remote, self.rbase + host_offset, n)
        dst = self.inv.buf_get_by_addr(t.mm, t.base + into, n)
        return t.rdma.task_read_allocate_init(t.conn, src, dst)


@contextmanager
def chain(mode: str = "same", host_perms: A = HOST_PERMS) -> Iterator[Chain]:
    from doca_py.emulated import rdma as emu

    with d.Dev.open_by_pci_addr(HOST_PCI) as host_dev, d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, \
            d.BufInventory(64) as inv:
        host_mm = d.Mmap()
        host_mem = host_mm.allocate(SIZE)
        host_mem[:] = PATTERN
        host_mm.set_permissions(host_perms)
        host_mm.add_dev(host_dev)
        host_mm.start()
        pci_blob = host_mm.export_pci(host_dev)
        imported = d.Mmap.create_from_export(pci_blob, dev)
        try:
            emu.configure(host_id="target-host" if mode == "cross" else "")
            target = make_side(dev, pe)
            target.rdma.start()
            emu.configure(host_id="dpu" if mode == "cross" else "")
            bridge = make_side(dev, pe)
            connect_pair(pe, target, bridge)
        finally:
            emu.configure(host_id="")
        assert target.conn is not None
        h = target.conn.handle
        assert isinstance(h, EmuRdmaConnection) and h.same_host is (mode == "same")
        rdma_blob = imported.export_rdma(dev) if host_perms & (A.RDMA_READ | A.RDMA_WRITE) else b""
        remote = d.Mmap.create_from_export(rdma_blob, dev) if rdma_blob else imported
        c = Chain(dev, pe, inv, target, bridge, host_mm, host_mem, pci_blob, imported, rdma_blob, remote)
        try:
            yield c
        finally:
            target.rdma.close()
            bridge.rdma.close()
            inv.close()
            for mm in (remote, imported, host_mm, target.mm, bridge.mm):
                if not mm.closed:
                    mm.close()
            del host_mem


@pytest.fixture(params=["same", "cross"])
def mode(backend: str, request: pytest.FixtureRequest) -> str:
    if backend != "emulated":
        pytest.skip("the chain is built on the emulated devices")
    return str(request.param)


def _untouched(c: Chain) -> None:
    assert bytes(c.host_mem) == PATTERN


def test_the_target_reads_and_writes_host_memory_through_the_reexport(mode: str) -> None:
    with chain(mode) as c:
        # The target sees the host's range: its addresses are the host's.
        assert c.remote.get_memrange() == c.host_mm.get_memrange()
        assert c.remote.get_from_export() and c.imported.get_from_export()
        new = bytes(range(256)) * 16
        assert run(c.pe, c.target, c.write(8192, new)) == ["ok"]
        assert bytes(c.host_mem[8192:8192 + 4096]) == new
        assert bytes(c.host_mem[:8192]) == PATTERN[:8192]
        assert run(c.pe, c.target, c.read(100, 3000)) == ["ok"]
        assert bytes(c.target.mem[1 << 20:(1 << 20) + 3000]) == PATTERN[100:3100]


@pytest.mark.parametrize("op", ["write", "read"])
def test_access_outside_the_reexported_range_is_refused(mode: str, op: str) -> None:
    with chain(mode) as c:
        with pytest.raises(e.DocaInvalidValue):
            c.inv.buf_get_by_addr(c.remote, c.rbase + SIZE - 16, 64)
        with pytest.raises(e.DocaInvalidValue):
            c.inv.buf_get_by_addr(c.remote, c.rbase - 64, 64)
        # A forged descriptor past the end: the transfer itself is refused, nothing is touched.
        # (A failed task stops its ctx, DOCA's rule: one refusal per chain.)
        t: RdmaTaskWrite | RdmaTaskRead
        if op == "write":
            t = c.write(0, b"\x11" * 64)
            buf = t.get_dst_buf()
        else:
            t = c.read(0, 64)
            buf = t.get_src_buf()
        buf._h.head = buf._h.data = c.rbase + SIZE - 16  # type: ignore[attr-defined]
        assert run(c.pe, c.target, t) == ["err"] and t.get_status() == e.ErrorCode.INVALID_VALUE
        _untouched(c)
        assert bytes(c.target.mem[1 << 20:(1 << 20) + 64]) == bytes(64)


@pytest.mark.parametrize("op", ["write", "read"])
@pytest.mark.parametrize("how", ["stop", "destroy"])
def test_the_host_revoking_its_map_revokes_the_reexport(mode: str, how: str, op: str) -> None:
    with chain(mode) as c:
        t: d.Task = c.write(0, b"\x22" * 64) if op == "write" else c.read(0, 64)
        host_mm = c.host_mm
        if how == "stop":
            host_mm.stop()
        else:
            c.host_mem.release()
            host_mm.close()
        assert run(c.pe, c.target, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED
        assert bytes(c.target.mem[1 << 20:(1 << 20) + 64]) == bytes(64)
        # Nor can the blob be imported afresh.
        with pytest.raises(e.DocaNotPermitted):
            d.Mmap.create_from_export(c.rdma_blob, c.dev)
        if how == "stop":
            _untouched(c)


def test_the_reexport_needs_the_original_rdma_permissions(mode: str) -> None:
    # No RDMA_* on the host's map: the DPU cannot re-export it (D.20).
    with chain(mode, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE) as c:
        with pytest.raises(e.DocaNotPermitted):
            c.imported.export_rdma(c.dev)
    # RDMA_READ only: the target may read host memory but not write it.
    with chain(mode, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE | A.RDMA_READ) as c:
        assert run(c.pe, c.target, c.read(64, 64)) == ["ok"]
        assert bytes(c.target.mem[1 << 20:(1 << 20) + 64]) == PATTERN[64:128]
        w = c.write(0, b"\x33" * 64)
        assert run(c.pe, c.target, w) == ["err"] and w.get_status() == e.ErrorCode.NOT_PERMITTED
        _untouched(c)


def test_only_a_pci_import_is_reexported_and_only_for_rdma(mode: str) -> None:
    with chain(mode) as c:
        with pytest.raises(e.DocaNotPermitted):
            c.imported.export_pci(c.dev)        # PCI → PCI
        with pytest.raises(e.DocaNotPermitted):
            c.remote.export_rdma(c.dev)         # an RDMA import is not re-exported again


@pytest.mark.parametrize("op", ["write", "read"])
def test_destroying_the_reexporting_map_revokes_its_rdma_blob(mode: str, op: str) -> None:
    """DOCA: an export blob belongs to the map that exported it and dies when that map is
    stopped or destroyed (doca-c-api.md §7.2 D.19); for the zero-copy re-export that map is the
    DPU's ``create_from_export`` map, whose RDMA registration of host memory goes with it. The
    host's own map stays exported: only the bridge's re-export is cut off."""
    with chain(mode) as c:
        t: d.Task = c.write(0, b"\x44" * 64) if op == "write" else c.read(0, 64)
        c.imported.close()
        assert run(c.pe, c.target, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED
        _untouched(c)
        assert bytes(c.target.mem[1 << 20:(1 << 20) + 64]) == bytes(64)
        with pytest.raises(e.DocaNotPermitted):
            d.Mmap.create_from_export(c.rdma_blob, c.dev)
        # The host's export is untouched: a new import re-exports it afresh, under a new blob.
        again = d.Mmap.create_from_export(c.pci_blob, c.dev)
        try:
            blob = again.export_rdma(c.dev)
            assert blob != c.rdma_blob
            d.Mmap.create_from_export(blob, c.dev).close()
        finally:
            again.close()


def test_the_reexport_is_the_reexporting_maps_own(mode: str) -> None:
    # One blob per map (asking again gives the same one); a second import of the same host
    # export has a blob of its own, and destroying one map leaves the other's intact.
    with chain(mode) as c:
        assert c.imported.export_rdma(c.dev) == c.rdma_blob
        other = d.Mmap.create_from_export(c.pci_blob, c.dev)
        try:
            other_blob = other.export_rdma(c.dev)
            assert other_blob != c.rdma_blob
            other_remote = d.Mmap.create_from_export(other_blob, c.dev)
            other.close()
            with pytest.raises(e.DocaNotPermitted):
                d.Mmap.create_from_export(other_blob, c.dev)
            other_remote.close()
            assert run(c.pe, c.target, c.read(64, 64)) == ["ok"]
            assert bytes(c.target.mem[1 << 20:(1 << 20) + 64]) == PATTERN[64:128]
        finally:
            if not other.closed:
                other.close()


# -- the host in its own process, as deployed ------------------------------------------------------------------


class Child:
    """A child process obeying one-line commands (``host_child``, ``dpu_child``); it prints its blob first."""

    def __init__(self, module: str, arg: str) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", module, arg], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self._line()
        assert line.startswith("blob "), line
        self.blob = bytes.fromhex(line.split()[1])

    def _line(self) -> str:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()  # bounded: the child answers each command at once, or exits
        assert line, f"host child exited (rc={self.p.poll()})"
        return line.strip()

    def ask(self, cmd: str) -> str:
        assert self.p.stdin is not None
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self._line()

    def close(self) -> None:
        if self.p.poll() is None:
            try:
                self.p.communicate("exit\n", timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


@pytest.mark.multiprocess
def test_cross_process_host_memory_is_reached_and_revoked(backend: str) -> None:
    if backend != "emulated":
        pytest.skip("the chain is built on the emulated devices")
    host = Child("tests.zero_copy.host_child", str(int(HOST_PERMS)))
    try:
        with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(16) as inv:
            imported = d.Mmap.create_from_export(host.blob, dev)       # the DPU, across PCIe
            remote = d.Mmap.create_from_export(imported.export_rdma(dev), dev)  # the target
            assert remote.get_memrange() == imported.get_memrange()
            target, bridge = make_side(dev, pe), make_side(dev, pe)
            connect_pair(pe, target, bridge)
            assert target.conn is not None
            rbase = remote.get_memrange()[0]

            def write(off: int, data: bytes) -> d.Task:
                assert target.conn is not None
                target.mem[:len(data)] = data
                return target.rdma.task_write_allocate_init(target.conn, inv.buf_get_by_data(target.mm, target.base,
                                                                                               len(data)),
                                                            inv.buf_get_by_addr(remote, rbase + off, len(data)))

            assert run(pe, target, write(4096, b"zero-copy!")) == ["ok"]
            assert host.ask("dump 4090 20") == (PATTERN[4090:4096] + b"zero-copy!" + PATTERN[4106:4110]).hex()
            with pytest.raises(e.DocaInvalidValue):
                inv.buf_get_by_addr(remote, rbase + SIZE - 4, 8)
            assert host.ask("stop") == "stopped"
            t = write(0, b"late")
            assert run(pe, target, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED
            assert host.ask("dump 0 4") == PATTERN[:4].hex()
            target.rdma.close()
            bridge.rdma.close()
            inv.close()
            for mm in (remote, imported, target.mm, bridge.mm):
                mm.close()
    finally:
        host.close()


@pytest.mark.multiprocess
@pytest.mark.parametrize("how", ["dpu-destroys", "host-stops"])
def test_cross_process_reexport_is_the_dpus_and_dies_with_its_map(backend: str, how: str) -> None:
    """Host (this process), DPU (a child) and target (this process again, through the DPU's
    blob) as in the deployment: the target maps host memory handed on by the DPU, and loses
    it when either the DPU destroys the re-exporting map or the host stops its own."""
    if backend != "emulated":
        pytest.skip("the chain is built on the emulated devices")
    with d.Dev.open_by_pci_addr(HOST_PCI) as host_dev, d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, \
            d.BufInventory(16) as inv:
        host_mm = d.Mmap()
        host_mem = host_mm.allocate(SIZE)
        host_mem[:] = PATTERN
        host_mm.set_permissions(HOST_PERMS)
        host_mm.add_dev(host_dev)
        host_mm.start()
        dpu = Child("tests.zero_copy.dpu_child", host_mm.export_pci(host_dev).hex())
        try:
            remote = d.Mmap.create_from_export(dpu.blob, dev)  # from the DPU's process, not the host's
            assert remote.get_memrange() == host_mm.get_memrange()
            target, bridge = make_side(dev, pe), make_side(dev, pe)
            connect_pair(pe, target, bridge)
            assert target.conn is not None
            rbase = remote.get_memrange()[0]

            def write(off: int, data: bytes) -> d.Task:
                assert target.conn is not None
                target.mem[:len(data)] = data
                return target.rdma.task_write_allocate_init(target.conn, inv.buf_get_by_data(target.mm, target.base,
                                                                                               len(data)),
                                                            inv.buf_get_by_addr(remote, rbase + off, len(data)))

            assert run(pe, target, write(4096, b"zero-copy!")) == ["ok"]
            assert bytes(host_mem[4096:4106]) == b"zero-copy!"
            if how == "dpu-destroys":
                assert dpu.ask("destroy") == "destroyed"
            else:
                host_mm.stop()
            t = write(0, b"late")
            assert run(pe, target, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED
            assert bytes(host_mem[:4]) == PATTERN[:4]
            with pytest.raises(e.DocaNotPermitted):
                d.Mmap.create_from_export(dpu.blob, dev)
            target.rdma.close()
            bridge.rdma.close()
            inv.close()
            for mm in (remote, target.mm, bridge.mm):
                mm.close()
        finally:
            dpu.close()
            del host_mem
            host_mm.close()
