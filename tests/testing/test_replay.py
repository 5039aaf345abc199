"""A seed replays the run: fault decisions and shuffled orders are functions of the seed and what they
decide about (a task's identity), never of how many decisions came before (issue 25, item 1).

The acceptance test runs ``examples/rdma_rounds.py`` (40 rounds of RDMA reads and sends between a host
and a DPU process, faults at 5 %, shuffling on) ten times with one seed while both cores are busy, and
asserts that every run injects the same faults into the same tasks and fails in the same round.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import doca_py as d
from doca_py.testing import DocaPair, Knobs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))  # the application under test is an example (a spawned side imports it by file)
import rdma_rounds  # noqa: E402

FAULTS = "rdma_read=0.05,rdma_send=0.05,rdma_receive=0.05"
SEED = 1090  # under FAULTS, the first fault is injected late in the run (in round 26): the runs diverge in
#            timing for many rounds before it
ROUNDS = 40
RUNS = 10
BURN_SECONDS = 240  # a CPU burner ends by itself after this, should the test be killed before its cleanup


@pytest.fixture
def restore_knobs() -> Iterator[Any]:
    """The emulator's knobs module; the knobs are read again from the environment afterwards."""
    from doca_py.emulated import strict

    yield strict
    strict.configure()


@pytest.fixture
def busy_cores() -> Iterator[None]:
    """Two processes that keep both cores busy for the duration of the test (ended after it)."""
    code = f"import time\nend = time.monotonic() + {BURN_SECONDS}\nwhile time.monotonic() < end:\n    pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
        for p in burners:
            p.wait(30)


# -- the emulator's decisions ----------------------------------------------------------------------------------
def test_a_fault_decision_depends_on_the_seed_token_and_task_only(doca_knobs: Knobs, restore_knobs: Any) -> None:
    strict = restore_knobs
    strict.configure(faults="rdma_read=0.05", seed=5)
    strict.reseed("dpu")
    tasks = [strict.task_id("EmuRdma#0/3", n) for n in range(2000)]
    first = [strict.fault("rdma_read", t) for t in tasks]
    hit = [t for t, code in zip(tasks, first) if code]
    assert strict.injected() == [strict.Fault(t, "rdma_read", "CONNECTION_RESET") for t in hit]  # recorded
    for t in tasks[:500]:  # many decisions in between change nothing
        strict.fault("rdma_read", t + "/other")
    assert [strict.fault("rdma_read", t) for t in reversed(tasks)] == first[::-1]
    assert 50 <= len(hit) <= 150  # about 5 % (fixed for this seed)
    assert set(first) == {0, int(d.ErrorCode.CONNECTION_RESET)}
    assert strict.fault("rdma_send", tasks[0]) == 0  # a kind without faults is never drawn
    strict.reseed("host")  # another side: other decisions, an empty record
    assert strict.injected() == []
    assert [strict.fault("rdma_read", t) for t in tasks] != first
    strict.configure(faults="rdma_read=0.05", seed=6)  # another seed: other decisions
    strict.reseed("dpu")
    assert [strict.fault("rdma_read", t) for t in tasks] != first


def test_ctxs_are_numbered_per_type_under_the_token(doca_knobs: Knobs, doca_dev: d.Dev, restore_knobs: Any) -> None:
    strict = restore_knobs
    strict.reseed("numbering")
    a, b, c = d.Dma(doca_dev), d.Ec(doca_dev), d.Dma(doca_dev)
    assert [x.handle.uid for x in (a, b, c)] == ["EmuDma#0", "EmuEc#0", "EmuDma#1"]  # type: ignore[attr-defined]
    assert [p.uid for p in b.handle.pools] == [f"EmuEc#0/{i}" for i in range(4)]  # type: ignore[attr-defined]
    for x in (a, b, c):
        x.close()
    strict.reseed("numbering")
    again = d.Dma(doca_dev)
    assert again.handle.uid == "EmuDma#0"  # type: ignore[attr-defined]
    again.close()


def _copies(dev: d.Dev, pe: d.Pe, dma: d.Dma, n: int, done: list[int]) -> None:
    """Submit *n* copies on *dma* together and progress until they completed (their callbacks append
    their numbers to *done*)."""
    end = len(done) + n
    with d.BufInventory(2 * n) as inv:
        mm = d.Mmap()
        mm.allocate(2 * n * 64)
        mm.add_dev(dev)
        mm.start()
        base = mm.get_memrange()[0]
        bufs = [(inv.buf_get_by_data(mm, base + i * 64, 8), inv.buf_get_by_addr(mm, base + (n + i) * 64, 8))
                for i in range(n)]
        for i, (src, dst) in enumerate(bufs):
            dma.task_memcpy_alloc_init(src, dst, user_data=i).submit()
        while len(done) < end:
            pe.progress()
        for src, dst in bufs:
            src.dec_refcount()
            dst.dec_refcount()
        mm.close()
        inv.close()


