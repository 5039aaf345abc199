"""libdoca's C contract, called raw through ctypes: codes, handles, out-parameters, callbacks."""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from doca_py.emulated import version as emu_version
from doca_py.errors import ErrorCode
from doca_py.libdoca.serve import _core
from doca_py.native import capi
from doca_py.native.capi import TaskCompletionCb

from .env import lib_dir

OK, INVALID, NOT_SUPPORTED, UNKNOWN = 0, int(ErrorCode.INVALID_VALUE), int(ErrorCode.NOT_SUPPORTED), int(ErrorCode.UNKNOWN)
P = ctypes.c_void_p


@pytest.fixture
def lib() -> Iterator[Any]:
    saved = emu_version.VERSION
    d = lib_dir("3.2")
    # Bound with the declaration tables, as the native backend binds them: the C ABI of every argument.
    common = capi.bind(ctypes.CDLL(str(d / "libdoca_common.so.3")), capi.tables()["common"], (3, 2, 0), libname="common")
    dma = capi.bind(ctypes.CDLL(str(d / "libdoca_dma.so.3")), capi.tables()["dma"], (3, 2, 0), libname="dma")
    try:
        yield common, dma
    finally:
        emu_version.VERSION = saved


def test_names_descriptions_and_version_answer_as_the_version_built(lib: Any) -> None:
    common, _ = lib
    assert common.doca_error_get_name(INVALID) == b"DOCA_ERROR_INVALID_VALUE"
    assert common.doca_error_get_descr(INVALID) == b"Invalid input"
    assert common.doca_version_runtime() == b"3.2.0000"


def test_bad_handles_and_out_pointers_are_invalid_value_never_a_crash(lib: Any) -> None:
    common, dma = lib
    out = P()
    assert common.doca_mmap_start(None) == INVALID
    assert common.doca_mmap_start(P(0x1234)) == INVALID  # not a handle at all
    assert common.doca_pe_create(None) == INVALID  # NULL out-parameter
    assert common.doca_pe_create(ctypes.byref(out)) == OK and out.value
    pe = out.value
    assert common.doca_mmap_start(P(pe)) == INVALID  # a handle of another kind
    n = ctypes.c_uint64()
    assert common.doca_buf_get_len(P(pe), ctypes.byref(n)) == INVALID
    assert common.doca_pe_destroy(P(pe)) == OK
    assert common.doca_pe_destroy(P(pe)) == INVALID  # destroyed: the handle is dead, not reused


def test_what_the_emulator_does_not_offer_is_not_supported(lib: Any) -> None:
    common, _ = lib
    assert common.doca_ctx_set_datapath_on_dpa(None, None) == NOT_SUPPORTED


def test_an_unexpected_exception_becomes_unknown_with_its_traceback_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: object) -> int:
        raise KeyError("boom")

    slot = _core.wrap("doca_x", broken, ctypes.c_int)
    with caplog.at_level(logging.ERROR, logger="doca_py.libdoca"):
        assert slot(1, 2) == UNKNOWN
    assert "doca_x failed" in caplog.text and "KeyError: 'boom'" in caplog.text
    assert _core.wrap("doca_y", broken, ctypes.c_void_p)() == 0
    assert _core.wrap("doca_z", broken, None)() is None


def test_a_strict_mode_finding_is_a_bad_state_with_its_message_logged(caplog: pytest.LogCaptureFixture) -> None:
    from doca_py.emulated import strict

    def refused(*args: object) -> int:
        raise strict.violation("<buf>", "re-aimed while a task reads it")

    with caplog.at_level(logging.WARNING, logger="doca_py.libdoca"):
        assert _core.wrap("doca_x", refused, ctypes.c_int)(1) == int(ErrorCode.BAD_STATE)
        assert _core.wrap("doca_y", refused, None)() is None
    assert "re-aimed while a task reads it" in caplog.text and "Traceback" not in caplog.text


def _dev(common: Any) -> int:
    lst, n = ctypes.POINTER(P)(), ctypes.c_uint32()
    assert common.doca_devinfo_create_list(ctypes.byref(lst), ctypes.byref(n)) == OK and n.value >= 1
    dev = P()
    assert common.doca_dev_open(P(lst[0]), ctypes.byref(dev)) == OK
    assert common.doca_devinfo_destroy_list(lst) == OK
    return int(dev.value or 0)


