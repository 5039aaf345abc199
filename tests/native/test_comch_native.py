"""libdoca_comch (and DOCA 2.6 libdoca_cc): declaration tables and native object layer.

1. The tables against the inventory in ``doca-c-api.md`` §2.10–2.12 (names, order,
   arity, types, 2.6 markers), the §6.2 ABI change of the producer send task and the
   §6.3 renames of the 2.6 ``doca_cc_*`` table.
2. Binding: absent symbols are ``DocaNotSupported`` stubs naming versions; the producer
   send ``alloc_init`` gets its 2.x signature when the immediate-data API is absent;
   a 2.6 runtime is reached through libdoca_cc under the 3.x names.
3. The object layer on a fake libdoca_comch / libdoca_cc compiled at test time
   (``tests/native/fakelib/comch.c``) over a fake libdoca_common.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from doca_py import errors
from doca_py.errors import DocaBadState, DocaInvalidValue, DocaNotConnected, DocaNotSupported
from doca_py.native import capi, loader
from doca_py.native import comch as ncomch
from doca_py.native import dev as ndev
from doca_py.native import pe as npe
from doca_py.native.buf import NativeBuf, NativeBufInventory
from doca_py.native.capi import BoundLib, MissingFunction, TaskCompletionCb
from doca_py.native.capi.comch import (
    CC_26,
    COMCH,
    IMM_MARKER,
    RENAMES_26,
    ComchEventConnectionStatusChangedCb,
    ComchEventConsumerCb,
    ComchEventMsgRecvCb,
    comch_view,
    load_comch,
)
from doca_py.native.mmap import NativeMmap

from . import capi_inventory
from .conftest import UseLibdir
from .fakelib import comch as fake
from .fakelib.plugin import FakeLibs
from .owners import NO_CTX, Owner

C = ctypes
P = C.c_void_p
PP = C.POINTER(C.c_void_p)
U32 = C.c_uint32
PRODUCER_ALLOC = "doca_comch_producer_task_send_alloc_init"


# -- 1. the tables against the inventory --------------------------------------------------------


@dataclass
class Row:
    name: str
    returns: str
    params: list[str]
    v26: str


def _rows() -> list[Row]:
    return [Row(cells[1].strip("`"), cells[2].strip("`"), capi_inventory.params(cells[3]), cells[5])
            for _, cells in capi_inventory.function_rows(capi_inventory.lines(), ("2.10", "2.11", "2.12"))]


def test_every_function_is_declared_in_header_order_with_its_arity() -> None:
    rows = _rows()
    assert len(rows) == 42 + 35 + 22 == 99  # §5.1: libdoca_comch exports 99
    decls = {d.name: d for d in COMCH}
    assert [d.name for d in COMCH] == [r.name for r in rows]
    problems = [f"{r.name}: {len(decls[r.name].argtypes)} argtypes, doc has {len(r.params)}"
                for r in rows if len(decls[r.name].argtypes) != len(r.params)]
    assert problems == []


def test_registered_tables() -> None:
    tables = capi.tables()
    assert tables["comch"] == COMCH and tables["cc"] == CC_26
    for table in (COMCH, CC_26):
        assert len({d.name for d in table}) == len(table)
    assert (len(COMCH), len(CC_26)) == (99, 70)  # §5.1


_OUT: dict[str, Any] = {
    "uint32_t*": C.POINTER(C.c_uint32), "uint64_t*": C.POINTER(C.c_uint64),
    "doca_dpa_dev_comch_consumer_completion_t*": C.POINTER(C.c_uint64),
    "doca_dpa_dev_comch_consumer_t*": C.POINTER(C.c_uint64),
    "doca_dpa_dev_comch_producer_t*": C.POINTER(C.c_uint64),
}
_IN: dict[str, Any] = {
    "doca_data⟨val⟩": C.c_uint64, "uint32_t": U32, "const uint32_t": U32, "const char*": C.c_char_p,
    "const void*": P, "uint8_t*": P,
    "doca_comch_event_msg_recv_cb_t": ComchEventMsgRecvCb,
    "doca_comch_event_connection_status_changed_cb_t": ComchEventConnectionStatusChangedCb,
    "doca_comch_event_consumer_cb_t": ComchEventConsumerCb,
}


def _expected_param(text: str) -> Any:
    if text.startswith("→"):
        t = text[1:]
        if t in _OUT:
            return _OUT[t]
        assert t.endswith("**") and "doca_" in t, text
        return PP
    if text in _IN:
        return _IN[text]
    if text.startswith("enum "):
        return C.c_int
    if text.endswith("_completion_cb_t"):
        return TaskCompletionCb
    assert text.endswith("*") and "doca_" in text, text
    return P


def _expected_restype(text: str) -> Any:
    simple: dict[str, Any] = {"doca_error_t": C.c_int, "void": None, "uint32_t": U32,
                              "doca_data (BY VALUE)": C.c_uint64}
    if text in simple:
        return simple[text]
    assert text.endswith("*"), text  # opaque objects and uint8_t data: addresses
    return P


def test_types_follow_the_mapping_rules() -> None:
    decls = {d.name: d for d in COMCH}
    problems = []
    for row in _rows():
        decl = decls[row.name]
        if decl.restype is not _expected_restype(row.returns):
            problems.append(f"{row.name}: restype {decl.restype} for {row.returns}")
        for i, (text, argtype) in enumerate(zip(row.params, decl.argtypes, strict=True)):
            if argtype is not _expected_param(text):
                problems.append(f"{row.name} arg {i}: {argtype} for {text}")
    assert problems == []


def _producer_abi_change() -> tuple[int, int]:
    """§6.2 #15: parameter counts of the 2.6 and the 3.0 producer send alloc_init."""
    for line in capi_inventory.section(capi_inventory.lines(), "6.2"):
        m = re.match(rf"^\| 15 \| `{PRODUCER_ALLOC}` \| `doca_cc_producer_task_send_alloc_init` \| "
                     r"doca_error_t \(([^)]*)\) \| doca_error_t \(([^)]*)\) \|", line)
        if m:
            return len(m.group(1).split(",")), len(m.group(2).split(","))
    raise AssertionError("§6.2 row 15 not found; update this parser")


