"""The gga worker's engines in-process (emulated backend): one task of each kind per transaction,
re-aimed per block — the blocks come out right, no buffer is taken per IO, and a failed engine
is restarted with its tasks allocated anew."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import doca_py as d
from doca_py.types import AccessFlag

from apps.gga_offload.engines import Engines
from apps.gga_offload.transaction import DECOMPRESS, FETCH_FROM_INITIATOR, PRODUCE_EC, READ_ACTIONS, RECOVER, \
    WRITE_ACTIONS, Transaction
from apps.storage.wire import compressed_block as cb
from apps.storage.wire.addressing import ChunkLayout, ReadMode, TargetRole

from .harness import plain_content

B = 4096
H = B // 2


class Rig:
    """Engines of one 2-transaction worker over a local region and a local "host" memory."""

    def __init__(self, dev: d.Dev, pe: d.Pe) -> None:
        self.pe = pe
        self.layout = layout = ChunkLayout(block_size=B, transactions_per_worker=2, write_flow=True)
        self.region = self._mmap(dev, layout.region_size(1))
        self.host = self._mmap(dev, 8 * B)
        self.inv = d.BufInventory(64)
        self.progressed: list[Transaction] = []
        self._step: tuple[Callable[[Transaction], None], int] | None = None
        self.engines = Engines(dev, pe, 2, "cauchy", self._progress, "test worker")
        for ctx in self.engines.contexts:
            ctx.start()
        self.engines.create_matrices()
        self.txns = []
        for j in range(2):
            chunk = layout.chunk_base(0, j)
            where = layout.offsets(chunk)
            self.txns.append(Transaction(j, chunk, (where[TargetRole.DATA_1], where[TargetRole.DATA_2],
                                                    where[TargetRole.DATA_P]), (chunk + B + H, chunk + 2 * B, chunk + B)))
        self.engines.prepare(self.inv, self.region, self.region.get_memrange()[0], self.host,
                             self.host.get_memrange()[0], 8 * B, layout, self.txns)

    @staticmethod
    def _mmap(dev: d.Dev, size: int) -> d.Mmap:
        mm = d.Mmap()
        mm.allocate(size)
        mm.set_permissions(AccessFlag.LOCAL_READ_WRITE)
        mm.add_dev(dev)
        mm.start()
        return mm

    def _progress(self, t: Transaction) -> None:
        # As the worker: a step still pending (its transaction waited for a restart) is done again.
        if self._step is not None and t.pending & self._step[1] and not t.error:
            self._step[0](t)
        else:
            self.progressed.append(t)

    def run(self, t: Transaction, step: Callable[[Transaction], None], bit: int) -> None:
        """Do one engine step (action *bit*) and progress until it completed (or failed)."""
        self.progressed.clear()
        self._step = (step, bit)
        t.pending |= bit
        step(t)
        for _ in range(2000):
            if self.progressed or not t.op_busy:
                break
            self.pe.progress()
            self.engines.restart_stopped(pytest.fail)
            if self.engines.blocked and not self.engines.restart:
                self.engines.resume_blocked()
        assert not t.op_busy, "the engine step did not complete"

    def close(self) -> None:
        self.engines.closing = True
        for ctx in self.engines.contexts:
            ctx.close()
        self.engines.release()
        for obj in (self.inv, self.region, self.host):
            obj.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe:
        r = Rig(dev, pe)
        try:
            yield r
        finally:
            r.close()


def _write_block(rig: Rig, t: Transaction, host_block: int) -> bytes:
    """The write flow's engine steps for one block: DMA from the host, compress, parity."""
    t.begin(WRITE_ACTIONS, 2, 1, host_block * B, 0)
    rig.run(t, rig.engines.fetch, FETCH_FROM_INITIATOR)
    assert t.error == 0, t.error_text
    rig.run(t, rig.engines.produce_ec, PRODUCE_EC)
    assert t.error == 0, t.error_text
    assert not t.pending & (FETCH_FROM_INITIATOR | PRODUCE_EC)
    return bytes(rig.region.buffer[t.chunk_base:t.chunk_base + B + H])


def test_blocks_are_written_recovered_and_decompressed_with_the_same_tasks(rig: Rig) -> None:
    plain = plain_content(2, B)
    rig.host.buffer[:2 * B] = plain
    t = rig.txns[1]
    free = None
    for k in range(2):
        stored = _write_block(rig, t, k)
        assert cb.decompress_block(stored[:B]) == plain[k * B:(k + 1) * B]
        # a recovery read: data_1's half is lost, rebuilt from data_2 and the parity (cauchy: a real recover)
        region = rig.region.buffer
        region[t.chunk_base:t.chunk_base + H] = bytes(H)
        t.reset()
        t.begin(READ_ACTIONS, 1, 1, (4 + k) * B, 0)
        t.mode = ReadMode.RECOVER_A
        rig.run(t, rig.engines.recover, RECOVER)
        assert t.error == 0, t.error_text
        assert bytes(region[t.chunk_base:t.chunk_base + B]) == stored[:B]
        rig.run(t, rig.engines.decompress, DECOMPRESS)
        assert t.error == 0, t.error_text
        assert bytes(rig.host.buffer[(4 + k) * B:(5 + k) * B]) == plain[k * B:(k + 1) * B]
        t.reset()
        if free is None:
            free = rig.inv.get_num_free_elements()
        else:  # the second IO took no buffer: everything was re-aimed
            assert rig.inv.get_num_free_elements() == free


def test_a_failed_decompress_fails_its_io_and_the_engine_restarts(rig: Rig) -> None:
    plain = plain_content(1, B)
    rig.host.buffer[:B] = plain
    t, other = rig.txns
    stored = _write_block(rig, t, 0)
    region = rig.region.buffer
    region[other.chunk_base:other.chunk_base + B] = stored[:B]
    region[other.chunk_base + 8:other.chunk_base + 12] = (0x7FFFFF00).to_bytes(4, "little")  # a corrupt stream
    other.begin(READ_ACTIONS, 1, 1, 2 * B, 0)
    other.pending = DECOMPRESS
    rig.run(other, rig.engines.decompress, DECOMPRESS)
    assert other.error != 0 and "failed" in other.error_text
    assert rig.engines.restart  # the Compress context stopped
    # the other transaction's decompress waits for the restart, then runs on a new task
    t.reset()
    t.begin(READ_ACTIONS, 1, 1, 3 * B, 0)
    t.pending = DECOMPRESS
    rig.run(t, rig.engines.decompress, DECOMPRESS)
    assert t.error == 0, t.error_text
    assert not rig.engines.restart
    assert bytes(rig.host.buffer[3 * B:4 * B]) == plain
