"""Conformance: doca_graph (``doca_graph.h``, the same in DOCA 2.6 and 3.x): nodes in dependency order, a
failed node failing the run through the error callback, reusable instances, the documented states and
limits."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e

from ..core.helpers import DPU_PCI, local_mmap
from ..native.fakelib.plugin import FakeLibs
from .backends import over_fakes

SIZE = 256


@dataclass
class Rig:
    dev: d.Dev
    pe: d.Pe
    inv: d.BufInventory
    mm: d.Mmap
    dma: d.Dma
    graph: d.Graph
    ends: list[tuple[str, d.GraphInstance, Any, Any]] = field(default_factory=list)
    task_cbs: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def drain(self, n: int) -> None:
        """Progress until *n* runs ended (bounded: a run that never ends fails the test)."""
        deadline = time.monotonic() + 10.0
        while len(self.ends) < n:
            if not self.pe.progress():
                assert time.monotonic() < deadline, f"{len(self.ends)} of {n} graph runs ended: {self.ends}"
                self.pe.wait(0.1)

    def region(self, k: int, fill: int | None = None) -> d.Buf:
        """The *k*-th SIZE-byte region of the map as a buffer (data = the region when *fill* is given)."""
        base = self.mm.get_memrange()[0] + k * SIZE
        if fill is None:
            return self.inv.buf_get_by_addr(self.mm, base, SIZE)
        self.mm.buffer[k * SIZE:(k + 1) * SIZE] = bytes([fill]) * SIZE
        return self.inv.buf_get_by_data(self.mm, base, SIZE)

    def bytes_of(self, k: int) -> bytes:
        return bytes(self.mm.buffer[k * SIZE:(k + 1) * SIZE])


@contextmanager
def rig(num_instances: int = 2, num_tasks: int = 8) -> Iterator[Rig]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(32) as inv, \
            local_mmap(dev, 32 * SIZE) as mm:
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        graph = d.Graph(pe, user_data="graph")
        r = Rig(dev, pe, inv, mm, dma, graph)
        dma.task_memcpy_set_conf(lambda t, u, c: r.task_cbs.append("ok"), lambda t, u, c: r.task_cbs.append("err"),
                                 num_tasks)
        dma.start()
        graph.set_conf(lambda i, u, g: r.ends.append(("ok", i, u, g)), lambda i, u, g: r.ends.append(("err", i, u, g)),
                       num_instances)
        yield r


def _misuse(backend: str, documented: type[Exception]) -> type[Exception]:
    """What a misuse strict mode catches raises: the emulator's strict finding, its BAD_STATE through libdoca,
    or DOCA's documented error (the fakes, or strict mode off)."""
    from doca_py.emulated import strict

    if not strict.STRICT or backend == "fakes":
        return documented
    return d.DocaUsageError if backend == "emulated" else e.DocaBadState


def test_nodes_run_in_dependency_order_and_tasks_keep_their_callbacks_quiet(backend: str) -> None:
    _nodes_run_in_dependency_order_and_tasks_keep_their_callbacks_quiet(backend)