def test_version_markers_and_the_producer_variant() -> None:
    decls = {d.name: d for d in COMCH}
    for row in _rows():
        decl = decls[row.name]
        assert (decl.since == (3, 0)) == (row.v26 == "—"), row.name
        assert (row.v26 in ("cc→", "cc→ Δ")) == (row.name in RENAMES_26), row.name
        assert decl.until is None, row.name
        assert bool(decl.variants) == (row.v26 == "cc→ Δ") == (row.name == PRODUCER_ALLOC), row.name
    n26, n30 = _producer_abi_change()
    decl = decls[PRODUCER_ALLOC]
    (var,) = decl.variants
    assert (len(var.argtypes), len(decl.argtypes)) == (n26, n30) == (4, 6)
    assert var.before == (3, 0) and var.marker == IMM_MARKER and var.restype is decl.restype
    # 3.x inserted imm_data (uint8_t *) and imm_data_len before the consumer id.
    assert decl.argtypes == (P, P, P, U32, U32, PP) and var.argtypes == (P, P, U32, PP)
    assert IMM_MARKER in decls and decls[IMM_MARKER].since == (3, 0)


def test_the_26_cc_table_follows_the_renames() -> None:
    # §6.3: every doca_cc_* name is the 3.x name with the old prefix, except two.
    special = {}
    for line in capi_inventory.section(capi_inventory.lines(), "6.3"):
        m = re.match(r"^\| `(doca_cc_\w+)` \| `(doca_comch_\w+)` \|", line)
        if m:
            special[m.group(2)] = m.group(1)
    assert len(special) == 3, "§6.3 format changed; update this parser"
    for new, old in RENAMES_26.items():
        assert old == special.get(new, "doca_cc_" + new.removeprefix("doca_comch_")), new
    comch = {d.name: d for d in COMCH}
    assert [d.name for d in CC_26] == [RENAMES_26[d.name] for d in COMCH if d.name in RENAMES_26]
    for d in CC_26:
        new = next(n for n, o in RENAMES_26.items() if o == d.name)
        assert d.until == (2, 6) and d.since is None and not d.variants, d.name
        assert d.restype is comch[new].restype, d.name
        if new == PRODUCER_ALLOC:
            assert d.argtypes == comch[new].variants[0].argtypes
        else:
            assert d.argtypes == comch[new].argtypes, d.name
        assert "up to DOCA 2.6 (DOCA 2.6 libdoca_cc; renamed doca_comch_* in libdoca_comch)" in d.availability()


# -- 2. binding ----------------------------------------------------------------------------------


