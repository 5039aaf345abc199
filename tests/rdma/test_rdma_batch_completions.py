"""Completions delivered a batch at a time (issue 34): a callback that raises leaves the rest of its batch to the
next ``progress()``, in order, on every same-host transport; none is lost."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d

from .helpers import connect_pair, make_side, rig, wait_for


@pytest.fixture(params=["streams", "rings"])
def sides(backend: str, request: pytest.FixtureRequest) -> Iterator[tuple[d.Pe, d.BufInventory, Any, Any]]:
    from doca_py.emulated import rdma as emu

    with rig(64) as (dev, pe, inv):
        try:
            emu.configure(shm=request.param == "rings")
            a = make_side(dev, pe)
            a.rdma.task_send_set_conf(_on_sent, a.err, 16)  # idle: re-configured with the raising callback
            b = make_side(dev, pe)
            connect_pair(pe, a, b)
        finally:
            emu.configure(shm=False)
        yield pe, inv, a, b
        a.rdma.close()
        b.rdma.close()
        inv.close()
        a.mm.close()
        b.mm.close()


def _on_sent(t: Any, ud: tuple[list[int], int], cud: Any) -> None:
    got, i = ud
    got.append(i)
    if i == 0:
        raise RuntimeError("the application's send callback failed")


def test_a_raising_send_callback_leaves_the_rest_of_its_batch_to_the_next_progress(
        sides: tuple[d.Pe, d.BufInventory, Any, Any]) -> None:
    pe, inv, a, b = sides
    n = 8
    got: list[int] = []
    receives = [b.rdma.task_receive_allocate_init(inv.buf_get_by_addr(b.mm, b.base + i * 64, 64)) for i in range(n)]
    for r in receives:
        r.submit()
    src = inv.buf_get_by_data(a.mm, a.base, 16)
    sends = [a.rdma.task_send_allocate_init(a.conn, src, user_data=(got, i)) for i in range(n)]
    for s in sends:
        s.submitter()()
    with pytest.raises(RuntimeError, match="send callback failed"):
        wait_for(pe, lambda: bool(got), "the first send completion")
    wait_for(pe, lambda: len(got) == n, "every send completion")
    assert got == list(range(n))  # none lost, in submission order
    assert a.rdma.get_num_inflight_tasks() == 0
    wait_for(pe, lambda: len(b.done) == n, "the receives")
    for t in sends + receives:
        t.free()
    src.dec_refcount()