def test_a_dma_copy_calls_back_from_inside_progress_on_the_caller_s_thread(lib: Any) -> None:
    common, dma = lib
    dev = _dev(common)
    assert common.doca_dev_as_devinfo(P(dev)) == common.doca_dev_as_devinfo(P(dev))  # stable handles
    src, dst = ctypes.create_string_buffer(b"bytes in place", 64), ctypes.create_string_buffer(64)
    mm, inv, pe, d = P(), P(), P(), P()
    assert common.doca_mmap_create(ctypes.byref(mm)) == OK
    assert common.doca_mmap_set_memrange(mm, ctypes.addressof(src), ctypes.c_size_t(64)) == OK
    assert common.doca_mmap_add_dev(mm, P(dev)) == OK and common.doca_mmap_start(mm) == OK
    mm2 = P()
    assert common.doca_mmap_create(ctypes.byref(mm2)) == OK
    assert common.doca_mmap_set_memrange(mm2, ctypes.addressof(dst), ctypes.c_size_t(64)) == OK
    assert common.doca_mmap_add_dev(mm2, P(dev)) == OK and common.doca_mmap_start(mm2) == OK
    assert common.doca_buf_inventory_create(ctypes.c_size_t(4), ctypes.byref(inv)) == OK
    assert common.doca_buf_inventory_start(inv) == OK
    sb, db = P(), P()
    args = (ctypes.c_size_t(64), ctypes.c_void_p(ctypes.addressof(src)), ctypes.c_size_t(14))
    assert common.doca_buf_inventory_buf_get_by_args(inv, mm, P(ctypes.addressof(src)), *args, ctypes.byref(sb)) == OK
    assert common.doca_buf_inventory_buf_get_by_args(inv, mm2, P(ctypes.addressof(dst)), ctypes.c_size_t(64),
                                                     P(ctypes.addressof(dst)), ctypes.c_size_t(0), ctypes.byref(db)) == OK
    data = P()
    assert common.doca_buf_get_data(sb, ctypes.byref(data)) == OK
    assert data.value == ctypes.addressof(src)  # the data pointer is the bytes
    assert common.doca_pe_create(ctypes.byref(pe)) == OK
    assert dma.doca_dma_create(P(dev), ctypes.byref(d)) == OK
    assert dma.doca_dma_as_ctx(d) == d.value  # the library object and its ctx share one handle
    seen: list[tuple[int, int, int, bool]] = []
    in_progress = [False]

    def done(task: int | None, task_ud: int, ctx_ud: int) -> None:
        seen.append((task or 0, task_ud, ctx_ud, in_progress[0] and threading.get_ident() == me))

    me = threading.get_ident()
    cb = TaskCompletionCb(done)
    assert dma.doca_dma_task_memcpy_set_conf(d, cb, cb, ctypes.c_uint32(4)) == OK
    assert common.doca_ctx_set_user_data(d, ctypes.c_uint64(0xC7)) == OK
    assert common.doca_pe_connect_ctx(pe, d) == OK and common.doca_ctx_start(d) == OK
    task = P()
    assert dma.doca_dma_task_memcpy_alloc_init(d, sb, db, ctypes.c_uint64(0xDA7A), ctypes.byref(task)) == OK
    assert dma.doca_dma_task_memcpy_as_task(task) == task.value
    assert common.doca_task_submit(task) == OK
    in_progress[0] = True
    while not seen:
        common.doca_pe_progress(pe)
    in_progress[0] = False
    assert seen == [(task.value, 0xDA7A, 0xC7, True)]
    assert dst.value == b"bytes in place"
    common.doca_task_free(task)
    assert common.doca_ctx_stop(d) == OK
    assert dma.doca_dma_destroy(d) == OK
    for b in (sb, db):
        assert common.doca_buf_dec_refcount(b, None) == OK
    for obj, destroy in ((inv, common.doca_buf_inventory_destroy), (pe, common.doca_pe_destroy)):
        assert destroy(obj) == OK
    for m in (mm, mm2):
        assert common.doca_mmap_destroy(m) == OK
    assert common.doca_dev_close(P(dev)) == OK