def test_missing_symbols_become_stubs_naming_versions(lib30: BoundLib) -> None:
    # The fake common exports no comch function: every one is a falsy stub.
    lib = capi.bind(lib30.cdll, COMCH, (3, 0, 58), libname="comch")
    assert lib.missing == {d.name for d in COMCH}
    assert isinstance(lib.doca_comch_server_create, MissingFunction) and not lib.doca_comch_server_create
    with pytest.raises(DocaNotSupported, match=r"doca_comch_client_create is not exported by the loaded "
                                               r"libdoca_comch \(DOCA 3\.0\.0058\); DOCA 2\.6 to 3\.x all export it"):
        lib.doca_comch_client_create(None, b"x", None)
    with pytest.raises(DocaNotSupported, match=r"doca_comch_server_disconnect .*\(DOCA 3\.0\.0058\); it is exported "
                                               r"from DOCA 3\.0 \(added after 2\.6\)"):
        lib.doca_comch_server_disconnect(None, None)
    with pytest.raises(DocaNotSupported, match=r"doca_comch_consumer_get_dpa_handle .*from DOCA 3\.0 "
                                               r"\(added after 2\.6; DPA datapath only\)"):
        lib.doca_comch_consumer_get_dpa_handle(None, None)
    cc = capi.bind(lib30.cdll, CC_26, (3, 0, 58), libname="cc")
    with pytest.raises(DocaNotSupported, match=r"doca_cc_server_create is not exported by the loaded libdoca_cc "
                                               r"\(DOCA 3\.0\.0058\); it is exported up to DOCA 2\.6"):
        cc.doca_cc_server_create(None, None, b"x", None)


@pytest.fixture
def comch30_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 3.0-like common and a libdoca_comch with immediate data."""
    return fakelibs.dir("comch30")


@pytest.fixture
def comch28_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 2.8-like common and a libdoca_comch with the 2.x producer ABI (no immediate data)."""
    return fakelibs.dir("comch28")


