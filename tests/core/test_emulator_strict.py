"""The emulated backend's strict mode and knobs (DOCA_PY_STRICT, DOCA_PY_EMU_*).

These are about the emulator itself and skip on other backends; the DOCA rules they
guard are tested on every backend in ``tests/conformance/test_doca3_rules.py``.
"""

from __future__ import annotations


import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

import doca_py as d

from .helpers import DPU_PCI, local_mmap, rig, strict_emulator

emulated_only = pytest.mark.skipif(d.impl != "emulated", reason="a rule of the emulated backend's strict mode")


def _bufs(r, size: int = 64):  # type: ignore[no-untyped-def]
    mm = local_mmap(r.dev, 1 << 16)
    base, _ = mm.get_memrange()
    mm.buffer[:size] = os.urandom(size)
    return mm, r.inv.buf_get_by_data(mm, base, size), r.inv.buf_get_by_addr(mm, base + 4096, 4096)


@pytest.fixture
def knobs() -> Iterator[object]:
    """The emulator's strict module, restored from the environment afterwards."""
    from doca_py.emulated import strict

    yield strict
    strict.configure()


# -- strict mode ----------------------------------------------------------------------------------
@emulated_only
@pytest.mark.parametrize("misuse", ["reuse_by_addr", "set_data", "reset_data_len", "dec_refcount", "chain"])
def test_strict_refuses_touching_a_buffer_in_flight(misuse: str, knobs: object) -> None:
    assert strict_emulator()
    with rig() as r:
        mm, src, dst = _bufs(r)
        base = mm.get_memrange()[0]
        extra = r.inv.buf_get_by_addr(mm, base + 8192, 64)
        r.dma.task_memcpy_alloc_init(src, dst).submit()
        calls = {
            "reuse_by_addr": lambda: dst.reuse_by_addr(base + 4096, 512),
            "set_data": lambda: src.set_data(base, 8),
            "reset_data_len": dst.reset_data_len,
            "dec_refcount": src.dec_refcount,
            "chain": lambda: dst.chain_list(extra),
        }
        with pytest.raises(d.DocaUsageError, match="in flight") as info:
            calls[misuse]()
        assert "doca_buf" in str(info.value)
        r.drain(1)
        assert r.done[0][0] == "ok"
        calls[misuse]()  # fine once the completion was delivered
        for b in (src, dst, extra):
            if not b.closed:  # dec_refcount freed src: its wrapper is retired
                b.dec_refcount()


@emulated_only
def test_strict_refuses_stopping_the_map_or_inventory_of_a_buffer_in_flight(knobs: object) -> None:
    with rig() as r:
        mm, src, dst = _bufs(r)
        r.dma.task_memcpy_alloc_init(src, dst).submit()
        with pytest.raises(d.DocaUsageError, match="in flight"):
            r.inv.stop()
        r.drain(1)
        src.dec_refcount()
        dst.dec_refcount()


@emulated_only
def test_strict_refuses_destroying_a_thread_safe_map_with_bufs(knobs: object) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.BufInventory(2) as inv:
        mm = d.Mmap()
        mm.allocate(4096)
        mm.add_dev(dev)
        mm.enable_thread_safety()
        mm.start()
        buf = inv.buf_get_by_addr(mm, mm.get_memrange()[0], 64)
        from doca_py.emulated.mmap import EmuMmap

        h = mm._h
        assert isinstance(h, EmuMmap)
        with pytest.raises(d.DocaUsageError, match="dangle"):
            h.destroy()
        buf.dec_refcount()
        mm.close()


# -- knobs: shuffling and fault injection -------------------------------------------------------
def _completion_order(seed: int, n: int = 16) -> list[int]:
    from doca_py.emulated import strict

    strict.configure(shuffle=True, seed=seed)
    return _order_now(n)


@emulated_only
def test_shuffled_completion_order_is_seeded(knobs: object) -> None:
    orders = {tuple(_completion_order(seed)) for seed in range(4)}
    assert all(sorted(o) == list(range(16)) for o in orders)
    assert any(list(o) != list(range(16)) for o in orders)  # not FIFO
    assert len(orders) > 1
    assert _completion_order(7) == _completion_order(7)  # replayable


@emulated_only
def test_injected_fault_fails_the_task_with_the_hardware_status(knobs: object) -> None:
    from doca_py.emulated import strict

    strict.configure(faults="dma_memcpy=1.0", seed=3)
    with rig() as r:
        mm, src, dst = _bufs(r)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        r.drain(1)
        assert r.done[0][0] == "err" and task.get_status() == d.ErrorCode.IO_FAILED
        assert dst.get_data_len() == 0
        task.free()
        src.dec_refcount()
        dst.dec_refcount()


