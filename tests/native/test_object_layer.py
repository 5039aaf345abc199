"""The native object layer (handles behind the public classes) over the fake library."""

from __future__ import annotations

import ctypes

import pytest

from doca_py import errors
from doca_py.native import dev as ndev
from doca_py.native import pe as npe
from doca_py.native.capi import BoundLib
from doca_py.native.ctx import NativeCtx, NativeTaskPool
from .owners import NO_CTX, Owner


def test_devinfo_list_through_the_object_layer(lib30: BoundLib, fake30: BoundLib) -> None:
    infos = ndev.devinfo_create_list()
    assert [i.pci_addr_str() for i in infos] == ["0000:03:00.0", "0000:3b:00.0"]
    assert fake30.fake_outstanding_lists() == 1
    del infos  # the array is destroyed with its last entry
    assert fake30.fake_outstanding_lists() == 0


def test_task_completion_reaches_python_after_progress(lib30: BoundLib, fake30: BoundLib) -> None:
    cptr = ctypes.c_void_p()
    errors.check(fake30.fake_ctx_create(ctypes.byref(cptr)))
    ctx = NativeCtx(cptr.value, lambda: fake30.fake_ctx_destroy(cptr.value) or 0)

    def set_conf(success: object, error: object, num: int) -> int:
        fake30.fake_ctx_set_task_cb(cptr.value, success)
        return 0

    pool = NativeTaskPool(ctx, set_conf, "fake_task")
    done: list[object] = []
    pool.set_conf(lambda owner, ud, cud: done.append(owner), lambda owner, ud, cud: done.append(("err", owner)),
                  4, NO_CTX)
    pe = npe.pe_create()
    pe.connect_ctx(ctx)
    states: list[tuple[int, int]] = []
    ctx.set_state_changed_cb(lambda prev, nxt: states.append((prev, nxt)))
    assert ctx.start() == 2
    tptr = ctypes.c_void_p()
    rc = fake30.fake_task_alloc_init(cptr.value, 0, ctypes.byref(tptr))
    task = pool.adopt(rc, tptr.value, "fake_task_alloc_init")
    task.owner = Owner("the public task")
    task.submit()
    assert task.inflight and done == []
    assert pe.progress()
    assert done == ["the public task"] and not task.inflight
    assert states and states[-1][1] == 2
    assert pool.adopt(0, tptr.value, "again") is task  # one wrapper per descriptor
    with pytest.raises(errors.DocaInUse):
        pe.destroy()  # the fake refuses while a ctx is connected
