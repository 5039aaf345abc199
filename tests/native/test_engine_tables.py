"""libdoca_dma / libdoca_erasure_coding / libdoca_compress: declaration tables and object layer.

1. The tables against the C API inventory (``capi_inventory``) §2.13–2.15 (names, arity, types,
   2.6 markers) and the twelve DOCA 2.6 ``…decompress_lz4…`` names (§6.3).
2. Binding: absent symbols are ``DocaNotSupported`` stubs naming the versions; a 2.6
   runtime binds the 2.6 LZ4 names and not the 3.x ones, and vice versa.
3. The native object layer on fake engine libraries compiled at test time
   (``tests/native/fakelib/{dma,erasure_coding,compress}.c``) over a fake libdoca_common.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from doca_py import errors
from doca_py.errors import DocaNotPermitted, DocaNotSupported, DocaInvalidValue
from doca_py.native import capi, loader
from doca_py.native import compress as ncomp
from doca_py.native import dev as ndev
from doca_py.native import dma as ndma
from doca_py.native import ec as nec
from doca_py.native import pe as npe
from doca_py.native.buf import NativeBuf, NativeBufInventory
from doca_py.native.capi import BoundLib, Decl, MissingFunction
from doca_py.native.capi.compress import COMPRESS, COMPRESS_26
from doca_py.native.capi.dma import DMA
from doca_py.native.capi.erasure_coding import EC

from . import capi_inventory
from .conftest import UseLibdir
from .fakelib import engines as fake
from .fakelib.plugin import FakeLibs
from .owners import NO_CTX, Owner

POINTER_BASE: Any = ctypes._Pointer  # noqa: SLF001
CFUNC_BASE: Any = getattr(ctypes, "_CFuncPtr")

#: doc section → (library, its 3.x table, number of functions the doc gives).
SECTIONS: dict[str, tuple[str, tuple[Decl, ...], int]] = {
    "2.13": ("erasure_coding", EC, 50),
    "2.14": ("compress", tuple(d for d in COMPRESS if d not in COMPRESS_26), 56),
    "2.15": ("dma", DMA, 15),
}


# -- 1. tables against the inventory ----------------------------------------------------------


@dataclass
class Row:
    section: str
    name: str
    returns: str
    params: list[str]
    v26: str


def _rows() -> list[Row]:
    rows = [Row(section, cells[1].strip("`"), cells[2].strip("`"), capi_inventory.params(cells[3]), cells[5])
            for section, cells in capi_inventory.function_rows(capi_inventory.lines(), tuple(SECTIONS))]
    assert {r.section for r in rows} == set(SECTIONS), "the inventory format changed; update this parser"
    return rows


#: Declared functions newer than the 3.0 headers (doca-c-api.md §2.17), with their first version.
LATER = {"doca_dma_set_ordered_completions": (3, 2), "doca_dma_get_ordered_completions": (3, 2)}


def test_every_function_is_declared_with_its_arity() -> None:
    rows = _rows()
    problems = []
    for section, (libname, table, count) in SECTIONS.items():
        mine = [r for r in rows if r.section == section]
        assert len(mine) == count, section
        # The inventory's §2 is the 3.0 headers; later functions are its §2.17 rows.
        decls = {d.name: d for d in table if d.name not in LATER}
        for row in mine:
            decl = decls.get(row.name)
            if decl is None:
                problems.append(f"{row.name}: no Decl")
            elif len(decl.argtypes) != len(row.params):
                problems.append(f"{row.name}: {len(decl.argtypes)} argtypes, doc has {len(row.params)}")
        assert set(decls) == {r.name for r in mine}, libname
        # Header order, like the doc.
        assert [d.name for d in table if d.name not in LATER] == [r.name for r in mine], libname
    assert {d.name: d.since for d in DMA if d.name in LATER} == LATER
    assert problems == []


def test_registered_tables() -> None:
    tables = capi.tables()
    assert tables["dma"] == DMA and tables["erasure_coding"] == EC and tables["compress"] == COMPRESS
    assert len(COMPRESS) == 56 + 12 and len({d.name for d in COMPRESS}) == len(COMPRESS)


def _restype(text: str) -> Any:
    simple: dict[str, Any] = {"doca_error_t": ctypes.c_int, "void": None,
                              "uint8_t": ctypes.c_uint8, "uint32_t": ctypes.c_uint32}
    if text in simple:
        return simple[text]
    assert text.endswith("*") and "doca_" in text, text
    return ctypes.c_void_p


def _param_ok(text: str, argtype: Any) -> bool:
    if text.startswith("→"):
        return isinstance(argtype, type) and issubclass(argtype, POINTER_BASE)
    exact: dict[str, Any] = {"doca_data⟨val⟩": ctypes.c_uint64, "size_t": ctypes.c_size_t,
                             "uint8_t": ctypes.c_uint8, "uint32_t": ctypes.c_uint32,
                             "uint32_t*": ctypes.POINTER(ctypes.c_uint32), "uint8_t*": ctypes.POINTER(ctypes.c_uint8)}
    if text in exact:
        return bool(argtype is exact[text])
    if text.startswith("enum "):
        return bool(argtype is ctypes.c_int)
    if text.endswith("_cb_t"):
        return bool(argtype is capi.TaskCompletionCb)
    return text.endswith("*") and "doca_" in text and argtype is ctypes.c_void_p


def test_types_follow_the_mapping_rules() -> None:
    problems = []
    decls = {d.name: d for _, table, _ in SECTIONS.values() for d in table}
    for row in _rows():
        decl = decls[row.name]
        if decl.restype is not _restype(row.returns):
            problems.append(f"{row.name}: restype {decl.restype} for {row.returns}")
        for i, (text, argtype) in enumerate(zip(row.params, decl.argtypes, strict=True)):
            if not _param_ok(text, argtype):
                problems.append(f"{row.name} arg {i}: {argtype} for {text}")
    assert problems == []


def test_version_markers_follow_the_26_column() -> None:
    decls = {d.name: d for _, table, _ in SECTIONS.values() for d in table}
    for row in _rows():
        decl = decls[row.name]
        new = row.v26 == "—" or row.v26.startswith("new")
        assert (decl.since == (3, 0)) == new, row.name
        assert decl.until is None and not decl.variants, row.name


def test_the_26_lz4_api_is_the_block_api_renamed() -> None:
    """2.6 ``…decompress_lz4…`` (§6.3): the shape of the 3.x block task, Adler instead of xxHash."""
    block = [d for d in COMPRESS if "lz4_block" in d.name]
    expected = [(d.name.replace("lz4_block", "lz4").replace("xxh_cs", "adler_cs"), d.restype, d.argtypes)
                for d in block]
    assert [(d.name, d.restype, d.argtypes) for d in COMPRESS_26] == expected
    assert len(COMPRESS_26) == 12
    for d in COMPRESS_26:
        assert d.until == (2, 6) and d.since is None
        assert "removed in 3.0" in d.availability()


# -- 2. binding: missing symbols and the 2.6 LZ4 names ----------------------------------------


def test_missing_symbols_become_stubs_naming_versions(lib30: BoundLib) -> None:
    # The fake common exports none of these: every function is a falsy stub.
    for libname, table in (("dma", DMA), ("erasure_coding", EC), ("compress", COMPRESS)):
        lib = capi.bind(lib30.cdll, table, (3, 0, 58), libname=libname)
        assert lib.missing == {d.name for d in table}
    dma = capi.bind(lib30.cdll, DMA, (3, 0, 58), libname="dma")
    assert isinstance(dma.doca_dma_create, MissingFunction) and not dma.doca_dma_create
    with pytest.raises(DocaNotSupported, match=r"doca_dma_create is not exported by the loaded libdoca_dma "
                                               r"\(DOCA 3\.0\.0058\); DOCA 2\.6 to 3\.x all export it"):
        dma.doca_dma_create(None, None)
    with pytest.raises(DocaNotSupported, match=r"doca_dma_get_gpu_handle .* from DOCA 3\.0 \(added after 2\.6\)"):
        dma.doca_dma_get_gpu_handle(None, None)
    with pytest.raises(DocaNotSupported, match=r"doca_dma_set_ordered_completions .* from DOCA 3\.2 \(added after 3\.0"):
        dma.doca_dma_set_ordered_completions(None, 1)
    with pytest.raises(DocaNotSupported, match=r"doca_dma_get_ordered_completions .* from DOCA 3\.2 \(added after 3\.0"):
        dma.doca_dma_get_ordered_completions(None, None)


# -- 3. fake engine libraries -----------------------------------------------------------------


@pytest.fixture
def engines30_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 3.0-like common plus dma, erasure_coding and the split-LZ4 compress."""
    return fakelibs.dir("engines30")