@pytest.fixture
def cc26_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 2.6-like common and a libdoca_cc (``doca_cc_*`` names), no libdoca_comch."""
    return fakelibs.dir("cc26")


def _use(directory: Path, use_libdir: UseLibdir, libname: str) -> BoundLib:
    use_libdir(directory)
    common = capi.load_common()
    fake.attach(loader.load(libname), common.cdll)
    return common


@pytest.fixture
def env30(comch30_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(comch30_dir, use_libdir, "comch")


@pytest.fixture
def env28(comch28_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(comch28_dir, use_libdir, "comch")


@pytest.fixture
def env26(cc26_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(cc26_dir, use_libdir, "cc")


def _argtypes(fn: Any) -> tuple[Any, ...]:
    return tuple(fn.argtypes)


def test_30_runtime_binds_the_imm_signature(env30: BoundLib) -> None:
    lib = load_comch()
    assert lib is capi.load("comch") and lib is load_comch()  # cached
    assert lib.version == (3, 0, 58) and ncomch.has_imm_api(lib)
    assert _argtypes(lib.doca_comch_producer_task_send_alloc_init) == (P, P, P, U32, U32, PP)
    assert _argtypes(lib.doca_comch_server_task_send_alloc_init) == (P, P, P, U32, PP)


def test_2x_comch_without_imm_binds_the_old_signature(env28: BoundLib) -> None:
    lib = load_comch()
    assert lib.libname == "comch" and lib.version == (2, 8, 81) and not ncomch.has_imm_api(lib)
    assert _argtypes(lib.doca_comch_producer_task_send_alloc_init) == (P, P, U32, PP)
    with pytest.raises(DocaNotSupported, match=r"doca_comch_server_disconnect is not exported by the loaded "
                                               r"libdoca_comch \(DOCA 2\.8\.0081\); it is exported from DOCA 3\.0"):
        lib.doca_comch_server_disconnect(None, None)


def test_the_companion_symbol_decides_not_the_version(env28: BoundLib, comch30_dir: Path) -> None:
    """§6.1: the ABI change may predate 3.0, so the marker symbol picks the signature."""
    old = capi.bind(loader.load("comch"), COMCH, (3, 0, 58), libname="comch")  # no imm, 3.0 version string
    assert _argtypes(old.doca_comch_producer_task_send_alloc_init) == (P, P, U32, PP)
    new = capi.bind(C.CDLL(str(comch30_dir / "libdoca_comch.so")), COMCH, (2, 8, 81), libname="comch")
    assert _argtypes(new.doca_comch_producer_task_send_alloc_init) == (P, P, P, U32, U32, PP)


def test_26_runtime_uses_libdoca_cc_under_the_3x_names(env26: BoundLib) -> None:
    lib = load_comch()
    assert lib.libname == "cc" and lib.version == (2, 6, 58) and lib is load_comch()
    assert set(lib.decls) == {d.name for d in COMCH}
    cc = capi.load("cc")
    assert lib.doca_comch_server_create is cc.doca_cc_server_create
    assert lib.doca_comch_server_event_connection_status_changed_register is \
        cc.doca_cc_server_event_connection_register
    assert lib.doca_comch_server_get_device_rep is cc.doca_cc_server_get_device_repr
    assert _argtypes(lib.doca_comch_producer_task_send_alloc_init) == (P, P, U32, PP)
    assert not ncomch.has_imm_api(lib)
    with pytest.raises(DocaNotSupported, match=r"doca_comch_server_disconnect is not exported by the loaded "
                                               r"libdoca_cc \(DOCA 2\.6\.0058\); it is exported from DOCA 3\.0"):
        lib.doca_comch_server_disconnect(None, None)
    # A 2.6 function this (fake) libdoca_cc lacks: named with its 2.6 spelling.
    with pytest.raises(DocaNotSupported, match=r"doca_comch_cap_get_max_send_tasks \(doca_cc_cap_get_max_send_tasks "
                                               r"in DOCA 2\.6\) is not exported by the loaded libdoca_cc "
                                               r"\(DOCA 2\.6\.0058\); DOCA 2\.6 to 3\.x all export it"):
        lib.doca_comch_cap_get_max_send_tasks(None, None)
    assert "doca_comch_cap_get_max_send_tasks" in lib.missing and "doca_comch_server_create" not in lib.missing
    assert comch_view(cc).missing == lib.missing


def test_neither_library_lists_both(lib30: BoundLib) -> None:
    try:
        load_comch()
    except loader.DocaLibraryNotFound as exc:
        info = exc
    else:
        pytest.skip("a libdoca_comch or libdoca_cc is installed on this machine")
    tried = " ".join(where for where, _ in info.attempts)
    assert "libdoca_comch" in str(info) and "libdoca_comch.so" in tried and "libdoca_cc.so" in tried


# -- 3. the object layer on the fakes ------------------------------------------------------------


class Bench:
    """A device and representor, a PE, an mmap and buffers over Python memory, the fake's helpers."""

    def __init__(self, common: BoundLib, libname: str) -> None:
        self.common = common
        self.infos = ndev.devinfo_create_list()
        self.devinfo = cast(ndev.NativeDevInfo, self.infos[0])
        ptr = self.devinfo.ptr
        self.dev = ndev.NativeDev(ptr)  # the fake only needs non-NULL dev, rep and mmap pointers
        self.rep = ndev.NativeDevRep(ptr, ndev.NativeDevInfoRep(ptr))
        self.mmap = NativeMmap(ptr)
        self.pe = npe.pe_create()
        self.inv = NativeBufInventory(1)
        self.fake = capi.bind(loader.load(libname), fake.FAKE_COMCH_DECLS, common.version, libname=libname)
        self._mem: list[Any] = []

    def buf(self, data: bytes = b"", size: int = 64) -> NativeBuf:
        mem = C.create_string_buffer(data, max(size, len(data)))
        self._mem.append(mem)
        addr = C.addressof(mem)
        out = C.c_void_p()
        errors.check(self.common.doca_buf_inventory_buf_get_by_args(1, None, addr, len(mem), addr, len(data),
                                                                    C.byref(out)))
        assert out.value
        return self.inv.wrap(out.value)

    def incoming(self, srv: ncomch.NativeComchServer) -> int:
        out = C.c_void_p()
        assert self.fake.fake_comch_server_incoming(srv.ptr, C.byref(out)) == 0
        assert out.value
        return out.value

    def msg(self, conn_ptr: int, data: bytes) -> None:
        assert self.fake.fake_comch_incoming_msg(conn_ptr, data, len(data)) == 0

    def last_msg(self) -> bytes:
        out = C.create_string_buffer(fake.MAX_MSG_SIZE)
        n = self.fake.fake_comch_last_msg(out)
        return out.raw[:n]

    def last_produced(self) -> tuple[bytes, bytes, int]:
        out, imm = C.create_string_buffer(256), (C.c_uint8 * 64)()
        imm_len, cid = C.c_uint32(), C.c_uint32()
        n = self.fake.fake_comch_last_produced(out, imm, C.byref(imm_len), C.byref(cid))
        return out.raw[:n], bytes(imm[:imm_len.value]), cid.value


def _completions(pool: Any, num: int = 8) -> list[object]:
    done: list[object] = []
    pool.set_conf(lambda owner, ud, cud: done.append(owner), lambda owner, ud, cud: done.append(("error", owner)),
                  num, NO_CTX)
    return done


class PublicConn:
    """Stands for doca_py.comch.ComchConnection: made once per handle by the wrap function."""

    def __init__(self, h: ncomch.NativeComchConnection) -> None:
        self.h = h


