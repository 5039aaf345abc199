"""``doca_pair`` sides on the native path (``--doca-impl native``, issue 33 §3): the native backend over
libdoca served by the emulator in each side's process, under the same knobs and trace as an emulated side."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from doca_py.testing import DocaPair, Knobs, PairError

from . import sides

pytestmark = pytest.mark.multiprocess

ROOT = Path(__file__).resolve().parents[2]
@pytest.fixture(autouse=True)
def _libdoca(doca_knobs: Knobs) -> None:
    """A C compiler builds libdoca (cached); without one and without a real DOCA the native path cannot run."""
    from doca_py.testing.native import NativeUnavailable, resolve

    try:
        resolve(doca_knobs.version or "3.2")
    except NativeUnavailable as exc:
        pytest.skip(str(exc))


def test_native_sides_run_the_native_backend_over_libdoca_under_the_tests_knobs(doca_knobs: Knobs) -> None:
    knobs = doca_knobs.replace(faults="dma_memcpy=0.25")
    pair = DocaPair(knobs, impl="native")
    (host_got, host), (dpu_got, dpu) = pair.run(sides.host_ping, sides.dpu_pong)
    assert host_got == ("pong", host["pci"]) and dpu_got == ("ping", host)
    assert dpu["rep"] == host["pci"] != dpu["pci"]  # the emulated BlueField, through DOCA's C API
    for side in (host, dpu):
        assert side["impl"] == "native" and side["version"] == "3.2.0000"
        assert side["seed"] == (knobs.seed, knobs.seed, str(knobs.seed))
        assert side["strict"] is knobs.strict and side["shuffle"] is knobs.shuffle
        assert set(side["faults"]) == {"dma_memcpy"}
    assert "native sides: libdoca over the emulator, DOCA 3.2 (" in pair._native_text()


def test_a_seed_replays_on_the_native_path_as_on_the_emulated_one(doca_knobs: Knobs) -> None:
    runs = {(impl, seed, n): DocaPair(doca_knobs.replace(seed=seed), impl=impl).run(sides.dma_order, sides.dma_order)
            for impl, seed, n in (("native", 11, 0), ("native", 11, 1), ("emulated", 11, 0), ("native", 12, 0))}
    native = runs[("native", 11, 0)]
    assert sorted(native[0]) == list(range(sides.N_TASKS)) and native[0] != list(range(sides.N_TASKS))
    assert runs[("native", 11, 1)] == native  # the same shuffled order, run after run
    assert runs[("emulated", 11, 0)] == native  # and the emulated path's: the same emulator decides
    assert runs[("native", 12, 0)] != native


def test_injected_faults_reach_native_sides(doca_knobs: Knobs) -> None:
    host, dpu = DocaPair(doca_knobs.replace(faults="dma_memcpy=1"), impl="native").run(sides.dma_order,
                                                                                       sides.dma_order)
    for order in (host, dpu):  # every copy failed (IO_FAILED, then the stopping ctx flushes the rest)
        assert sorted(order) == sorted(-1 - i for i in range(sides.N_TASKS))


@pytest.mark.parametrize("how, first", [("strict", "host side: strict mode: <doca_buf "),
                                        ("callback", "host side: ValueError raised by a callback inside progress()")])
def test_strict_mode_and_callback_exceptions_on_native_sides(doca_knobs: Knobs, how: str, first: str) -> None:
    pair = DocaPair(doca_knobs.replace(strict=True), impl="native")
    with pytest.raises(PairError) as info:
        pair.run(sides.host_fails_then_waits, sides.dpu_raises_when_told, args=how)
    assert str(info.value).startswith(first), str(info.value)
    host = info.value.reports[0]
    if how == "strict":  # the emulator behind libdoca found it: the finding is the side's
        assert any("dec_refcount to 0" in f for f in host.findings), host.findings
    else:
        assert "in on_copied" in host.raised_in_callbacks[0]
    assert "native sides: libdoca over the emulator" in str(info.value).splitlines()[2]


@pytest.mark.doca_versions("2.6", "3.2")
def test_native_sides_present_the_tests_doca_version(doca_pair: DocaPair, doca_version: str) -> None:
    doca_pair.impl = "native"
    (_, host), (_, dpu) = doca_pair.run(sides.host_ping, sides.dpu_pong)
    assert host["version"] == dpu["version"] == f"{doca_version}.0000"  # libdoca built for that version
    assert host["impl"] == dpu["impl"] == "native"


def test_a_pair_with_a_side_on_each_path(doca_knobs: Knobs) -> None:
    pair = DocaPair(doca_knobs)
    pair.side_impl["dpu"] = "native"
    (_, host), (_, dpu) = pair.run(sides.host_ping, sides.dpu_pong)
    assert (host["impl"], dpu["impl"]) == ("emulated", "native")
    host_order, dpu_order = pair.run(sides.dma_order, sides.dma_order)
    assert sorted(host_order) == sorted(dpu_order) == list(range(sides.N_TASKS))
    kit = [e for e in pair.timeline if e["name"].startswith("doca_pair run")]
    assert kit[-1]["args"]["impl"] == {"host": "emulated", "dpu": "native"}


def test_the_trace_of_a_native_side_holds_its_task_events(doca_knobs: Knobs) -> None:
    from doca_py.testing import assert_valid_trace

    pair = DocaPair(doca_knobs, impl="native")
    pair.run(sides.dma_order, sides.returns_early)
    assert_valid_trace({"traceEvents": pair.trace_events()})
    host = pair.reports[0]
    submits = [e for e in host.trace if e.get("cat") == "submit"]
    assert len(submits) == sides.N_TASKS and all(e["name"] == "submit EmuDmaTaskMemcpy" for e in submits)


# -- comch and RDMA between the sides ------------------------------------------------------------------------
sys.path.insert(0, str(ROOT / "docs" / "testing"))  # the testing guide's application (comch and DMA)
sys.path.insert(0, str(ROOT / "examples"))  # rdma_rounds: an RDMA application built to replay
import rdma_rounds  # noqa: E402
import test_offload_app as offload  # noqa: E402


def test_the_guides_comch_and_dma_application_on_native_sides(doca_knobs: Knobs) -> None:
    import zlib

    data = bytes(range(256)) * 64
    crc, copied = DocaPair(doca_knobs, impl="native").run(offload.host, offload.dpu, timeout=60, args=data)
    assert copied == data and crc == zlib.crc32(data)


def test_a_seed_replays_an_rdma_run_under_faults_on_native_sides(doca_knobs: Knobs) -> None:
    knobs = doca_knobs.replace(seed=1090, faults="rdma_read=0.05,rdma_send=0.05,rdma_receive=0.05", shuffle=True)
    outcomes: list[Any] = []
    for impl in ("native", "native", "emulated"):
        host, dpu = DocaPair(knobs, impl=impl).run(rdma_rounds.host, rdma_rounds.dpu, timeout=120, args=40)
        outcomes.append((rdma_rounds.first_failure(host, dpu), sorted(host["faults"]), sorted(dpu["faults"])))
    assert outcomes[0] == outcomes[1] == outcomes[2], outcomes
    assert outcomes[0][0] is not None  # the seed's fault stopped the run, on both paths
