"""The emulator's DOCA 2.6 mode refuses the sync-event functions DOCA 2.6 does not have (its header waits
only for greater-than), as the native backend does on a 2.6 runtime; what 2.6 has under another name
(the ``_dpu`` locations and export, 3.0's ``remote_pci``) works."""

from __future__ import annotations

import pytest

import doca_py as d
from doca_py.errors import DocaNotSupported

from .helpers import DPU_PCI

pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="the emulator's version modes")


@pytest.fixture
def v26(monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated import version

    monkeypatch.setattr(version, "VERSION", (2, 6))


def _ignore(*_: object) -> None:
    pass


def test_2_6_mode_refuses_eq_and_neq_waits(v26: None) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.SyncEvent() as se:
        se.add_publisher_location_cpu(dev)
        se.add_subscriber_location_cpu(dev)
        se.add_subscriber_location_remote_pci()  # doca_sync_event_add_subscriber_location_dpu in 2.6
        se.start()
        se.update_set(5)
        se.wait_gt(4)
        se.wait_gt_yield(4)
        for wait in (se.wait_eq, se.wait_eq_yield, se.wait_neq, se.wait_neq_yield):
            with pytest.raises(DocaNotSupported, match="from DOCA 3.0"):
                wait(5)
        assert se.export_to_remote_pci(dev)  # doca_sync_event_export_to_dpu in 2.6
        info = dev.as_devinfo()
        for task in ("wait_eq", "wait_neq"):
            with pytest.raises(DocaNotSupported):
                d.SyncEvent.cap_task_is_supported(task, info)
        assert d.SyncEvent.cap_task_is_supported("notify_add", info)


def test_2_6_mode_refuses_eq_and_neq_wait_tasks(v26: None) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.SyncEvent() as se:
        se.add_publisher_location_cpu(dev)
        se.add_subscriber_location_cpu(dev)
        ctx = se.as_ctx()
        ctx.task_get_set_conf(_ignore, _ignore, 1)
        with pytest.raises(DocaNotSupported, match="doca_sync_event_task_wait_eq_set_conf"):
            ctx.task_wait_eq_set_conf(_ignore, _ignore, 1)
        with pytest.raises(DocaNotSupported, match="doca_sync_event_task_wait_neq_set_conf"):
            ctx.task_wait_neq_set_conf(_ignore, _ignore, 1)


def test_2_6_mode_offers_the_wait_gt_tasks_its_header_has(v26: None) -> None:
    """DOCA 2.6's asynchronous wait is ``doca_sync_event_task_wait_gt``: in flight until the masked value
    exceeds the wait value, then its success callback."""
    done: list[str] = []
    set_: list[d.SyncEventTaskNotifySet] = []
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.SyncEvent() as se:
        se.add_publisher_location_cpu(dev)
        se.add_subscriber_location_cpu(dev)
        ctx = se.as_ctx()
        pe.connect_ctx(ctx)
        ctx.task_notify_set_set_conf(lambda t, u, c: set_.append(t), _ignore, 1)
        ctx.task_wait_gt_set_conf(lambda *a: done.append("ok"), lambda *a: done.append("err"), 1)
        ctx.start()
        assert d.SyncEvent.cap_task_is_supported("wait_gt", dev.as_devinfo())
        wait = ctx.task_wait_gt_alloc_init(4, 0xFF)
        assert isinstance(wait, d.SyncEventTaskWaitGt)
        assert (wait.get_wait_val(), wait.get_mask()) == (4, 0xFF)
        wait.submit()

        def notify_set(value: int) -> None:
            ctx.task_notify_set_alloc_init(value).submit()
            while not set_:
                pe.progress()
            set_.pop().free()

        for value in (3, 4, 0x104):  # not greater, equal, greater only without the mask
            notify_set(value)
            pe.progress()  # the wait task is polled: it sees the value now
            assert done == [] and ctx.get_num_inflight_tasks() == 1
        notify_set(5)
        while not done:
            pe.progress()
        assert done == ["ok"] and wait.get_status() == d.ErrorCode.SUCCESS
        wait.free()
        ctx.stop()


def test_3_x_refuses_the_2_6_wait_gt_tasks() -> None:
    from doca_py.emulated import version

    if version.VERSION < (3, 0):
        pytest.skip("the session presents DOCA 2.6")
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.SyncEvent() as se:
        se.add_publisher_location_cpu(dev)
        se.add_subscriber_location_cpu(dev)
        ctx = se.as_ctx()
        with pytest.raises(DocaNotSupported, match=r"doca_sync_event_task_wait_gt_set_conf is exported up to "
                                                   r"DOCA 2\.6 \(3\.0 replaced the wait_gt task"):
            ctx.task_wait_gt_set_conf(_ignore, _ignore, 1)
        with pytest.raises(DocaNotSupported, match="doca_sync_event_cap_task_wait_gt_is_supported"):
            d.SyncEvent.cap_task_is_supported("wait_gt", dev.as_devinfo())  # 3.x has no such query