def _wrap_counting(made: list[PublicConn]) -> Any:
    def wrap(h: Any) -> object:
        c = PublicConn(h)
        h.owner = c
        made.append(c)
        return c

    return wrap


def test_server_events_messages_and_send(env30: BoundLib) -> None:
    b = Bench(env30, "comch")
    srv = ncomch.server_create(b.dev, b.rep, "svc")
    made: list[PublicConn] = []
    srv.set_wrap(_wrap_counting(made))
    events: list[tuple[Any, ...]] = []
    views: list[memoryview] = []

    def on_msg(msg: memoryview, conn: PublicConn) -> None:
        views.append(msg)
        events.append(("msg", bytes(msg), conn))

    srv.set_event_cb("msg_recv", on_msg)
    srv.set_event_cb("connect", lambda conn, ok: events.append(("connect", conn, ok)))
    srv.set_event_cb("disconnect", lambda conn, ok: events.append(("disconnect", conn, ok)))
    srv.set_event_cb("new_consumer", lambda conn, cid: events.append(("new", conn, cid)))
    srv.set_event_cb("expired_consumer", lambda conn, cid: events.append(("expired", conn, cid)))
    with pytest.raises(DocaInvalidValue, match="unknown comch event"):
        srv.set_event_cb("telepathy", print)
    sent = _completions(srv.send)
    srv.set_max_msg_size(256)
    srv.set_recv_queue_size(32)
    assert (srv.get_max_msg_size(), srv.get_recv_queue_size()) == (256, 32)
    with pytest.raises(DocaInvalidValue, match="doca_comch_server_set_max_msg_size"):
        srv.set_max_msg_size(fake.MAX_MSG_SIZE + 1)  # refused by the library
    b.pe.connect_ctx(srv)
    assert srv.start() == 2
    # A client connects: C calls the status callback inside doca_pe_progress; Python runs after.
    cptr = b.incoming(srv)
    assert events == [] and srv.get_connections() == []
    assert b.pe.progress()
    [(kind, pub, ok)] = events
    conn: ncomch.NativeComchConnection = pub.h
    assert (kind, ok) == ("connect", True) and conn.ptr == cptr and conn.owner is pub
    assert srv.get_connections() == [conn] and conn.is_server_side() and conn.is_connected()
    assert env30.cdll and load_comch().doca_comch_connection_get_user_data(cptr) == conn.key
    # Messages: the fake overwrites and frees its buffer right after the callback, so the
    # bytes reaching Python were copied inside it.
    payload = b"hello\x00comch"
    b.msg(cptr, payload)
    b.msg(cptr, b"")
    assert b.pe.progress()
    assert events[1:] == [("msg", payload, pub), ("msg", b"", pub)] and len(made) == 1
    with pytest.raises(ValueError):
        bytes(views[0])  # released when the callback returned
    # A send task completes with its owner.
    t = srv.task_send_alloc_init(conn, bytearray(b"reply"))
    assert isinstance(t, ncomch.NativeComchTaskSend) and t.ptr != t.task_ptr and t.get_connection() is conn
    assert env30.doca_task_get_user_data(t.task_ptr) == t.key
    t.owner = Owner("the public send")
    t.submit()
    assert sent == [] and b.pe.progress()
    assert sent == ["the public send"] and not t.inflight and b.last_msg() == b"reply"
    conn.update_info()
    assert [conn.get_counter(i) for i in (1, 2, 3, 4)] == [1, 5, 2, len(payload)]
    with pytest.raises(DocaInvalidValue, match="unknown doca_comch_counter"):
        conn.get_counter(5)
    with pytest.raises(DocaInvalidValue, match="doca_comch_server_task_send_alloc_init"):
        srv.task_send_alloc_init(conn, bytes(257))  # above max_msg_size: refused by the library
    with pytest.raises(DocaInvalidValue, match="does not belong to this comch server"):
        srv.task_send_alloc_init(object(), b"x")
    # The peer's consumers come and go.
    assert b.fake.fake_comch_remote_consumer(cptr, 42, 1) == 0
    assert b.fake.fake_comch_remote_consumer(cptr, 42, 0) == 0
    assert b.pe.progress() and events[-2:] == [("new", pub, 42), ("expired", pub, 42)]
    # A failing Python callback surfaces from progress; the rest waits for the next one.
    before = len(events)

    def boom(msg: memoryview, c: PublicConn) -> None:
        events.append(("boom", bytes(msg)))
        if len(events) == before + 1:
            raise RuntimeError("callback failed")

    srv.set_event_cb("msg_recv", boom)
    b.msg(cptr, b"one")
    b.msg(cptr, b"two")
    with pytest.raises(RuntimeError, match="callback failed"):
        b.pe.progress()
    assert events[before:] == [("boom", b"one")] and len(srv.pending) == 1
    b.pe.progress()
    assert events[before:] == [("boom", b"one"), ("boom", b"two")]
    # A second client, then a disconnect.
    cptr2 = b.incoming(srv)
    b.pe.progress()
    conn2 = events[-1][1].h
    assert conn2 is not conn and conn2.ptr == cptr2 and set(srv.get_connections()) == {conn, conn2}
    srv.disconnect(conn)
    assert b.pe.progress() and events[-1] == ("disconnect", pub, True)
    assert not conn.is_connected() and srv.get_connections() == [conn2]
    with pytest.raises(DocaNotConnected, match="closed"):
        srv.task_send_alloc_init(conn, b"x")
    with pytest.raises(DocaNotConnected):
        srv.disconnect(conn)
    with pytest.raises(DocaBadState, match="doca_comch_producer_create: the comch connection is not established"):
        ncomch.producer_create(conn)
    with pytest.raises(DocaBadState, match="doca_comch_consumer_create: the comch connection is not established"):
        ncomch.consumer_create(conn, b.mmap)
    t.free()
    srv.destroy()
    assert not conn2.is_connected()
    b.pe.destroy()
    assert b.fake.fake_comch_live() == 0