@emulated_only
def test_fault_spec_is_validated() -> None:
    from doca_py.emulated import strict

    assert strict.parse_faults("dma_memcpy=0.5,rdma_send=0.1:TIME_OUT") == {
        "dma_memcpy": (0.5, int(d.ErrorCode.IO_FAILED)), "rdma_send": (0.1, int(d.ErrorCode.TIME_OUT))}
    assert set(strict.parse_faults("*=0.01")) == set(strict.KINDS)
    for bad in ("dma_memcpy", "nope=0.1", "dma_memcpy=2", "dma_memcpy=0.1:NOPE"):
        with pytest.raises(ValueError):
            strict.parse_faults(bad)


# -- version -----------------------------------------------------------------------------------
@emulated_only
@pytest.mark.parametrize("env, expected", [(None, "3.2.0000"), ("2.6", "2.6.0000"), ("3.0", "3.0.0000")])
def test_emulated_version_is_reported_like_native(env: str | None, expected: str) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "DOCA_PY_EMU_VERSION"}
    if env is not None:
        environ["DOCA_PY_EMU_VERSION"] = env
    out = subprocess.run([sys.executable, "-c", "import doca_py; print(doca_py.version_runtime())"],
                         env=environ, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == expected


@emulated_only
def test_unknown_emulated_version_is_refused() -> None:
    environ = dict(os.environ, DOCA_PY_EMU_VERSION="9.9")
    out = subprocess.run([sys.executable, "-c", "import doca_py; doca_py.version_runtime()"],
                         env=environ, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "DOCA_PY_EMU_VERSION" in out.stderr


def _order_now(n: int = 16) -> list[int]:
    """The completion order of *n* DMA copies on a new Pe (knobs as they are)."""
    with rig(num_tasks=n) as r:
        mm, src, dst = _bufs(r, 8)
        dst.reuse_by_addr(mm.get_memrange()[0] + 4096, 8 * n)
        for i in range(n):
            r.dma.task_memcpy_alloc_init(src, dst, user_data=i).submit()
        r.drain(n)
        order = [u for _, _, u, _ in r.done]
        for _, t, _, _ in r.done:
            t.free()
        src.dec_refcount()
        dst.dec_refcount()
        mm.close()
    return order


@emulated_only
def test_a_seed_replays_a_test_whatever_ran_before_it(knobs: object) -> None:
    """A test's Pes draw from generators seeded by the seed and the test's id: what other tests (other
    Pes) did before in the process changes nothing (the suite reseeds per test, tests/conftest.py)."""
    from doca_py.emulated import strict

    strict.configure(shuffle=True, seed=11)
    strict.reseed("tests/x.py::test_one")
    alone = _order_now()
    strict.reseed("tests/x.py::test_before")
    _order_now()  # another test's Pe, drawing from its own generator
    _order_now()
    strict.reseed("tests/x.py::test_one")
    assert _order_now() == alone
    strict.reseed("tests/x.py::test_other")
    others = {tuple(_order_now()) for _ in range(4)}
    assert any(list(o) != alone for o in others)  # the token and the Pe's number are in the seed


@emulated_only
def test_a_failed_block_reports_tasks_in_flight_in_one_line(knobs: object) -> None:
    """The block's own failure stays the exception; closing what its tasks still use adds one line."""
    assert strict_emulator()
    n = 12
    with pytest.raises(AssertionError, match="the real failure") as info:
        with rig(num_tasks=n) as r:
            mm, src, dst = _bufs(r, 8)
            for i in range(n):
                r.dma.task_memcpy_alloc_init(src, r.inv.buf_get_by_addr(mm, mm.get_memrange()[0] + 4096 + 8 * i, 8)
                                             ).submit()
            raise AssertionError("the real failure")
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1, notes
    assert notes[0].startswith("then closing BufInventory failed: DocaUsageError: strict mode:")
    assert "in flight" in notes[0] and f"{n} more like it" in notes[0]  # one line for the n + 1 buffers
    # The inventory could not close (its buffers stay in flight: the Pe that would complete them closed), so
    # its finalizer would warn "unclosed" in whichever later test collects it: it is this test's, by design.
    assert not r.inv.closed and r.inv._finalizer is not None
    r.inv._finalizer.detach()