def _nodes_run_in_dependency_order_and_tasks_keep_their_callbacks_quiet(backend: str) -> None:
    """A diamond: copy -> (check_a, check_b) -> last. Each user node sees what the nodes it depends on did;
    the DMA task's own callbacks never run; the completion callback gets both user data."""
    with rig() as r:
        seen: dict[str, bytes] = {}

        def check(name: str) -> Any:
            def cb(cookie: Any) -> None:
                seen[name] = r.bytes_of(cookie)
                r.log.append(name)
            return cb

        copy = r.graph.node_create_from_ctx(r.dma)
        a = r.graph.node_create_from_user(check("a"))
        b = r.graph.node_create_from_user(check("b"))
        last = r.graph.node_create_from_user(check("last"))
        for x, y in ((copy, a), (copy, b), (a, last), (b, last)):
            r.graph.add_dependency(x, y)
        r.graph.start()
        inst = r.graph.instance_create(user_data="inst")
        src, dst = r.region(0, fill=0x5A), r.region(1)
        inst.set_ctx_node_data(copy, r.dma.task_memcpy_alloc_init(src, dst))
        for node in (a, b, last):
            inst.set_user_node_data(node, 1)
        inst.submit()
        assert inst.inflight and r.log == []
        r.drain(1)
        assert r.ends == [("ok", inst, "inst", "graph")] and not inst.inflight
        assert sorted(r.log[:2]) == ["a", "b"] and r.log[2] == "last"
        assert seen == {"a": b"\x5a" * SIZE, "b": b"\x5a" * SIZE, "last": b"\x5a" * SIZE}
        assert r.task_cbs == []
        assert dst.get_data_len() == SIZE


def test_an_instance_is_reused_and_instances_run_side_by_side(backend: str) -> None:
    _an_instance_is_reused_and_instances_run_side_by_side(backend)


def _an_instance_is_reused_and_instances_run_side_by_side(backend: str) -> None:
    with rig(num_instances=3) as r:
        copy = r.graph.node_create_from_ctx(r.dma)
        user = r.graph.node_create_from_user(lambda k: r.log.append(r.bytes_of(k)[:1].hex()))
        r.graph.add_dependency(copy, user)
        r.graph.start()
        insts, dsts = [], []
        for i in range(3):
            inst = r.graph.instance_create(user_data=i)
            src, dst = r.region(2 * i, fill=0x10 + i), r.region(2 * i + 1)
            inst.set_ctx_node_data(copy, r.dma.task_memcpy_alloc_init(src, dst))
            inst.set_user_node_data(user, 2 * i + 1)
            insts.append(inst)
            dsts.append(dst)
        for inst in insts:
            inst.submit()
        r.drain(3)
        assert sorted(u for _, _, u, _ in r.ends) == [0, 1, 2] and sorted(r.log) == ["10", "11", "12"]
        # The same instance again, its task re-aimed at new bytes (the DOCA way: change the task, not the node).
        r.mm.buffer[0:SIZE] = b"\x77" * SIZE
        dsts[0].reset_data_len()
        insts[0].submit()
        r.drain(4)
        assert r.ends[3][:3] == ("ok", insts[0], 0) and r.log[-1] == "77"


def test_a_failed_user_node_fails_the_run_through_the_error_callback(backend: str) -> None:
    _a_failed_user_node_fails_the_run_through_the_error_callback(backend)


def _a_failed_user_node_fails_the_run_through_the_error_callback(backend: str) -> None:
    """The failing node's dependents never start; the instance is reusable after its error callback."""
    with rig() as r:
        fail = [True]

        def gate(_: Any) -> None:
            r.log.append("gate")
            if fail[0]:
                raise e.DocaBadState("the data did not match")

        copy = r.graph.node_create_from_ctx(r.dma)
        g = r.graph.node_create_from_user(gate)
        after = r.graph.node_create_from_user(lambda _: r.log.append("after"))
        r.graph.add_dependency(copy, g)
        r.graph.add_dependency(g, after)
        r.graph.start()
        inst = r.graph.instance_create(user_data="inst")
        dst = r.region(1)
        inst.set_ctx_node_data(copy, r.dma.task_memcpy_alloc_init(r.region(0, fill=1), dst))
        inst.submit()
        r.drain(1)
        assert [x[0] for x in r.ends] == ["err"] and r.ends[0][1:] == (inst, "inst", "graph")
        assert r.log == ["gate"] and not inst.inflight
        fail[0] = False
        dst.reset_data_len()
        inst.submit()
        r.drain(2)
        assert r.ends[1][0] == "ok" and r.log == ["gate", "gate", "after"]


def test_a_failed_ctx_node_fails_the_run(backend: str) -> None:
    _a_failed_ctx_node_fails_the_run(backend)