@pytest.fixture
def engines26_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 2.6-like common plus engines with the 2.6 ``decompress_lz4`` compress API."""
    return fakelibs.dir("engines26")


def _use(directory: Path, use_libdir: UseLibdir) -> BoundLib:
    use_libdir(directory)
    common = capi.load_common()
    for engine in fake.ENGINES:
        fake.attach(loader.load(engine), common.cdll)
    return common


@pytest.fixture
def env30(engines30_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(engines30_dir, use_libdir)


@pytest.fixture
def env26(engines26_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(engines26_dir, use_libdir)


class Bench:
    """A device, a PE and buffers over Python memory, on whichever fake is loaded."""

    def __init__(self, common: BoundLib) -> None:
        self.common = common
        self.infos = ndev.devinfo_create_list()
        self.devinfo = self.infos[0]
        self.dev = ndev.NativeDev(self.devinfo.ptr)  # the fake engines only need a non-NULL dev
        self.pe = npe.pe_create()
        self.inv = NativeBufInventory(1)  # the fake's get_by_args only needs a non-NULL inventory
        self._mem: list[Any] = []

    def buf(self, data: bytes = b"", size: int = 64) -> NativeBuf:
        mem = ctypes.create_string_buffer(data, max(size, len(data)))
        self._mem.append(mem)
        addr = ctypes.addressof(mem)
        out = ctypes.c_void_p()
        errors.check(self.common.doca_buf_inventory_buf_get_by_args(1, None, addr, len(mem), addr, len(data),
                                                                    ctypes.byref(out)))
        assert out.value
        return self.inv.wrap(out.value)


def _completions(pool: ndma.EngineTaskPool, num: int = 8) -> list[object]:
    done: list[object] = []
    pool.set_conf(lambda owner, ud, cud: done.append(owner), lambda owner, ud, cud: done.append(("error", owner)),
                  num, NO_CTX)
    return done


def test_dma_memcpy_round_trip(env30: BoundLib) -> None:
    b = Bench(env30)
    assert capi.load("dma").missing == {"doca_dma_get_gpu_handle"}  # the fake has no GPU datapath
    dma = ndma.dma_create(b.dev)
    done = _completions(dma.memcpy)
    b.pe.connect_ctx(dma)
    assert dma.start() == 2
    src, dst = b.buf(b"hello engines"), b.buf(size=64)
    t = dma.task_memcpy_alloc_init(src, dst)
    assert isinstance(t, ndma.NativeDmaTaskMemcpy)
    assert t.ptr != t.task_ptr  # the library task and its doca_task differ in the fake
    assert env30.doca_task_get_user_data(t.task_ptr) == t.key
    assert (t.get_src(), t.get_dst()) == (src.ptr, dst.ptr)
    t.owner = Owner("the public task")
    t.submit()
    assert t.inflight and done == []
    assert b.pe.progress()
    assert done == ["the public task"] and not t.inflight
    assert dst.get_data_len() == 13
    assert ctypes.string_at(dst.get_data(), 13) == b"hello engines"
    # Re-aim the destination and resubmit from the same task.
    dst2 = b.buf(size=32)
    t.set_dst(dst2)
    assert t.get_dst() == dst2.ptr
    t.submit()
    assert b.pe.progress() and done == ["the public task"] * 2
    assert ctypes.string_at(dst2.get_data(), dst2.get_data_len()) == b"hello engines"
    # A recycled descriptor keeps its wrapper, and alloc_init's user data is replaced by the key.
    env30.doca_task_set_user_data(t.task_ptr, 0)
    dma.memcpy.out.value = t.ptr
    assert dma.memcpy.take(0, "again") is t
    assert env30.doca_task_get_user_data(t.task_ptr) == t.key
    t.free()
    assert dma.cap_get_max_num_tasks() == fake.MAX_NUM_TASKS
    dma.destroy()
    b.pe.destroy()
    assert loader.load("dma")["fake_engine_live"]() == 0


def test_dma_ordered_completions_cross_as_one_byte_before_start(env30: BoundLib) -> None:
    """DOCA 3.2's doca_dma_set_ordered_completions: the flag reaches C as a uint8_t, and the ctx takes it
    only while idle."""
    b = Bench(env30)
    dma = ndma.dma_create(b.dev)
    ordered = loader.load("dma")["fake_dma_ordered"]
    ordered.restype, ordered.argtypes = ctypes.c_uint8, [ctypes.c_void_p]
    assert dma.get_ordered_completions() is False
    dma.set_ordered_completions(True)
    assert ordered(dma.ptr) == 1 and dma.get_ordered_completions() is True
    dma.set_ordered_completions(False)
    assert ordered(dma.ptr) == 0 and dma.get_ordered_completions() is False
    _completions(dma.memcpy)
    b.pe.connect_ctx(dma)
    assert dma.start() == 2
    with pytest.raises(errors.DocaBadState, match="doca_dma_set_ordered_completions"):
        dma.set_ordered_completions(True)
    assert ordered(dma.ptr) == 0
    dma.destroy()
    b.pe.destroy()


def test_dma_capabilities(env30: BoundLib) -> None:
    b = Bench(env30)
    assert ndma.cap_task_memcpy_is_supported(b.devinfo)
    assert ndma.cap_task_memcpy_get_max_buf_size(b.devinfo) == fake.MAX_BUF_SIZE
    assert ndma.cap_task_memcpy_get_max_buf_list_len(b.devinfo) == fake.MAX_BUF_LIST_LEN
    # The device-level variant opens the device, asks a short-lived engine and closes both.
    assert ndma.cap_get_max_num_tasks(b.devinfo) == fake.MAX_NUM_TASKS
    assert loader.load("dma").fake_engine_live() == 0 and b.common.cdll.fake_open_devs() == 0
    with pytest.raises(DocaNotSupported, match=r"doca_dma_get_gpu_handle .*DOCA 3\.0\.0058"):
        ndma.dma_create(b.dev).get_gpu_handle()


def test_task_alloc_before_set_conf_fails(env30: BoundLib) -> None:
    b = Bench(env30)
    dma = ndma.dma_create(b.dev)
    with pytest.raises(errors.DocaBadState, match="doca_dma_task_memcpy_alloc_init"):
        dma.task_memcpy_alloc_init(b.buf(b"x"), b.buf())
    dma.destroy()


def test_ec_matrices_and_tasks(env30: BoundLib) -> None:
    b = Bench(env30)
    lib = loader.load("erasure_coding")
    ec = nec.ec_create(b.dev)
    other = nec.ec_create(b.dev)
    coding = ec.matrix_create(1, 2, 1)
    recover = ec.matrix_create_recover(coding, [0])
    update = ec.matrix_create_update(coding, [1])
    raw = ec.matrix_create_from_raw(bytes([1, 1]), 2, 1)
    assert lib["fake_ec_live_matrices"]() == 4
    with pytest.raises(DocaInvalidValue, match="raw matrix has 3 bytes"):
        ec.matrix_create_from_raw(bytes(3), 2, 1)
    with pytest.raises(errors.DocaInvalidValue, match="doca_ec_matrix_create_recover"):
        ec.matrix_create_recover(coding, [7])
    with pytest.raises(DocaNotPermitted):
        other.matrix_create_recover(coding, [0])
    done = {kind: _completions(getattr(ec, kind)) for kind in nec.TASK_FNS}
    b.pe.connect_ctx(ec)
    assert ec.start() == 2
    src, dst = b.buf(bytes(128)), b.buf(size=64)
    tasks = {
        "create": ec.task_create_allocate_init(coding, src, dst),
        "recover": ec.task_recover_allocate_init(recover, src, dst),
        "update": ec.task_update_allocate_init(update, src, dst),
        "galois_mul": ec.task_galois_mul_allocate_init(raw, src, dst),
    }
    for kind, t in tasks.items():
        assert t.kind == kind and t.ptr != t.task_ptr
        assert (t.get_src(), t.get_dst()) == (src.ptr, dst.ptr)
        t.owner = Owner(kind)
        t.submit()
    assert tasks["recover"].get_matrix() == recover.ptr and tasks["recover"].matrix is recover
    tasks["create"].set_matrix(raw)
    assert tasks["create"].get_matrix() == raw.ptr
    tasks["create"].set_src(dst)
    assert tasks["create"].get_src() == dst.ptr
    assert b.pe.progress()
    assert done == {kind: [kind] for kind in nec.TASK_FNS}
    for t in tasks.values():
        t.free()
    for m in (coding, recover, update, raw):
        m.destroy()
    raw.destroy()  # idempotent
    assert lib["fake_ec_live_matrices"]() == 0
    with pytest.raises(DocaInvalidValue, match="live native EC matrix"):
        ec.task_create_allocate_init(coding, src, dst)
    ec.destroy()
    other.destroy()
    b.pe.destroy()


def test_ec_capabilities(env30: BoundLib) -> None:
    b = Bench(env30)
    assert nec.cap_task_create_is_supported(b.devinfo)
    assert nec.cap_task_recover_is_supported(b.devinfo)
    assert nec.cap_task_update_is_supported(b.devinfo)
    assert not nec.cap_task_galois_mul_is_supported(b.devinfo)  # the fake says NOT_SUPPORTED
    assert nec.cap_get_max_block_size(b.devinfo) == fake.MAX_BUF_SIZE
    assert nec.cap_get_max_buf_list_len(b.devinfo) == fake.MAX_BUF_LIST_LEN


def test_compress_tasks_on_30(env30: BoundLib) -> None:
    b = Bench(env30)
    assert not ncomp.uses_legacy_lz4()
    comp = ncomp.compress_create(b.dev)
    assert not comp.legacy_lz4
    done = {task: _completions(getattr(comp, task)) for task in ncomp.TASK_TYPES}
    b.pe.connect_ctx(comp)
    assert comp.start() == 2
    src, dst = b.buf(b"compressed"), b.buf(size=64)
    stream = comp.task_decompress_lz4_stream_alloc_init(True, False, src, dst)
    assert stream.kind == "decompress_lz4_stream"
    assert (stream.has_block_checksum, stream.are_blocks_independent) == (True, False)
    stream.has_block_checksum = False
    stream.are_blocks_independent = True
    assert (stream.has_block_checksum, stream.are_blocks_independent) == (False, True)
    assert (stream.crc_cs, stream.xxh_cs) == (fake.CRC, fake.XXH)
    with pytest.raises(DocaNotSupported, match="reports crc_cs and xxh_cs, not adler_cs"):
        _ = stream.adler_cs
    deflate = comp.task_compress_deflate_alloc_init(src, dst)
    assert (deflate.crc_cs, deflate.adler_cs) == (fake.CRC, fake.ADLER)
    with pytest.raises(DocaNotSupported, match="not xxh_cs"):
        _ = deflate.xxh_cs
    assert not deflate.has_block_checksum
    with pytest.raises(DocaNotSupported, match="LZ4 stream tasks only"):
        deflate.has_block_checksum = True
    tasks = {"decompress_lz4_stream": stream, "compress_deflate": deflate,
             "decompress_deflate": comp.task_decompress_deflate_alloc_init(src, dst),
             "decompress_lz4_block": comp.task_decompress_lz4_block_alloc_init(src, dst)}
    for task, t in tasks.items():
        assert (t.get_src(), t.get_dst()) == (src.ptr, dst.ptr)
        t.owner = Owner(task)
        t.submit()
    assert b.pe.progress()
    assert done == {task: [task] for task in ncomp.TASK_TYPES}
    assert comp.cap_get_max_num_tasks() == fake.MAX_NUM_TASKS
    for t in tasks.values():
        t.free()
    comp.destroy()
    b.pe.destroy()


def test_compress_capabilities_on_30(env30: BoundLib) -> None:
    b = Bench(env30)
    for i, task in enumerate(ncomp.TASK_TYPES):
        assert ncomp.cap_task_is_supported(b.devinfo, task)
        assert ncomp.cap_task_get_max_buf_size(b.devinfo, task) == fake.MAX_BUF_SIZE + i
        assert ncomp.cap_task_get_max_buf_list_len(b.devinfo, task) == fake.MAX_BUF_LIST_LEN
    with pytest.raises(DocaInvalidValue, match="unknown compress task type"):
        ncomp.cap_task_is_supported(b.devinfo, "zstd")


def test_26_runtime_binds_the_26_lz4_names(env26: BoundLib) -> None:
    lib = capi.load("compress")
    assert lib.version == (2, 6, 58)
    legacy = {d.name for d in COMPRESS_26}
    split = {d.name for d in COMPRESS if "lz4_stream" in d.name or "lz4_block" in d.name}
    assert lib.missing == split and not lib.missing & legacy
    assert all(lib.has(n) for n in legacy)
    with pytest.raises(DocaNotSupported, match=r"doca_compress_task_decompress_lz4_block_alloc_init is not exported "
                                               r"by the loaded libdoca_compress \(DOCA 2\.6\.0058\); it is exported "
                                               r"from DOCA 3\.0 \(DOCA 2\.6 has doca_compress_\*decompress_lz4\*"):
        lib.doca_compress_task_decompress_lz4_block_alloc_init(None, None, None, 0, None)


def test_30_runtime_lacks_the_26_lz4_names(env30: BoundLib) -> None:
    lib = capi.load("compress")
    assert lib.missing == {d.name for d in COMPRESS_26}
    with pytest.raises(DocaNotSupported, match=r"\(DOCA 3\.0\.0058\); it is exported up to DOCA 2\.6 "
                                               r"\(deprecated in later 2\.x releases and removed in 3\.0"):
        lib.doca_compress_task_decompress_lz4_alloc_init(None, None, None, 0, None)


def test_lz4_stream_maps_to_the_26_task(env26: BoundLib) -> None:
    b = Bench(env26)
    assert ncomp.uses_legacy_lz4()
    comp = ncomp.compress_create(b.dev)
    assert comp.legacy_lz4 and comp.decompress_lz4_stream.kind == "decompress_lz4"
    done = _completions(comp.decompress_lz4_stream)
    with pytest.raises(DocaNotSupported, match=r"lz4_block_set_conf .*DOCA 2\.6\.0058.*from DOCA 3\.0"):
        comp.decompress_lz4_block.set_conf(print, print, 4, NO_CTX)
    b.pe.connect_ctx(comp)
    assert comp.start() == 2
    src, dst = b.buf(b"lz4 frame body"), b.buf(size=64)
    t = comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
    assert t.kind == "decompress_lz4" and t.ptr != t.task_ptr
    assert (t.has_block_checksum, t.are_blocks_independent) == (False, True)
    t.are_blocks_independent = True  # unchanged: fine
    with pytest.raises(DocaNotSupported, match=r"cannot change on DOCA 2\.6\.0058"):
        t.has_block_checksum = True
    assert (t.crc_cs, t.adler_cs) == (fake.CRC, fake.ADLER)
    with pytest.raises(DocaNotSupported, match="not xxh_cs"):
        _ = t.xxh_cs
    t.owner = Owner("lz4")
    t.submit()
    assert b.pe.progress() and done == ["lz4"]
    for flags in ((True, True), (False, False)):
        with pytest.raises(DocaNotSupported, match=r"need doca_compress_task_decompress_lz4_stream .*DOCA 2\.6\.0058"):
            comp.task_decompress_lz4_stream_alloc_init(*flags, src, dst)
    with pytest.raises(DocaNotSupported, match=r"lz4_block_alloc_init .*DOCA 2\.6\.0058"):
        comp.task_decompress_lz4_block_alloc_init(src, dst)
    # Capabilities: the stream probe uses the 2.6 task; block is simply unsupported.
    assert ncomp.cap_task_is_supported(b.devinfo, "decompress_lz4_stream")
    assert ncomp.cap_task_get_max_buf_size(b.devinfo, "decompress_lz4_stream") == fake.MAX_BUF_SIZE + 2
    assert not ncomp.cap_task_is_supported(b.devinfo, "decompress_lz4_block")
    with pytest.raises(DocaNotSupported, match=r"lz4_block_get_max_buf_size .*DOCA 2\.6\.0058"):
        ncomp.cap_task_get_max_buf_size(b.devinfo, "decompress_lz4_block")
    t.free()
    comp.destroy()
    b.pe.destroy()


@pytest.mark.multiprocess
def test_importing_the_engine_modules_loads_no_library(engines30_dir: Path) -> None:
    code = (
        "import doca_py.native.dma, doca_py.native.ec, doca_py.native.compress\n"
        "from doca_py.native import capi, loader\n"
        "assert set(capi.tables()) >= {'dma', 'erasure_coding', 'compress'}\n"
        "assert not loader._cache, loader._cache\n"
    )
    env = dict(os.environ, DOCA_PY_IMPL="emulated", **{loader.ENV_LIBDIR: str(engines30_dir)})
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_probe_compares_the_engines_with_their_tables(engines30_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from doca_py.native import probe

    assert probe.main(["--json", str(engines30_dir)]) == 0
    reports = {r["lib"]: r for r in json.loads(capsys.readouterr().out)["libraries"]}
    assert reports["dma"]["declared"] == len(DMA)
    assert reports["dma"]["missing"] == ["doca_dma_get_gpu_handle"] and reports["dma"]["undeclared"] == []
    assert reports["erasure_coding"]["missing"] == [] and reports["erasure_coding"]["undeclared"] == []
    assert reports["compress"]["missing"] == sorted(d.name for d in COMPRESS_26)
    assert reports["compress"]["undeclared"] == []


def test_buffer_operations_are_one_ctypes_call_each(env30: BoundLib) -> None:
    """Issue 34: a buffer's per-IO operations call their C function directly (resolved once per inventory),
    not through the loader on every call; set_data's bounds check reads a cached window."""
    b = Bench(env30)
    buf = b.buf(b"0123456789abcdef", 64)
    head = buf.get_head()
    buf.set_data(head, 16)  # the first re-aim of a descriptor wrapped from C reads its window once
    frames: list[str] = []

    def prof(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            frames.append(frame.f_code.co_name)

    sys.setprofile(prof)
    try:
        buf.set_data(head + 8, 8)
        buf.reset_data_len()
        n = buf.get_data_len()
        data = buf.get_data()
    finally:
        sys.setprofile(None)
    assert (data, n) == (head + 8, 0)
    assert frames == ["set_data", "reset_data_len", "get_data_len", "get_data"]  # one frame each, no loader
    # Outside the window: refused before C sees it, and the buffer is unchanged.
    with pytest.raises(errors.DocaInvalidValue, match="leaves the window"):
        buf.set_data(head + 60, 8)
    assert (buf.get_data(), buf.get_data_len()) == (head + 8, 0)
