"""Conformance: doca_sync_event (DOCA 3.0 doca_sync_event.h): stand-alone use, exports, the ctx and tasks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e

from ..core.helpers import DPU_PCI

U64 = (1 << 64) - 1


@pytest.fixture
def dev(backend: str) -> Iterator[d.Dev]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        yield dev


def _eq_waits(backend: str) -> bool:
    """Whether the eq/neq waits exist: DOCA 2.6 waits only for greater-than (the emulator's 2.6 mode too, and
    libdoca built for 2.6); a native library says by exporting them."""
    if backend == "emulated":
        from doca_py.emulated import version

        return version.VERSION >= (3, 0)
    from doca_py.native import capi

    return capi.load_common().has("doca_sync_event_wait_eq")


def _needs_eq_waits(backend: str) -> None:
    if not _eq_waits(backend):
        pytest.skip("DOCA 2.6 has no eq/neq waits (DOCA_PY_EMU_VERSION=2.6)")


def _event(dev: d.Dev, *, remote_pci: bool = True, remote_net: bool = False, start: bool = True) -> d.SyncEvent:
    se = d.SyncEvent()
    se.add_publisher_location_cpu(dev)
    se.add_subscriber_location_cpu(dev)
    if remote_pci:
        se.add_subscriber_location_remote_pci()
    if remote_net:
        se.add_publisher_location_remote_net()
    if start:
        se.start()
    return se


def test_update_get_and_atomic_add(dev: d.Dev) -> None:
    with _event(dev) as se:
        assert se.get() == 0
        se.update_set(41)
        assert se.update_add(1) == 41 and se.get() == 42
        se.update_set(U64)
        assert se.update_add(2) == U64 and se.get() == 1  # 64-bit wrap-around
        for bad in (-1, 1 << 64):
            with pytest.raises(e.DocaInvalidValue):
                se.update_set(bad)


def test_configuration_only_before_start_and_operations_only_after(dev: d.Dev) -> None:
    se = _event(dev, start=False)
    with pytest.raises(e.DocaBadState):
        se.get()  # not started
    with pytest.raises(e.DocaBadState):
        se.export_to_remote_pci(dev)
    with pytest.raises(e.DocaBadState):
        se.stop()
    se.start()
    with pytest.raises(e.DocaBadState):
        se.start()
    with pytest.raises(e.DocaBadState):
        se.add_publisher_location_remote_pci()
    with pytest.raises(e.DocaNotPermitted):
        se.as_ctx()  # started stand-alone: it cannot become a ctx
    se.stop()
    with pytest.raises(e.DocaBadState):
        se.update_set(1)
    se.close()


def test_synchronous_waits_see_another_thread_publish(dev: d.Dev, backend: str) -> None:
    _needs_eq_waits(backend)
    with _event(dev) as se:
        se.update_set(7)
        se.wait_gt(6)
        se.wait_eq(7)
        se.wait_neq(8)
        se.wait_eq_yield(7, mask=0xFF)
        se.update_set((1 << 40) | 5)
        se.wait_eq(5, mask=0xFFFF)  # the mask hides the high bits
        publisher = threading.Thread(target=se.update_set, args=(100,))
        publisher.start()
        se.wait_eq(100)
        publisher.join()
        adder = threading.Thread(target=lambda: [se.update_add(1) for _ in range(50)])
        adder.start()
        se.wait_gt_yield(149)
        adder.join()
        assert se.get() == 150


def test_remote_pci_export_shares_the_value_and_stop_revokes_it(dev: d.Dev) -> None:
    se = _event(dev)
    blob = se.export_to_remote_pci(dev)
    assert blob == se.export_to_remote_pci(dev)  # one export per device
    peer = d.SyncEvent.create_from_export(dev, blob)
    with pytest.raises(e.DocaNotPermitted):
        peer.add_publisher_location_remote_pci()  # an imported event cannot be configured
    peer.start()
    se.update_set(3)
    assert peer.get() == 3
    assert peer.update_add(4) == 3 and se.get() == 7
    peer.update_set(9)
    se.wait_gt(8)  # 9 (wait_gt: DOCA 2.6 too)
    with pytest.raises(e.DocaNotPermitted):
        peer.export_to_remote_pci(dev)
    se.stop()  # revokes the export
    with pytest.raises(e.DocaNotPermitted):
        peer.get()
    with pytest.raises(e.DocaNotPermitted):
        d.SyncEvent.create_from_export(dev, blob)
    peer.close()
    se.close()


def test_a_wait_on_an_import_ends_when_the_exporter_revokes(dev: d.Dev) -> None:
    se = _event(dev)
    peer = d.SyncEvent.create_from_export(dev, se.export_to_remote_pci(dev))
    peer.start()
    revoker = threading.Thread(target=se.stop)
    revoker.start()
    with pytest.raises(e.DocaNotPermitted):
        peer.wait_gt(0)  # never set: the wait ends with the revocation, not never
    revoker.join()
    peer.close()
    se.close()


def test_destroy_revokes_the_export(dev: d.Dev) -> None:
    se = _event(dev)
    blob = se.export_to_remote_pci(dev)
    peer = d.SyncEvent.create_from_export(dev, blob)
    peer.start()
    se.close()
    with pytest.raises(e.DocaNotPermitted):
        peer.update_set(1)
    peer.close()


def test_exports_need_their_locations(dev: d.Dev) -> None:
    with _event(dev, remote_pci=False) as se:
        with pytest.raises(e.DocaNotPermitted):
            se.export_to_remote_pci(dev)
        with pytest.raises(e.DocaNotPermitted):
            se.export_to_remote_net()
    with _event(dev, remote_pci=False, remote_net=True) as se:
        blob = se.export_to_remote_net()
        with d.SyncEventRemoteNet.create_from_export(dev, blob) as rn:
            assert not rn.closed


@pytest.mark.parametrize("damage", ["truncate", "flip", "magic", "empty", "extend"])
def test_malformed_blobs_are_invalid_value(dev: d.Dev, damage: str) -> None:
    with _event(dev, remote_net=True) as se:
        for blob, imp in ((se.export_to_remote_pci(dev), d.SyncEvent.create_from_export),
                          (se.export_to_remote_net(), d.SyncEventRemoteNet.create_from_export)):
            bad = {"truncate": blob[:-3], "flip": blob[:-9] + bytes([blob[-9] ^ 0x40]) + blob[-8:],
                   "magic": b"X" + blob[1:], "empty": b"", "extend": blob + b"\0"}[damage]
            with pytest.raises(e.DocaInvalidValue):
                imp(dev, bad)  # type: ignore[operator]


def test_a_blob_is_imported_only_as_its_kind(dev: d.Dev) -> None:
    with _event(dev, remote_net=True) as se:
        with pytest.raises(e.DocaInvalidValue):
            d.SyncEvent.create_from_export(dev, se.export_to_remote_net())
        with pytest.raises(e.DocaInvalidValue):
            d.SyncEventRemoteNet.create_from_export(dev, se.export_to_remote_pci(dev))
        with pytest.raises(e.DocaTypeError, match="blob must be bytes"):
            d.SyncEvent.create_from_export(dev, "not bytes")  # type: ignore[arg-type]


def test_use_after_close_is_refused(dev: d.Dev) -> None:
    se = _event(dev)
    ctxless = se
    se.close()
    for call in (ctxless.get, lambda: ctxless.update_set(1), lambda: ctxless.update_add(1), ctxless.start,
                 ctxless.stop, lambda: ctxless.wait_eq(0), ctxless.as_ctx, ctxless.export_to_remote_net,
                 lambda: ctxless.export_to_remote_pci(dev), ctxless.add_publisher_location_remote_pci):
        with pytest.raises(d.DocaUsageError):
            call()
    se.close()  # idempotent


def test_capabilities(dev: d.Dev, backend: str) -> None:
    info = dev.as_devinfo()
    assert d.SyncEvent.cap_is_export_to_remote_net_supported(info)
    assert d.SyncEvent.cap_remote_net_is_create_from_export_supported(info)
    for task in ("get", "notify_set", "notify_add"):
        assert d.SyncEvent.cap_task_is_supported(task, info)
    for task in ("wait_eq", "wait_neq"):
        if _eq_waits(backend):
            assert d.SyncEvent.cap_task_is_supported(task, info)
        else:  # DOCA 2.6 has no such capability query
            with pytest.raises(e.DocaNotSupported):
                d.SyncEvent.cap_task_is_supported(task, info)
    # 3.x: 2.6's wait_gt is gone, and its capability query with it
    if _eq_waits(backend):
        with pytest.raises(e.DocaNotSupported):
            d.SyncEvent.cap_task_is_supported("wait_gt", info)
    else:
        assert d.SyncEvent.cap_task_is_supported("wait_gt", info)
    with pytest.raises(e.DocaInvalidValue):
        d.SyncEvent.cap_task_is_supported("wait_lt", info)


# -- the ctx and its tasks ------------------------------------------------------------------------------


class _Ctx:
    """A sync event as a ctx on a Pe, with every task type configured; completions recorded."""

    def __init__(self, dev: d.Dev, eq_waits: bool = True) -> None:
        self.pe = d.Pe()
        self.se = _event(dev, start=False)
        self.ctx = self.se.as_ctx()
        self.pe.connect_ctx(self.ctx)
        self.done: list[tuple[str, Any, d.ErrorCode]] = []

        def record(kind: str, ok: bool) -> Any:
            return lambda t, u, c: self.done.append((kind if ok else "error", u, t.get_status()))

        for kind in ("get", "notify_set", "notify_add", "wait_eq", "wait_neq")[:None if eq_waits else 3]:
            getattr(self.ctx, f"task_{kind}_set_conf")(record(kind, True), record(kind, False), 4)
        self.ctx.start()

    def run(self, n: int) -> None:
        """Progress until *n* completions are recorded."""
        while len(self.done) < n:
            self.pe.progress()

    def close(self) -> None:
        self.se.close()
        self.pe.close()


def test_tasks_get_set_add(dev: d.Dev, backend: str) -> None:
    c = _Ctx(dev, _eq_waits(backend))
    s = c.ctx.task_notify_set_alloc_init(10, user_data="set")
    assert s.get_set_val() == 10
    s.submit()
    c.run(1)
    a = c.ctx.task_notify_add_alloc_init(5, user_data="add")
    assert a.get_inc_val() == 5
    a.submit()
    c.run(2)
    g = c.ctx.task_get_alloc_init(user_data="get")
    g.submit()
    c.run(3)
    assert [x[:2] for x in c.done] == [("notify_set", "set"), ("notify_add", "add"), ("get", "get")]
    assert a.get_fetched_val() == 10 and g.get_ret_val() == 15 and c.se.get() == 15
    s.set_set_val(1)
    s.submit()
    c.run(4)
    assert c.se.get() == 1
    for t in (s, a, g):
        t.free()
    c.close()


def test_wait_tasks_stay_in_flight_until_the_value_matches(dev: d.Dev, backend: str) -> None:
    _needs_eq_waits(backend)
    c = _Ctx(dev)
    eq = c.ctx.task_wait_eq_alloc_init(3, mask=0xFF, user_data="eq")
    assert (eq.get_wait_val(), eq.get_mask()) == (3, 0xFF)
    neq = c.ctx.task_wait_neq_alloc_init(0, user_data="neq")
    eq.submit()
    for _ in range(3):
        c.pe.progress()
    assert c.done == [] and c.ctx.get_num_inflight_tasks() == 1
    add = c.ctx.task_notify_add_alloc_init(0x103)  # 0x103 & 0xFF == 3
    add.submit()
    c.run(2)
    assert {x[0] for x in c.done} == {"notify_add", "wait_eq"}
    neq.submit()  # the value is not 0 any more: completes at once
    c.run(3)
    assert c.done[-1][:2] == ("wait_neq", "neq")
    for t in (eq, neq, add):
        t.free()
    c.close()


def test_stop_flushes_a_waiting_task(dev: d.Dev, backend: str) -> None:
    _needs_eq_waits(backend)
    c = _Ctx(dev)
    w = c.ctx.task_wait_eq_alloc_init(99)
    w.submit()
    c.pe.progress()
    assert c.ctx.stop() is d.CtxState.STOPPING
    c.run(1)
    assert c.done[0][0] == "error" and c.done[0][2] is d.ErrorCode.IO_FAILED
    w.free()
    c.pe.progress()  # DOCA: STOPPING -> IDLE on a later progress once every task is freed
    c.pe.progress()
    assert c.ctx.get_state() is d.CtxState.IDLE
    c.close()


def test_a_ctx_event_cannot_start_stand_alone_and_tasks_need_it_running(dev: d.Dev) -> None:
    with d.Pe() as pe:
        se = _event(dev, start=False)
        ctx = se.as_ctx()
        assert se.as_ctx() is ctx
        with pytest.raises(e.DocaNotPermitted):
            se.start()
        pe.connect_ctx(ctx)
        ctx.task_get_set_conf(lambda *a: None, lambda *a: None, 1)
        with pytest.raises(e.DocaBadState):
            se.get()  # the ctx is idle
        ctx.start()
        with pytest.raises(e.DocaNotPermitted):
            ctx.task_notify_set_set_conf(lambda *a: None, lambda *a: None, 1)  # only while idle
        se.update_set(4)  # the synchronous operations work on a running ctx's event
        assert se.get() == 4
        t = ctx.task_get_alloc_init()
        with pytest.raises(e.DocaNoMemory):
            ctx.task_get_alloc_init()  # a pool of 1
        t.free()
        ctx.stop()
        se.close()


@pytest.mark.parametrize("field", ["fd", "slot", "offset", "key"])
def test_an_import_checks_every_field_of_the_blob(dev: d.Dev, field: str, backend: str) -> None:
    """A same-process import (remote PCI and remote net) refuses a blob whose any field differs from the
    one the exporter issued (NOT_PERMITTED at creation, not at the first access)."""
    if backend != "emulated" and not getattr(backend, "over_libdoca", False):  # libdoca's blobs are the emulator's
        pytest.skip("forges an emulated export blob (a real DOCA's blobs are its own)")
    import dataclasses

    from doca_py.emulated import export as ex
    from doca_py.emulated import sync_event as emu

    with _event(dev, remote_net=True) as net, _event(dev) as pci:
        for kind, blob, create in (
                (emu.BlobKind.PCI, pci.export_to_remote_pci(dev), d.SyncEvent.create_from_export),
                (emu.BlobKind.NET, net.export_to_remote_net(), d.SyncEventRemoteNet.create_from_export)):
            inner = emu.decode_blob(blob, kind)
            value = bytes(16) if field == "key" else getattr(inner, field) + 1
            forged = emu.encode_blob(kind, ex.encode(dataclasses.replace(inner, **{field: value})))
            with pytest.raises(e.DocaNotPermitted):
                create(dev, forged)
            create(dev, blob).close()  # the genuine blob still imports


def test_a_3_x_runtime_refuses_the_2_6_wait_gt_tasks(backend: str, dev: d.Dev) -> None:
    """DOCA 3.0 replaced the wait_gt task with wait_eq/wait_neq: on a 3.x runtime configuring it raises
    DocaNotSupported naming the function and the versions that have it, and so does its capability query."""
    _needs_eq_waits(backend)  # a 3.x runtime (the fakes are 3.0)
    with _event(dev, start=False) as se:
        ctx = se.as_ctx()
        with pytest.raises(e.DocaNotSupported, match=r"doca_sync_event_task_wait_gt_set_conf .*up to DOCA 2\.6"):
            ctx.task_wait_gt_set_conf(lambda *a: None, lambda *a: None, 1)
        with pytest.raises(e.DocaNotSupported, match="doca_sync_event_cap_task_wait_gt_is_supported"):
            d.SyncEvent.cap_task_is_supported("wait_gt", dev.as_devinfo())