def test_client_consumer_and_producer(env30: BoundLib) -> None:
    b = Bench(env30, "comch")
    cli = ncomch.client_create(b.dev, "svc")
    with pytest.raises(DocaBadState, match="until its ctx is RUNNING"):
        cli.get_connection()
    with pytest.raises(DocaInvalidValue, match="only on a comch server"):
        cli.set_event_cb("connect", print)
    msgs: list[tuple[bytes, object]] = []
    cli.set_event_cb("msg_recv", lambda msg, c: msgs.append((bytes(msg), c)))
    sent = _completions(cli.send)
    states: list[tuple[int, int]] = []
    cli.set_state_changed_cb(lambda prev, nxt: states.append((prev, nxt)))
    b.pe.connect_ctx(cli)
    cli.start()
    assert b.pe.progress() and states == [(0, 2)]
    conn = cli.get_connection()
    assert cli.get_connection() is conn and not conn.is_server_side() and conn.is_connected()
    b.msg(conn.ptr, b"from the server")
    b.pe.progress()
    assert msgs == [(b"from the server", conn)]  # no wrap function set: the handle itself
    t = cli.task_send_alloc_init(conn, memoryview(b"to the server"))
    t.owner = Owner("client send")
    t.submit()
    b.pe.progress()
    assert sent == ["client send"] and b.last_msg() == b"to the server"
    # Consumer: its receive completes with the producer's data, producer id and immediate data.
    cons = ncomch.consumer_create(conn, b.mmap)
    assert cons.get_id() >= fake.FIRST_ID
    assert cons.get_imm_data_len() == fake.MAX_IMM_DATA_LEN
    cons.set_imm_data_len(8)
    assert cons.get_imm_data_len() == 8
    with pytest.raises(DocaInvalidValue, match="doca_comch_consumer_set_imm_data_len"):
        cons.set_imm_data_len(fake.MAX_IMM_DATA_LEN + 1)
    received = _completions(cons.post_recv)
    b.pe.connect_ctx(cons)
    cons.start()
    dst = b.buf(b">", size=64)
    rt = cons.task_post_recv_alloc_init(dst)
    assert rt.get_buf() == dst.ptr
    other = b.buf(size=64)
    rt.set_buf(other)
    assert rt.get_buf() == other.ptr
    rt.set_buf(dst)
    rt.owner = Owner("recv")
    rt.submit()
    assert b.pe.progress() and received == ["recv"]
    assert (rt.producer_id, rt.imm) == (fake.RECV_PRODUCER_ID, fake.RECV_IMM)
    assert C.string_at(dst.get_data(), dst.get_data_len()) == b">" + fake.RECV_DATA
    # Producer: the 3.x alloc_init carries immediate data.
    prod = ncomch.producer_create(conn)
    assert prod.get_id() >= fake.FIRST_ID and prod.get_id() != cons.get_id()
    produced = _completions(prod.send)
    b.pe.connect_ctx(prod)
    prod.start()
    src = b.buf(b"payload")
    pt = prod.task_send_alloc_init(src, b"\x00imm", 555)
    assert (pt.imm, pt.consumer_id, pt.get_buf()) == (b"\x00imm", 555, src.ptr)
    pt.set_consumer_id(cons.get_id())
    pt.set_imm_data(b"xy")
    assert (pt.imm, pt.consumer_id) == (b"xy", cons.get_id())
    pt.owner = Owner("produce")
    pt.submit()
    assert b.pe.progress() and produced == ["produce"]
    assert b.last_produced() == (b"payload", b"xy", cons.get_id())
    plain = prod.task_send_alloc_init(src, b"", cons.get_id())
    assert plain.imm == b""
    bad = prod.task_send_alloc_init(src, b"", fake.BAD_CONSUMER_ID)
    bad.owner = Owner("bad")
    bad.submit()
    b.pe.progress()
    assert produced[-1] == ("error", "bad")
    with pytest.raises(DocaInvalidValue, match="not a 32-bit id"):
        prod.task_send_alloc_init(src, b"", 0)
    with pytest.raises(DocaInvalidValue, match="doca_comch_producer_task_send_alloc_init"):
        prod.task_send_alloc_init(src, bytes(fake.MAX_IMM_DATA_LEN + 1), 5)  # refused by the library
    with pytest.raises(DocaInvalidValue, match="not a native comch connection"):
        ncomch.producer_create(object())
    for task in (t, rt, pt, plain, bad):
        task.free()
    for ctx in (prod, cons, cli):
        ctx.destroy()
    assert not conn.is_connected()
    b.pe.destroy()
    assert b.fake.fake_comch_live() == 0


