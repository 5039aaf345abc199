"""Borrowed native handles (``from_ptr``): usable, but never destroyed by the wrapper.

Over the fake libraries, whose ``*_destroy`` report a pointer they no longer know
(``doca_mmap_destroy``, ``doca_buf_inventory_destroy``) and which count open devices
and live engines: after the wrapper's ``close``/``destroy`` the C object must still
be there, and destroying it by hand must succeed exactly once.
"""

from __future__ import annotations

import ctypes
from ctypes import byref, c_int, c_void_p
from typing import TYPE_CHECKING, Any, cast

import pytest

from doca_py import errors
from doca_py.errors import DocaInvalidValue, ErrorCode
from doca_py.native import capi, loader
from doca_py.native import comch as ncomch
from doca_py.native import comch_connection
from doca_py.native import dev as ndev
from doca_py.native import dma as ndma
from doca_py.native import pe as npe
from doca_py.native.buf import NativeBufInventory
from doca_py.native.capi import Decl
from doca_py.native.dev import NativeDevInfo
from doca_py.native.mmap import NativeMmap

from .conftest import UseLibdir
from .fakelib import comch as fake_comch
from .fakelib import engines as fake
from .fakelib.plugin import FakeLibs

if TYPE_CHECKING:
    from doca_py.native.capi._raw import CommonLib

COUNTERS = (Decl("fake_open_devs", c_int, ()),)


@pytest.fixture
def env(fakelibs: FakeLibs, use_libdir: UseLibdir) -> CommonLib:
    use_libdir(fakelibs.dir("engines30"))
    common = capi.load_common()
    for engine in fake.ENGINES:
        fake.attach(loader.load(engine), common.cdll)
    return common


def _devinfo() -> NativeDevInfo:
    return cast(NativeDevInfo, ndev.devinfo_create_list()[0])


def _new(fn: Any, *args: Any) -> int:
    out = c_void_p()
    errors.check(fn(*args, byref(out)))
    assert out.value
    return out.value


def test_borrowed_mmap_is_usable_and_left_alive(env: CommonLib) -> None:
    ptr = _new(env.doca_mmap_create)
    mem = ctypes.create_string_buffer(4096)
    m = NativeMmap.from_ptr(ptr)
    assert m.borrowed and m.ptr == ptr
    m.set_memrange(ctypes.addressof(mem), len(mem))
    assert m.get_memrange() == (ctypes.addressof(mem), 4096)
    m.destroy()
    assert env.doca_mmap_destroy(ptr) == ErrorCode.SUCCESS  # still alive: ours to destroy


def test_adopted_mmap_is_destroyed_by_the_wrapper(env: CommonLib) -> None:
    ptr = _new(env.doca_mmap_create)
    m = NativeMmap.from_ptr(ptr, borrowed=False)
    assert not m.borrowed
    m.destroy()
    assert env.doca_mmap_destroy(ptr) == ErrorCode.INVALID_VALUE  # already gone


def test_borrowed_inventory(env: CommonLib) -> None:
    ptr = _new(env.doca_buf_inventory_create, 8)
    inv = NativeBufInventory.from_ptr(ptr)
    assert inv.get_num_elements() == 8
    inv.destroy()
    assert env.doca_buf_inventory_destroy(ptr) == ErrorCode.SUCCESS


def test_borrowed_dev_is_not_closed(env: CommonLib) -> None:
    counters = capi.bind(env.cdll, COUNTERS, env.version, libname="common")
    info = _devinfo()
    ptr = _new(env.doca_dev_open, info.ptr)
    d = ndev.NativeDev.from_ptr(ptr)
    assert d.devinfo.pci_addr_str() == info.pci_addr_str()
    d.close()
    assert counters.fake_open_devs() == 1
    errors.check(env.doca_dev_close(ptr))
    assert counters.fake_open_devs() == 0


