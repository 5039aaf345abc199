"""The real libdoca_common declarations against a fake library compiled from C.

Proves the ABI choices of ``doca_py.native.capi.common``: out-parameters, lists
through ``T ***``, ``union doca_data`` by value in and out, callbacks from C,
error codes, missing symbols and per-version signatures.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_double, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from pathlib import Path

import pytest

from doca_py import errors
from doca_py.errors import DocaInUse, DocaNotSupported, ErrorCode
from doca_py.native import capi, inline, loader
from doca_py.native.capi import BoundLib, CtxStateChangedCb, Decl, TaskCompletionCb, Variant

from .conftest import UseLibdir
from .fakelib import FAKE_DECLS

BIG = 0xDEADBEEF_CAFEBABE  # high bit set: a signed or 32-bit mapping would corrupt it


def test_version_detection(lib30: BoundLib) -> None:
    assert loader.runtime_version() == (3, 0, 58)
    assert loader.runtime_version_string() == "3.0.0058"
    assert lib30.version == (3, 0, 58)
    assert inline.version() == inline.version(lib30) == "3.0.0058"
    assert lib30.doca_version() == b"3.0.0058"  # the header-inline doca_version()
    # Search order inside a directory: the .so.<major> soname link first.
    assert str(loader.loaded_path("common")).endswith("libdoca_common.so.3")


def test_error_strings_match_python_side(lib30: BoundLib) -> None:
    for code in ErrorCode:
        assert lib30.doca_error_get_name(code).decode() == errors.error_name(code)
        assert lib30.doca_error_get_descr(code).decode() == errors.error_descr(code)


def test_devinfo_list_through_out_params(lib30: BoundLib, fake30: BoundLib) -> None:
    devs = POINTER(c_void_p)()
    n = c_uint32()
    errors.check(lib30.doca_devinfo_create_list(byref(devs), byref(n)), "doca_devinfo_create_list")
    assert n.value == 2
    pcis = []
    for i in range(n.value):
        buf = ctypes.create_string_buffer(13)
        errors.check(lib30.doca_devinfo_get_pci_addr_str(devs[i], buf))
        pcis.append(buf.value.decode())
    assert pcis == ["0000:03:00.0", "0000:3b:00.0"]
    assert fake30.fake_outstanding_lists() == 1
    errors.check(lib30.doca_devinfo_destroy_list(devs))
    assert fake30.fake_outstanding_lists() == 0


def test_active_rate_uses_the_3x_uint64_signature(lib30: BoundLib) -> None:
    devs, n = POINTER(c_void_p)(), c_uint32()
    errors.check(lib30.doca_devinfo_create_list(byref(devs), byref(n)))
    assert lib30.doca_devinfo_get_active_rate.argtypes[1] is POINTER(c_uint64)
    rate = c_uint64()
    errors.check(lib30.doca_devinfo_get_active_rate(devs[0], byref(rate)))
    assert rate.value == 400_000_000_000
    errors.check(lib30.doca_devinfo_destroy_list(devs))


def test_active_rate_on_26_picks_the_double_variant(fake26_dir: Path, use_libdir: UseLibdir) -> None:
    use_libdir(fake26_dir)
    lib = capi.load_common()
    assert lib.version == (2, 6, 58) == loader.runtime_version()
    assert lib.doca_devinfo_get_active_rate.argtypes[1] is POINTER(c_double)
    devs, n = POINTER(c_void_p)(), c_uint32()
    errors.check(lib.doca_devinfo_create_list(byref(devs), byref(n)))
    rate = c_double()
    errors.check(lib.doca_devinfo_get_active_rate(devs[0], byref(rate)))
    assert rate.value == 200.5
    errors.check(lib.doca_devinfo_destroy_list(devs))


def test_doca_data_by_value_in_and_out(lib30: BoundLib, fake30: BoundLib) -> None:
    ctx, task = c_void_p(), c_void_p()
    errors.check(fake30.fake_ctx_create(byref(ctx)))
    try:
        errors.check(fake30.fake_task_alloc_init(ctx, BIG, byref(task)))
        assert lib30.doca_task_get_user_data(task) == BIG  # union returned by value
        for value in (0, 1, 2**63, 2**64 - 1, ctypes.addressof(ctx)):
            lib30.doca_task_set_user_data(task, value)  # union passed by value
            assert lib30.doca_task_get_user_data(task) == value
        assert lib30.doca_task_get_ctx(task) == ctx.value
        # ctx user data: set by value, read back through a union * out-param.
        errors.check(lib30.doca_ctx_set_user_data(ctx, 2**64 - 2))
        out = c_uint64()
        errors.check(lib30.doca_ctx_get_user_data(ctx, byref(out)))
        assert out.value == 2**64 - 2
        lib30.doca_task_free(task)
    finally:
        fake30.fake_ctx_destroy(ctx)


def test_callbacks_from_c_deliver_unions_and_pointers(lib30: BoundLib, fake30: BoundLib) -> None:
    states: list[tuple[int, int | None, int, int]] = []
    done: list[tuple[int | None, int, int]] = []
    # Keep the CFUNCTYPE objects referenced while C holds the pointers.
    state_cb = CtxStateChangedCb(lambda ud, ctx, prev, nxt: states.append((ud, ctx, prev, nxt)))
    task_cb = TaskCompletionCb(lambda task, task_ud, ctx_ud: done.append((task, task_ud, ctx_ud)))
    pe, ctx, task = c_void_p(), c_void_p(), c_void_p()
    errors.check(lib30.doca_pe_create(byref(pe)))
    errors.check(fake30.fake_ctx_create(byref(ctx)))
    try:
        errors.check(lib30.doca_ctx_set_user_data(ctx, BIG))
        errors.check(lib30.doca_ctx_set_state_changed_cb(ctx, state_cb))
        fake30.fake_ctx_set_task_cb(ctx, task_cb)
        with pytest.raises(errors.DocaNotConnected):
            errors.check(lib30.doca_ctx_start(ctx), "doca_ctx_start")
        errors.check(lib30.doca_pe_connect_ctx(pe, ctx))
        errors.check(lib30.doca_ctx_start(ctx))
        assert lib30.doca_pe_progress(pe) == 1
        assert states == [(BIG, ctx.value, 0, 2)]
        state = c_int()
        errors.check(lib30.doca_ctx_get_state(ctx, byref(state)))
        assert state.value == 2
        errors.check(fake30.fake_task_alloc_init(ctx, 7, byref(task)))
        errors.check(lib30.doca_task_submit(task))
        assert done == []  # completions only run inside progress
        assert lib30.doca_pe_progress(pe) == 1
        assert done == [(task.value, 7, BIG)]
        assert lib30.doca_pe_progress(pe) == 0
        lib30.doca_task_free(task)
    finally:
        fake30.fake_ctx_destroy(ctx)
        errors.check(lib30.doca_pe_destroy(pe))


def test_error_code_maps_to_exception_class(lib30: BoundLib, fake30: BoundLib) -> None:
    pe, ctx = c_void_p(), c_void_p()
    errors.check(lib30.doca_pe_create(byref(pe)))
    errors.check(fake30.fake_ctx_create(byref(ctx)))
    errors.check(lib30.doca_pe_connect_ctx(pe, ctx))
    code = lib30.doca_pe_destroy(pe)
    assert code == ErrorCode.IN_USE
    with pytest.raises(DocaInUse, match="DOCA_ERROR_IN_USE.*doca_pe_destroy"):
        errors.check(code, "doca_pe_destroy")
    fake30.fake_ctx_destroy(ctx)
    assert lib30.doca_pe_destroy(pe) == ErrorCode.SUCCESS


def test_missing_symbol_is_a_falsy_not_supported_stub(lib30: BoundLib) -> None:
    stub = lib30.doca_mmap_set_dmabuf_memrange  # the fake has no dmabuf
    assert not stub and not lib30.has("doca_mmap_set_dmabuf_memrange")
    assert "doca_mmap_set_dmabuf_memrange" in lib30.missing
    assert lib30.has("doca_pe_create") and "doca_pe_create" not in lib30.missing
    with pytest.raises(DocaNotSupported, match="doca_mmap_set_dmabuf_memrange.*3.0.0058"):
        stub(None, 0, None, 0, 0)
    with pytest.raises(NotImplementedError, match="from DOCA 3.1"):
        lib30.doca_devinfo_get_pci_func_type(None, None)
    with pytest.raises(DocaNotSupported, match="Windows"):
        lib30.doca_pe_set_notification_handle(None, None, 0)
    with pytest.raises(AttributeError, match="not declared"):
        lib30.doca_no_such_function  # noqa: B018


def test_inline_get_by_addr_and_by_data(lib30: BoundLib) -> None:
    mem = ctypes.create_string_buffer(64)
    addr = ctypes.addressof(mem)
    inv = mmap = c_void_p(1)  # not modelled by the fake, only passed through
    for getter, want_data_len in (
        (lib30.doca_buf_inventory_buf_get_by_addr, 0),
        (lib30.doca_buf_inventory_buf_get_by_data, 64),
        (lambda *a: inline.buf_inventory_buf_get_by_addr(lib30, *a), 0),
        (lambda *a: inline.buf_inventory_buf_get_by_data(lib30, *a), 64),
    ):
        buf = c_void_p()
        errors.check(getter(inv, mmap, addr, 64, byref(buf)))
        head, data, length, data_len = c_void_p(), c_void_p(), c_size_t(), c_size_t()
        errors.check(lib30.doca_buf_get_head(buf, byref(head)))
        errors.check(lib30.doca_buf_get_data(buf, byref(data)))
        errors.check(lib30.doca_buf_get_len(buf, byref(length)))
        errors.check(lib30.doca_buf_get_data_len(buf, byref(data_len)))
        assert (head.value, data.value, length.value, data_len.value) == (addr, addr, 64, want_data_len)
        errors.check(lib30.doca_buf_dec_refcount(buf, None))
    assert {"doca_version", "doca_buf_inventory_buf_get_by_addr"} <= lib30.python_impl


def test_reuse_on_30_is_a_documented_not_supported(lib30: BoundLib) -> None:
    assert not lib30.has("doca_buf_inventory_buf_reuse_by_addr")
    with pytest.raises(DocaNotSupported, match="doca_buf_dec_refcount.*get_by_args"):
        lib30.doca_buf_inventory_buf_reuse_by_addr(None, None, 0)
    with pytest.raises(DocaNotSupported, match="reuse_by_data"):
        inline.buf_inventory_buf_reuse_by_data(lib30, None, None, 0)


def test_reuse_uses_symbol_then_by_args(fake32_dir: Path, use_libdir: UseLibdir) -> None:
    use_libdir(fake32_dir)
    lib = capi.load_common()
    fake = capi.bind(lib.cdll, FAKE_DECLS, lib.version, libname="common")
    mem = ctypes.create_string_buffer(128)
    a = ctypes.addressof(mem)
    buf, data_len, data = c_void_p(), c_size_t(), c_void_p()
    errors.check(lib.doca_buf_inventory_buf_get_by_data(c_void_p(1), None, a, 16, byref(buf)))
    # reuse_by_data is exported: called directly.
    errors.check(lib.doca_buf_inventory_buf_reuse_by_data(buf, a + 32, 8))
    assert fake.fake_last_reuse() == 2
    errors.check(lib.doca_buf_get_data(buf, byref(data)))
    errors.check(lib.doca_buf_get_data_len(buf, byref(data_len)))
    assert (data.value, data_len.value) == (a + 32, 8)
    # reuse_by_addr is not exported: the header's by_args expansion is used.
    assert "doca_buf_inventory_buf_reuse_by_addr" in lib.missing
    errors.check(lib.doca_buf_inventory_buf_reuse_by_addr(buf, a + 64, 32))
    assert fake.fake_last_reuse() == 3
    errors.check(inline.buf_inventory_buf_reuse_by_addr(lib, buf, a + 64, 32))
    errors.check(lib.doca_buf_get_data(buf, byref(data)))
    errors.check(lib.doca_buf_get_data_len(buf, byref(data_len)))
    assert (data.value, data_len.value) == (a + 64, 0)
    errors.check(lib.doca_buf_dec_refcount(buf, None))


def test_binding_is_cached_per_loaded_library(lib30: BoundLib, fake26_dir: Path, use_libdir: UseLibdir) -> None:
    assert capi.load_common() is lib30
    use_libdir(fake26_dir)
    lib26 = capi.load_common()
    assert lib26 is not lib30 and lib26.version == (2, 6, 58)


def test_bindings_do_not_share_function_objects(lib30: BoundLib) -> None:
    other = capi.bind(lib30.cdll, capi.COMMON, (2, 6, 58), libname="common")
    assert other.doca_devinfo_get_active_rate.argtypes[1] is POINTER(c_double)
    assert lib30.doca_devinfo_get_active_rate.argtypes[1] is POINTER(c_uint64)


def test_marker_variant_selects_by_companion_symbol(lib30: BoundLib) -> None:
    new, old = (c_void_p,), (c_void_p, c_void_p)
    for marker, want in (("doca_pe_create", new), ("doca_no_such_marker", old)):
        decl = Decl("doca_pe_destroy", c_int, new, variants=(Variant((3, 0), c_int, old, marker=marker),))
        bound = capi.bind(lib30.cdll, (decl,), (3, 0, 58), libname="common")
        assert tuple(bound.doca_pe_destroy.argtypes) == want
    # Without a marker the version decides.
    decl = Decl("x", c_int, new, variants=(capi.pre3(c_int, old),))
    assert decl.signature((2, 8, 81)) == (c_int, old)
    assert decl.signature((3, 0, 58)) == (c_int, new)