def _main_order(dev: d.Dev, before: int) -> list[int]:
    """The completion order of 16 copies on one Dma ctx, after *before* copies on another ctx of its Pe."""
    from doca_py.emulated import strict

    strict.reseed("order")
    out: list[int] = []
    with d.Pe() as pe:
        ctxs = []
        for _ in range(2):
            dma = d.Dma(dev)
            pe.connect_ctx(dma)
            dma.task_memcpy_set_conf(lambda t, u, c: (out.append(u), t.free()), lambda t, u, c: t.free(), 16)
            dma.start()
            ctxs.append(dma)
        main, other = ctxs
        if before:
            _copies(dev, pe, other, before, out)
        out.clear()
        _copies(dev, pe, main, 16, out)
        for dma in ctxs:
            dma.close()
    return out


def test_a_batch_is_shuffled_the_same_whatever_was_shuffled_before(doca_knobs: Knobs, doca_dev: d.Dev,
                                                                   restore_knobs: Any) -> None:
    """A running generator per Pe made the order of a batch depend on every shuffle before it (the number
    of which depends on timing between processes); a keyed order depends on the batch only."""
    restore_knobs.configure(shuffle=True, seed=11)
    alone = _main_order(doca_dev, 0)
    assert sorted(alone) == list(range(16)) and alone != list(range(16))
    assert _main_order(doca_dev, 5) == alone
    assert _main_order(doca_dev, 9) == alone
    restore_knobs.configure(shuffle=True, seed=12)
    assert _main_order(doca_dev, 0) != alone  # 16! orders: another seed gives another


# -- acceptance: a two-process application replays from its seed ----------------------------------------------
@pytest.mark.multiprocess
def test_a_seed_replays_a_two_process_rdma_run_under_faults_on_busy_cores(doca_knobs: Knobs, busy_cores: None) -> None:
    knobs = doca_knobs.replace(seed=SEED, faults=FAULTS, shuffle=True)
    outcomes = []
    for _ in range(RUNS):
        host, dpu = DocaPair(knobs).run(rdma_rounds.host, rdma_rounds.dpu, timeout=120, args=ROUNDS)
        outcomes.append({
            "failed in round": rdma_rounds.first_failure(host, dpu),
            # how far a side got is replayed for a side a fault hit; its peer stops when it notices,
            # which may be before or after it finished that round (timing, not a decision of the seed)
            "rounds passed": tuple(r["rounds"] if r["faults"] else None for r in (host, dpu)),
            "host faults": sorted(host["faults"]),
            "dpu faults": sorted(dpu["faults"]),
        })
    first = outcomes[0]
    assert all(o == first for o in outcomes), "\n".join(map(str, outcomes))
    faults = first["host faults"] + first["dpu faults"]
    assert faults, f"seed {SEED} injected no fault in {ROUNDS} rounds: {first}"
    # The run went on for many rounds before the fault, then stopped in the round of the fault.
    assert first["failed in round"] is not None and first["failed in round"] >= 10, first
    assert first["failed in round"] - 1 in first["rounds passed"], first  # the faulted side stopped there


def test_the_replay_line_carries_every_knob_that_differs_from_the_default(tmp_path: Path) -> None:
    """Each knob off its default appears once in the line, and a default one does not appear; the line
    starts by going to the rootdir, so it works from any directory."""
    import shlex

    from doca_py.testing.knobs import Knobs

    plain = Knobs(seed=5).replay("tests/test_x.py::test_y", rootdir=tmp_path)
    assert plain == f"cd {shlex.quote(str(tmp_path))} && pytest --doca-seed 5 tests/test_x.py::test_y"
    every = Knobs(seed=5, version="2.6", strict=False, shuffle=False, faults="rdma_read=0.05").replay(
        "tests/test_x.py::test_y", rootdir=tmp_path / "with space")
    words = shlex.split(every)
    assert words[:3] == ["cd", str(tmp_path / "with space"), "&&"]
    assert words[3] == "DOCA_PY_EMU_SHUFFLE=0" and words[4] == "pytest"
    for knob in ("--doca-seed", "--doca-version", "--doca-no-strict", "--doca-faults"):
        assert words.count(knob) + sum(w.startswith(knob + "=") for w in words) == 1, (knob, words)
    assert "2.6" in every and "rdma_read=0.05" in every and words[-1] == "tests/test_x.py::test_y"