def test_borrowed_consumer_and_producer_need_their_connection(env30: BoundLib) -> None:
    b = Bench(env30, "comch")
    cli = ncomch.client_create(b.dev, "svc")
    b.pe.connect_ctx(cli)
    cli.start()
    b.pe.progress()
    conn = cli.get_connection()
    cons = ncomch.consumer_create(conn, b.mmap)
    prod = ncomch.producer_create(conn)
    for ctx in (cons, prod):
        b.pe.connect_ctx(ctx)
        ctx.start()
    b.pe.progress()
    live = b.fake.fake_comch_live()
    cview = ncomch.NativeComchConsumer.from_ptr(cast(int, cons.ptr), conn)
    pview = ncomch.NativeComchProducer.from_ptr(cast(int, prod.ptr), conn)
    assert cview.borrowed and pview.borrowed and cview.conn is conn
    assert (cview.get_id(), pview.get_id()) == (cons.get_id(), prod.get_id())
    assert cview.get_state() == pview.get_state() == cons.get_state()
    cview.destroy()
    pview.destroy()
    assert b.fake.fake_comch_live() == live  # a borrowed view never destroys the library object
    with pytest.raises(DocaInvalidValue, match="needs the comch connection"):
        ncomch.NativeComchConsumer.from_ptr(cast(int, cons.ptr))
    with pytest.raises(DocaInvalidValue, match="non-NULL"):
        ncomch.NativeComchProducer.from_ptr(0, conn)
    with pytest.raises(DocaInvalidValue, match="not a native comch connection"):
        ncomch.NativeComchProducer.from_ptr(cast(int, prod.ptr), object())
    for ctx in (prod, cons):
        ctx.stop()
        b.pe.progress()
        ctx.destroy()
    cli.stop()
    b.pe.progress()
    cli.destroy()
    b.pe.destroy()
    assert b.fake.fake_comch_live() == 0


def test_capabilities(env30: BoundLib) -> None:
    d = Bench(env30, "comch").devinfo
    assert ncomch.cap_server_is_supported(d) and not ncomch.cap_client_is_supported(d)  # NOT_SUPPORTED
    assert ncomch.cap_get_max_name_len(d) == fake.MAX_NAME_LEN
    assert ncomch.cap_get_max_msg_size(d) == fake.MAX_MSG_SIZE
    assert ncomch.cap_get_max_clients(d) == fake.MAX_CLIENTS
    assert ncomch.consumer_cap_get_max_buf_size(d) == 1 << 20
    assert ncomch.consumer_cap_get_max_imm_data_len(d) == fake.MAX_IMM_DATA_LEN
    assert ncomch.producer_cap_get_max_num_tasks(d) == 1024
    assert not ncomch.consumer_cap_is_supported(d)  # not exported by the fake
    with pytest.raises(DocaNotSupported, match=r"doca_comch_cap_get_max_send_tasks .*DOCA 3\.0\.0058.*incomplete"):
        ncomch.cap_get_max_send_tasks(d)


