"""Bad input to the emulated sync event's imports: every malformed, foreign, stale or orphaned blob is a
DOCA error (never a crash, never an import of something else)."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e

from .helpers import DPU_PCI


@pytest.fixture
def dev(backend: str) -> Iterator[d.Dev]:
    if backend != "emulated":
        pytest.skip("the emulator's blob format")
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        yield dev


def _event(dev: d.Dev) -> d.SyncEvent:
    se = d.SyncEvent()
    se.add_subscriber_location_cpu(dev)
    se.add_subscriber_location_remote_pci()
    se.add_publisher_location_remote_net()
    se.start()
    return se


def test_another_format_version_is_unsupported(dev: d.Dev) -> None:
    from doca_py.emulated import sync_event as emu

    with _event(dev) as se:
        blob = bytearray(se.export_to_remote_pci(dev))
        struct.pack_into("<H", blob, 8, emu.VERSION + 1)
        with pytest.raises(e.DocaUnsupportedVersion):
            d.SyncEvent.create_from_export(dev, bytes(blob))


def test_a_wrapped_mmap_export_is_not_an_event(dev: d.Dev) -> None:
    from doca_py.emulated import sync_event as emu

    with d.Mmap() as mm:
        mm.allocate(4096)
        mm.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
        mm.add_dev(dev)
        mm.start()
        forged = emu.encode_blob(emu.BlobKind.PCI, mm.export_pci(dev))  # a well-formed wrapper, checksum and all
        with pytest.raises(e.DocaInvalidValue, match="64-bit value"):
            d.SyncEvent.create_from_export(dev, forged)


def test_random_bytes_and_mutations_are_refused(dev: d.Dev) -> None:
    rng = random.Random(1234)
    with _event(dev) as se:
        good = se.export_to_remote_pci(dev)
        candidates = [bytes(rng.getrandbits(8) for _ in range(n)) for n in (0, 1, 15, 16, 17, 64, len(good))]
        for _ in range(200):
            mutated = bytearray(good)
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
            candidates.append(bytes(mutated))
        candidates += [good[:n] for n in range(0, len(good), 7)]
        for blob in candidates:
            for imp in (d.SyncEvent.create_from_export, d.SyncEventRemoteNet.create_from_export):
                with pytest.raises(e.DocaError):
                    imp(dev, blob)  # type: ignore[operator]
        assert se.get() == 0  # and the event is untouched


def test_an_event_whose_owner_died_cannot_be_imported(dev: d.Dev) -> None:
    code = ("import doca_py as d\n"
            f"dev = d.Dev.open_by_pci_addr({DPU_PCI!r})\n"
            "se = d.SyncEvent(); se.add_subscriber_location_remote_pci(); se.start()\n"
            "print(se.export_to_remote_pci(dev).hex(), flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env={**os.environ, "DOCA_PY_IMPL": "emulated"})
    blob = bytes.fromhex(out.stdout.split()[-1])
    with pytest.raises(e.DocaNotFound):
        d.SyncEvent.create_from_export(dev, blob)
