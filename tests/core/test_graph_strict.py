"""The emulated backend's strict mode on doca_graph: a graph changed after start and an instance submitted
while in flight are findings naming the rule; without strict mode they are DOCA's BAD_STATE and IN_USE.
The rules themselves are tested on every backend in ``tests/conformance/test_graph.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e

from .helpers import local_mmap, rig

pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="a rule of the emulated backend's strict mode")


@pytest.fixture
def knobs() -> Iterator[Any]:
    """The emulator's strict module, restored from the environment afterwards."""
    from doca_py.emulated import strict

    yield strict
    strict.configure()


@pytest.mark.parametrize("on", [True, False])
def test_a_graph_changed_after_start(on: bool, knobs: Any) -> None:
    knobs.configure(strict=on)
    with rig() as r:
        g = d.Graph(r.pe)
        g.set_conf(lambda *a: None, lambda *a: None, 1)
        copy = g.node_create_from_ctx(r.dma)
        g.start()
        changes = [lambda: g.node_create_from_user(lambda _: None), lambda: g.add_dependency(copy, copy),
                   lambda: g.set_conf(lambda *a: None, lambda *a: None, 2), lambda: g.set_user_data("x")]
        for change in changes:
            if on:
                with pytest.raises(d.DocaUsageError, match=r"strict mode: .* on a started graph") as info:
                    change()
                assert "doca_graph_" in getattr(info.value, "doca_rule")
            else:
                with pytest.raises(e.DocaBadState, match="the graph is started"):
                    change()
        assert len(g.nodes) == 1  # nothing was added
        g.close()


@pytest.mark.parametrize("on", [True, False])
def test_an_instance_submitted_twice_in_flight(on: bool, knobs: Any) -> None:
    knobs.configure(strict=on)
    with rig() as r:
        ends: list[str] = []
        g = d.Graph(r.pe)
        g.set_conf(lambda *a: ends.append("ok"), lambda *a: ends.append("err"), 1)
        user = g.node_create_from_user(lambda _: None)
        g.add_dependency(user, g.node_create_from_ctx(r.dma))
        g.start()
        inst = g.instance_create()
        with local_mmap(r.dev, 1 << 12) as m:
            base = m.get_memrange()[0]
            m.buffer[:64] = b"z" * 64
            src, dst = r.inv.buf_get_by_data(m, base, 64), r.inv.buf_get_by_addr(m, base + 1024, 64)
            inst.set_ctx_node_data(g.nodes[1], r.dma.task_memcpy_alloc_init(src, dst))
            inst.submit()
            with pytest.raises(d.DocaUsageError if on else e.DocaInUse,
                               match="submitted while in flight" if on else "already submitted"):
                inst.submit()
            while not ends:
                r.pe.progress()
            assert ends == ["ok"]  # the refused submit left the run alone
            g.close()
            for b in (src, dst):
                b.dec_refcount()