def _a_failed_ctx_node_fails_the_run(backend: str) -> None:
    """A DMA task that fails (destination too small) fails the run; its dependents never start and its own
    error callback does not run."""
    with rig() as r:
        copy = r.graph.node_create_from_ctx(r.dma)
        after = r.graph.node_create_from_user(lambda _: r.log.append("after"))
        r.graph.add_dependency(copy, after)
        r.graph.start()
        inst = r.graph.instance_create()
        small = r.inv.buf_get_by_addr(r.mm, r.mm.get_memrange()[0] + SIZE, 10)
        inst.set_ctx_node_data(copy, r.dma.task_memcpy_alloc_init(r.region(0, fill=3), small))
        inst.submit()
        r.drain(1)
        assert r.ends[0][0] == "err" and r.ends[0][2] is None and r.log == [] and r.task_cbs == []


def test_a_user_node_raising_a_python_error_fails_the_run_and_leaves_progress(backend: str) -> None:
    _a_user_node_raising_a_python_error_fails_the_run_and_leaves_progress(backend)


def _a_user_node_raising_a_python_error_fails_the_run_and_leaves_progress(backend: str) -> None:
    """A bug in a user node (not a DocaError) fails its run (UNEXPECTED, the error callback) and the exception
    leaves Pe.progress(), as any callback's does; the Pe and the instance work on."""
    with rig() as r:
        boom = [True]

        def user(_: Any) -> None:
            if boom[0]:
                raise ZeroDivisionError("a bug in the user node")
            r.log.append("ran")

        copy = r.graph.node_create_from_ctx(r.dma)
        node = r.graph.node_create_from_user(user)
        r.graph.add_dependency(copy, node)
        r.graph.start()
        inst = r.graph.instance_create()
        dst = r.region(1)
        inst.set_ctx_node_data(copy, r.dma.task_memcpy_alloc_init(r.region(0, fill=2), dst))
        inst.submit()
        deadline = time.monotonic() + 10.0
        with pytest.raises(ZeroDivisionError, match="a bug in the user node"):
            while time.monotonic() < deadline:
                r.pe.progress()
        r.drain(1)
        assert [x[0] for x in r.ends] == ["err"] and r.log == []
        boom[0] = False
        dst.reset_data_len()
        inst.submit()
        r.drain(2)
        assert r.ends[1][0] == "ok" and r.log == ["ran"]


def test_building_rules_and_limits(backend: str) -> None:
    _building_rules_and_limits(backend)


def _building_rules_and_limits(backend: str) -> None:
    with rig(num_instances=1) as r:
        g = r.graph
        with pytest.raises(e.DocaBadState):
            g.instance_create()  # not started
        u1 = g.node_create_from_user(lambda _: None)
        with pytest.raises(e.DocaBadState):
            g.start()  # no ctx node
        u2 = g.node_create_from_user(lambda _: None)
        g.add_dependency(u1, u2)
        with pytest.raises(e.DocaNotPermitted):
            g.add_dependency(u2, u1)  # a circle
        with pytest.raises(e.DocaNotPermitted):
            g.add_dependency(u1, u1)
        copy = g.node_create_from_ctx(r.dma)
        g.add_dependency(u2, copy)
        g.start()
        g.start()  # already started: success, as documented
        with pytest.raises(_misuse(backend, e.DocaBadState)):
            g.node_create_from_user(lambda _: None)  # a graph changed after start
        with pytest.raises(_misuse(backend, e.DocaBadState)):
            g.add_dependency(u1, copy)
        inst = g.instance_create()
        with pytest.raises(e.DocaNoMemory):
            g.instance_create()  # num_instances is 1
        with pytest.raises(e.DocaInUse):
            g.stop()  # an instance is not destroyed
        with pytest.raises(e.DocaInvalidValue):
            inst.submit()  # the ctx node has no task
        inst.close()
        g.stop()
        g.node_create_from_user(lambda _: None)  # stopped: building again
        g.start()
        assert g.instance_create() is not None