def test_26_runtime_through_libdoca_cc(env26: BoundLib) -> None:
    b = Bench(env26, "cc")
    srv = ncomch.server_create(b.dev, b.rep, "svc26")
    events: list[tuple[Any, ...]] = []
    srv.set_event_cb("connect", lambda conn, ok: events.append(("connect", conn, ok)))
    srv.set_event_cb("msg_recv", lambda msg, conn: events.append(("msg", bytes(msg), conn)))
    b.pe.connect_ctx(srv)
    srv.start()
    cptr = b.incoming(srv)  # the status callback registered through doca_cc_server_event_connection_register
    b.msg(cptr, b"over 2.6")
    assert b.pe.progress()
    [(_, conn, ok), msg] = events
    assert ok is True and conn.ptr == cptr and msg == ("msg", b"over 2.6", conn)
    with pytest.raises(DocaNotSupported, match=r"doca_comch_server_disconnect is not exported by the loaded "
                                               r"libdoca_cc \(DOCA 2\.6\.0058\); it is exported from DOCA 3\.0"):
        srv.disconnect(conn)
    # Consumer: no immediate data on 2.6.
    cons = ncomch.consumer_create(conn, b.mmap)
    assert cons.get_imm_data_len() == 0
    cons.set_imm_data_len(0)
    with pytest.raises(DocaNotSupported, match=r"imm_data_len=4 needs comch immediate data .*libdoca_cc "
                                               r"\(DOCA 2\.6\.0058\) has none"):
        cons.set_imm_data_len(4)
    received = _completions(cons.post_recv)
    b.pe.connect_ctx(cons)
    cons.start()
    rt = cons.task_post_recv_alloc_init(b.buf(size=32))
    rt.owner = Owner("recv26")
    rt.submit()
    b.pe.progress()
    assert received == ["recv26"] and (rt.producer_id, rt.imm) == (fake.RECV_PRODUCER_ID, b"")
    # Producer: the 2.6 alloc_init has no imm_data; a misaligned call would not reach consumer 9.
    prod = ncomch.producer_create(conn)
    produced = _completions(prod.send)
    b.pe.connect_ctx(prod)
    prod.start()
    src = b.buf(b"2.6 data")
    with pytest.raises(DocaNotSupported, match=r"a producer send with 3 bytes of immediate data needs comch "
                                               r"immediate data \(DOCA 3\.0\+.*libdoca_cc \(DOCA 2\.6\.0058\)"):
        prod.task_send_alloc_init(src, b"imm", 9)
    pt = prod.task_send_alloc_init(src, b"", 9)
    assert (pt.imm, pt.consumer_id) == (b"", 9)
    pt.set_imm_data(b"")
    with pytest.raises(DocaNotSupported, match=r"doca_comch_producer_task_send_set_imm_data needs"):
        pt.set_imm_data(b"x")
    pt.owner = Owner("produce26")
    pt.submit()
    b.pe.progress()
    assert produced == ["produce26"] and b.last_produced() == (b"2.6 data", b"", 9)
    d = b.devinfo
    assert ncomch.consumer_cap_get_max_imm_data_len(d) == 0 and ncomch.consumer_cap_get_max_buf_list_len(d) == 1
    assert ncomch.producer_cap_get_max_buf_list_len(d) == 1
    assert ncomch.cap_get_max_name_len(d) == fake.MAX_NAME_LEN
    for task in (rt, pt):
        task.free()
    for ctx in (prod, cons, srv):
        ctx.destroy()
    b.pe.destroy()
    assert b.fake.fake_comch_live() == 0


@pytest.mark.multiprocess
def test_importing_the_comch_modules_loads_no_library(comch30_dir: Path) -> None:
    code = (
        "import doca_py.native.comch, doca_py.native.capi.comch\n"
        "from doca_py.native import capi, loader\n"
        "assert {'comch', 'cc'} <= set(capi.tables())\n"
        "assert not loader._cache, loader._cache\n"
    )
    env = dict(os.environ, DOCA_PY_IMPL="emulated", **{loader.ENV_LIBDIR: str(comch30_dir)})
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("fixture", "lib", "declared"), [("comch30_dir", "comch", 99), ("cc26_dir", "cc", 70)])
def test_probe_compares_the_fakes_with_the_tables(fixture: str, lib: str, declared: int,
                                                  request: pytest.FixtureRequest,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from doca_py.native import probe

    directory: Path = request.getfixturevalue(fixture)
    assert probe.main(["--json", str(directory)]) == 0
    reports = {r["lib"]: r for r in json.loads(capsys.readouterr().out)["libraries"]}
    r = reports[lib]
    assert r["declared"] == declared
    assert r["undeclared"] == []  # every doca_* symbol of the fake is a real name of its table
    assert f"doca_{lib}_cap_get_max_send_tasks" in r["missing"]  # the fakes lack it