def test_borrowed_pe_and_dma_ctx(env: CommonLib) -> None:
    live = capi.load("dma").cdll.fake_engine_live
    info = _devinfo()
    pe_ptr = _new(env.doca_pe_create)
    dma_ptr = _new(capi.load("dma").doca_dma_create, info.ptr)
    before = live()
    pe = npe.NativePe.from_ptr(pe_ptr)
    dma = ndma.NativeDma.from_ptr(dma_ptr)
    assert dma.borrowed and dma.ptr == dma_ptr
    ud = ctypes.c_uint64()  # the wrapper owns the ctx user data (its registry key)
    errors.check(env.doca_ctx_get_user_data(dma.ctx_ptr, byref(ud)))
    assert ud.value == dma.key
    pe.connect_ctx(dma)
    assert dma.start() == 2  # RUNNING: a borrowed ctx works like an owned one
    dma.destroy()
    assert live() == before  # not destroyed
    pe.destroy()
    errors.check(capi.load("dma").doca_dma_destroy(dma_ptr))
    assert live() == before - 1
    # The fake pe keeps counting the ctx it never saw stop: either answer means pe_ptr was still alive.
    assert env.doca_pe_destroy(pe_ptr) in (ErrorCode.SUCCESS, ErrorCode.IN_USE)


def test_a_view_of_an_owned_ctx_leaves_the_owner_its_events(env: CommonLib) -> None:
    info = _devinfo()
    dev = ndev.NativeDev(info.ptr)  # the fake engines only need a non-NULL dev
    owner = ndma.dma_create(dev)
    assert owner.ptr
    view = ndma.NativeDma.from_ptr(owner.ptr)
    assert view.borrowed and view.ctx_ptr == owner.ctx_ptr and view.key != owner.key
    ud = ctypes.c_uint64()
    errors.check(env.doca_ctx_get_user_data(owner.ctx_ptr, byref(ud)))
    assert ud.value == owner.key  # state callbacks still reach the owner
    view.destroy()
    assert owner.get_state() == 0  # IDLE: the view destroyed nothing
    owner.destroy()


def test_a_view_of_an_owned_comch_server_leaves_the_owner_its_events(fakelibs: FakeLibs,
                                                                      use_libdir: UseLibdir) -> None:
    use_libdir(fakelibs.dir("comch30"))
    common = capi.load_common()
    fake_comch.attach(loader.load("comch"), common.cdll)
    helpers = capi.bind(loader.load("comch"), fake_comch.FAKE_COMCH_DECLS, common.version, libname="comch")
    ptr = _devinfo().ptr
    assert ptr
    dev = ndev.NativeDev(ptr)  # the fake only needs non-NULL dev and rep pointers
    rep = ndev.NativeDevRep(ptr, ndev.NativeDevInfoRep(ptr))
    owner = ncomch.server_create(dev, rep, "svc")
    live = helpers.fake_comch_live()
    assert owner.ptr
    view = ncomch.NativeComchServer.from_ptr(owner.ptr)
    assert view.borrowed and comch_connection.endpoints[owner.ptr] is owner
    view.destroy()
    assert comch_connection.endpoints[owner.ptr] is owner  # connections still find the owner
    assert helpers.fake_comch_live() == live  # and the server is still there
    owner.destroy()
    assert owner.ptr not in comch_connection.endpoints and helpers.fake_comch_live() == live - 1


def test_borrowed_dev_rep_uses_the_rep_devinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fakes have no representors: a recording stand-in for libdoca_common.
    calls: list[tuple[str, int]] = []

    class Lib:
        def doca_dev_rep_as_devinfo(self, ptr: int) -> int:
            calls.append(("as_devinfo", ptr))
            return ptr + 8

        def doca_dev_rep_close(self, ptr: int) -> int:
            calls.append(("close", ptr))
            return 0

    monkeypatch.setattr(ndev, "lib", Lib)
    rep = ndev.NativeDevRep.from_ptr(0x1000)
    assert rep.borrowed and rep.devinfo_rep.ptr == 0x1008
    rep.close()
    owned = ndev.NativeDevRep.from_ptr(0x2000, borrowed=False)
    owned.close()
    assert calls == [("as_devinfo", 0x1000), ("as_devinfo", 0x2000), ("close", 0x2000)]


@pytest.mark.parametrize("cls", [NativeMmap, NativeBufInventory, npe.NativePe, ndev.NativeDev, ndma.NativeDma,
                                 ndev.NativeDevRep])
@pytest.mark.parametrize("ptr", [0, None])
def test_from_ptr_refuses_null(cls: Any, ptr: Any) -> None:
    with pytest.raises(DocaInvalidValue, match="non-NULL"):
        cls.from_ptr(ptr)


def test_owned_objects_are_not_borrowed(env: CommonLib) -> None:
    from doca_py.native import mmap as nmmap

    m = nmmap.mmap_create()
    assert m.borrowed is False
    m.destroy()
