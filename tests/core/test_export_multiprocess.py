"""Cross-process mmap export/import: a DPU side imports, DMAs, and the owner on the host side sees the bytes.

Each test is a ``doca_pair`` run: the host function exports memory and drives the DPU side
(:func:`tests.core.mp_child.serve`) request by request; the test checks what the host side returns.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import doca_py as d
from doca_py.testing import DocaPair, Side
from doca_py.types import AccessFlag as A

from . import mp_child
from .helpers import HOST_PCI

pytestmark = pytest.mark.multiprocess
ROOT = Path(__file__).resolve().parents[2]


def _ask(side: Side, mode: str, blob: bytes, before_go: Callable[[], object] | None = None) -> str:
    """One request to the DPU side; *before_go* runs once it is ready (its buffers made)."""
    side.send((mode, blob))
    first = side.recv(60)
    if first != "ready":
        return str(first)
    if before_go is not None:
        before_go()
    side.send("go")
    return str(side.recv(60))


def _exported(dev: d.Dev, perms: A) -> tuple[d.Mmap, memoryview, bytes]:
    mm = d.Mmap()
    mem = mm.allocate(8192)
    mem[:6] = b"parent"
    mm.set_permissions(perms)
    mm.add_dev(dev)
    mm.start()
    return mm, mem, mm.export_pci(dev)


def _pair(doca_pair: DocaPair, host: Callable[[Side], Any], **args: Any) -> Any:
    result, _ = doca_pair.run(host, mp_child.serve, timeout=120, args=args)
    return result


def _write_then_read(side: Side) -> tuple[str, bytes, str]:
    mm, mem, blob = _exported(side.dev, side.args["perms"])
    wrote = _ask(side, "write", blob)
    after = bytes(mem[100:106])
    read = _ask(side, "read", blob)
    side.send(None)
    del mem
    mm.close()
    return wrote, after, read


def test_child_writes_parent_memory_zero_copy(doca_pair: DocaPair) -> None:
    wrote, after, read = _pair(doca_pair, _write_then_read, perms=A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
    assert wrote == "ok"
    assert after == b"child!"
    assert read == "ok:" + b"parent".hex()


def test_read_only_export_refuses_writes_and_touches_nothing(doca_pair: DocaPair) -> None:
    wrote, after, read = _pair(doca_pair, _write_then_read, perms=A.LOCAL_READ_WRITE | A.PCI_READ_ONLY)
    assert wrote == "NOT_PERMITTED"
    assert after == bytes(6)
    assert read == "ok:" + b"parent".hex()


def _out_of_range(side: Side) -> str:
    mm, mem, blob = _exported(side.dev, A.PCI_READ_WRITE)
    res = _ask(side, "oob", blob)
    side.send(None)
    del mem
    mm.close()
    return res


def test_out_of_range_buffer_is_refused(doca_pair: DocaPair) -> None:
    assert _pair(doca_pair, _out_of_range) == "DocaInvalidValue"


def _stop_while_ready(side: Side) -> tuple[str, bytes]:
    mm, mem, blob = _exported(side.dev, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
    res = _ask(side, "write", blob, before_go=mm.stop)  # the importer holds its buffers already
    after = bytes(mem[100:106])
    side.send(None)
    del mem
    mm.close()
    return res, after


def test_stop_revokes_access_of_a_live_importer(doca_pair: DocaPair) -> None:
    res, after = _pair(doca_pair, _stop_while_ready)
    assert res == "NOT_PERMITTED"
    assert after == bytes(6)


def _forged_wider_revoked(side: Side) -> tuple[str, str, str]:
    from doca_py.emulated import export as ex

    mm, mem, blob = _exported(side.dev, A.PCI_READ_WRITE)
    forged = _ask(side, "write", ex.encode(dataclasses.replace(ex.decode(blob), key=bytes(16))))
    wider = _ask(side, "write", ex.encode(dataclasses.replace(ex.decode(blob), length=1 << 30)))
    mm.stop()
    revoked = _ask(side, "write", blob)
    side.send(None)
    del mem
    mm.close()
    return forged, wider, revoked


def test_forged_key_and_revoked_blob_are_refused(doca_pair: DocaPair) -> None:
    forged, wider, revoked = _pair(doca_pair, _forged_wider_revoked)
    assert forged == "DocaNotPermitted"
    assert wider in ("DocaInvalidValue", "DocaNotPermitted")
    assert revoked == "DocaNotPermitted"


def _not_shareable(side: Side) -> str:
    mm = d.Mmap()
    mm.set_memrange(bytearray(4096))
    mm.set_permissions(A.PCI_READ_WRITE)
    mm.add_dev(side.dev)
    mm.start()
    res = _ask(side, "write", mm.export_pci(side.dev))
    side.send(None)
    mm.close()
    return res


def test_non_shareable_memory_cannot_cross_processes(doca_pair: DocaPair) -> None:
    # Hardware can export any registered memory; the emulator's other process cannot reach a bytearray.
    assert _pair(doca_pair, _not_shareable) == "DocaNotSupported"


def _neighbour_opens(dumpable: bool, mode: str = "export") -> str:
    """A holder of shared memory (*mode*: an exporter, a ring's creator or attacher) and a neighbour of
    the same (unprivileged) user; what the neighbour gets."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    if dumpable:
        env["DOCA_PY_EMU_DUMPABLE"] = "1"
    exporter = subprocess.Popen([sys.executable, "-m", "tests.core.mp_isolation", mode], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert exporter.stdout is not None
        pid, fd = exporter.stdout.readline().split()[:2]
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


@pytest.mark.parametrize("mode", ["ring-create", "ring-attach"])
def test_a_same_user_neighbour_cannot_open_a_same_host_ring(mode: str) -> None:
    """The comch and RDMA same-host rings carry the messages in flight: a process that creates or
    attaches one closes its /proc/PID/fd to the neighbours of its user, as an exporter does."""
    assert _neighbour_opens(dumpable=False, mode=mode) == "refused"
    assert _neighbour_opens(dumpable=True, mode=mode) == "opened"  # the control


@pytest.fixture
def host(backend: str):  # type: ignore[no-untyped-def]
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev:
        yield dev


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


def _widened(side: Side) -> tuple[str, str, bytes]:
    from doca_py.emulated import export as ex

    mm, mem, blob = _exported(side.dev, A.PCI_READ_ONLY)
    widened = _ask(side, "write", ex.encode(dataclasses.replace(ex.decode(blob), perms=int(A.PCI_READ_WRITE))))
    plain = _ask(side, "write", blob)  # read-only export: the write task fails
    after = bytes(mem[100:106])
    side.send(None)
    del mem
    mm.close()
    return widened, plain, after


def test_the_owner_refuses_a_blob_with_widened_permissions(doca_pair: DocaPair) -> None:
    widened, plain, after = _pair(doca_pair, _widened)
    assert widened == "DocaNotPermitted"
    assert plain == "NOT_PERMITTED"
    assert after == bytes(6)