def test_node_data_rules_and_a_submit_in_flight(backend: str) -> None:
    _node_data_rules_and_a_submit_in_flight(backend)


def _node_data_rules_and_a_submit_in_flight(backend: str) -> None:
    with rig() as r, d.Dma(r.dev) as other:
        r.pe.connect_ctx(other)
        other.task_memcpy_set_conf(lambda t, u, c: None, lambda t, u, c: None, 2)
        other.start()
        g = r.graph
        copy = g.node_create_from_ctx(r.dma)
        user = g.node_create_from_user(lambda _: None)
        g.add_dependency(copy, user)
        g.start()
        inst = g.instance_create()
        src, dst = r.region(0, fill=9), r.region(1)
        with pytest.raises(e.DocaNotPermitted):
            inst.set_ctx_node_data(copy, other.task_memcpy_alloc_init(src, dst))  # a task of another ctx
        with pytest.raises(e.DocaNotPermitted):
            inst.set_user_node_data(copy, 1)  # not a user node
        inst.set_ctx_node_data(copy, r.dma.task_memcpy_alloc_init(src, dst))
        inst.submit()
        with pytest.raises(_misuse(backend, e.DocaInUse)):
            inst.submit()  # submitted twice in flight
        with pytest.raises(e.DocaBadState):
            inst.set_user_node_data(user, 2)  # node data of a submitted instance
        with pytest.raises(e.DocaInUse):
            inst.set_user_data("x")
        r.drain(1)
        assert r.ends[0][0] == "ok"
        other.stop()


def test_a_sub_graph_node_runs_an_instance_of_another_graph(backend: str) -> None:
    _a_sub_graph_node_runs_an_instance_of_another_graph(backend)


def _a_sub_graph_node_runs_an_instance_of_another_graph(backend: str) -> None:
    with rig() as r:
        sub = d.Graph(r.pe)
        sub.set_conf(lambda i, u, g: r.log.append("sub callback"), lambda i, u, g: r.log.append("sub error"), 1)
        s_copy = sub.node_create_from_ctx(r.dma)
        s_user = sub.node_create_from_user(lambda k: r.log.append("sub " + r.bytes_of(k)[:1].hex()))
        sub.add_dependency(s_copy, s_user)
        sub.start()
        node = r.graph.node_create_from_graph(sub)
        then = r.graph.node_create_from_user(lambda _: r.log.append("then"))
        r.graph.add_dependency(node, then)
        r.graph.node_create_from_ctx(r.dma)
        r.graph.start()
        sub_inst = sub.instance_create()
        sub_inst.set_ctx_node_data(s_copy, r.dma.task_memcpy_alloc_init(r.region(0, fill=0x42), r.region(1)))
        sub_inst.set_user_node_data(s_user, 1)
        inst = r.graph.instance_create()
        inst.set_sub_graph_node_data(node, sub_inst)
        inst.set_ctx_node_data(r.graph.nodes[-1], r.dma.task_memcpy_alloc_init(r.region(2, fill=1), r.region(3)))
        inst.submit()
        r.drain(1)
        assert r.ends[0][0] == "ok" and r.log == ["sub 42", "then"]


SCENARIOS = {name[5:]: fn for name, fn in list(globals().items()) if name.startswith("test_")
             and callable(globals().get("_" + name[5:]))}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_over_the_fakes(scenario: str, fakelibs: FakeLibs, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same scenarios on the native backend over the C fakes (tests/native/fakelib/graph.c): the native
    layer against an independent doca_graph."""
    if d.impl == "native" or FakeLibs.compiler() is None:
        pytest.skip("the native backend over the fakes (no real DOCA, a C compiler)")
    with over_fakes(fakelibs, monkeypatch):
        globals()["_" + scenario]("fakes")
