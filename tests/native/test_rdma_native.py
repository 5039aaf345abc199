"""libdoca_rdma: declaration table and native object layer.

1. The table against the inventory in ``doca-c-api.md`` §2.9 (names, order, arity,
   types, 2.6 markers), the §6.2 ABI changes (2.6 variants) and the §6.4 SRQ functions.
2. Binding: absent symbols are ``DocaNotSupported`` stubs naming versions; a 2.6
   runtime binds the 2.6 signatures (no connection argument), a 3.x one the 3.x ones.
3. The object layer on a fake libdoca_rdma compiled at test time
   (``tests/native/fakelib/rdma.c``) over a fake libdoca_common, for both ABIs.
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
from doca_py.errors import DocaBadState, DocaConnectionAborted, DocaFull, DocaInvalidValue, DocaNotSupported
from doca_py.native import capi, loader
from doca_py.native import dev as ndev
from doca_py.native import pe as npe
from doca_py.native import rdma as nrdma
from doca_py.native.buf import NativeBuf, NativeBufInventory
from doca_py.native.capi import BoundLib, MissingFunction, TaskCompletionCb
from doca_py.native.capi.rdma import (
    CONNECTION_MARKER,
    RDMA,
    RDMA_SRQ_26,
    DocaRdmaGid,
    RdmaConnectionEventCb,
    RdmaConnectionRequestCb,
)

from . import capi_inventory
from .conftest import UseLibdir
from .fakelib import rdma as fake
from .fakelib.plugin import FakeLibs
from .owners import NO_CTX, Owner

C = ctypes
P = C.c_void_p
PP = C.POINTER(C.c_void_p)
DATA = C.c_uint64


# -- 1. the table against the inventory -------------------------------------------------------


@dataclass
class Row:
    name: str
    returns: str
    params: list[str]
    v26: str


def _rows() -> list[Row]:
    return [Row(cells[1].strip("`"), cells[2].strip("`"), capi_inventory.params(cells[3]), cells[5])
            for _, cells in capi_inventory.function_rows(capi_inventory.lines(), ("2.9",))]


def test_every_function_is_declared_in_header_order_with_its_arity() -> None:
    rows = _rows()
    assert len(rows) == 179
    decls = {d.name: d for d in RDMA}
    assert [d.name for d in RDMA] == [r.name for r in rows]
    problems = [f"{r.name}: {len(decls[r.name].argtypes)} argtypes, doc has {len(r.params)}"
                for r in rows if len(decls[r.name].argtypes) != len(r.params)]
    assert problems == []


def test_registered_table() -> None:
    assert capi.tables()["rdma"] == RDMA + RDMA_SRQ_26
    names = [d.name for d in RDMA + RDMA_SRQ_26]
    assert len(names) == len(set(names)) == 179 + 13


_OUT: dict[str, Any] = {
    "uint8_t*": C.POINTER(C.c_uint8), "uint16_t*": C.POINTER(C.c_uint16), "uint32_t*": C.POINTER(C.c_uint32),
    "size_t*": C.POINTER(C.c_size_t), "doca_data*": C.POINTER(C.c_uint64), "const char**": C.POINTER(C.c_char_p),
    "doca_dpa_dev_rdma_t*": C.POINTER(C.c_uint64), "const void**": PP,
}
_IN: dict[str, Any] = {
    "doca_data⟨val⟩": DATA, "size_t": C.c_size_t, "uint8_t": C.c_uint8, "uint16_t": C.c_uint16,
    "uint32_t": C.c_uint32, "uint64_t": C.c_uint64, "doca_be32_t": C.c_uint32, "const char*": C.c_char_p,
    "void*": P, "const void*": P, "rdma_cm_id*": P, "↔doca_rdma_gid*": C.POINTER(DocaRdmaGid),
    "doca_rdma_connection_request_cb_t": RdmaConnectionRequestCb,
    "doca_rdma_connection_established_cb_t": RdmaConnectionEventCb,
    "doca_rdma_connection_failure_cb_t": RdmaConnectionEventCb,
    "doca_rdma_connection_disconnection_cb_t": RdmaConnectionEventCb,
}


def _expected_param(text: str) -> Any:
    if text.startswith("→"):
        t = text[1:]
        if t.startswith("enum ") and t.endswith("*"):
            return C.POINTER(C.c_int)
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
    simple: dict[str, Any] = {"doca_error_t": C.c_int, "void": None, "uint32_t": C.c_uint32,
                              "uint64_t": C.c_uint64, "doca_be32_t": C.c_uint32, "enum doca_rdma_opcode": C.c_int}
    if text in simple:
        return simple[text]
    assert text.endswith("*") and "doca_" in text, text
    return P


def test_types_follow_the_mapping_rules() -> None:
    decls = {d.name: d for d in RDMA}
    problems = []
    for row in _rows():
        decl = decls[row.name]
        if decl.restype is not _expected_restype(row.returns):
            problems.append(f"{row.name}: restype {decl.restype} for {row.returns}")
        for i, (text, argtype) in enumerate(zip(row.params, decl.argtypes, strict=True)):
            if argtype is not _expected_param(text):
                problems.append(f"{row.name} arg {i}: {argtype} for {text}")
    assert problems == []


def _abi_changes() -> dict[str, int]:
    """§6.2 rows of libdoca_rdma: name → number of parameters of the 2.6 signature."""
    out = {}
    for line in capi_inventory.section(capi_inventory.lines(), "6.2"):
        m = re.match(r"^\| \d+ \| `(doca_rdma_\w+)` \| `\1` \| doca_error_t \(([^)]*)\) \|", line)
        if m:
            out[m.group(1)] = len([p for p in m.group(2).split(",") if p.strip()])
    assert len(out) == 13, "§6.2 format changed; update this parser"
    return out


def test_version_markers_and_26_variants() -> None:
    changed = _abi_changes()
    decls = {d.name: d for d in RDMA}
    for row in _rows():
        decl = decls[row.name]
        assert (decl.since == (3, 0)) == (row.v26 == "—"), row.name
        assert decl.until is None, row.name
        assert (row.v26 == "Δ") == (row.name in changed), row.name
        if row.v26 != "Δ":
            assert not decl.variants, row.name
            continue
        (var,) = decl.variants
        assert var.before == (3, 0) and var.marker == CONNECTION_MARKER, row.name
        assert var.restype is decl.restype and len(var.argtypes) == changed[row.name], row.name
        if row.name.endswith("_allocate_init"):
            # 3.0 inserted the doca_rdma_connection * as the second argument.
            assert decl.argtypes[1] is P and var.argtypes == decl.argtypes[:1] + decl.argtypes[2:], row.name
    assert decls["doca_rdma_export"].variants[0].argtypes == decls["doca_rdma_export"].argtypes[:3]
    assert decls["doca_rdma_connect"].variants[0].argtypes == decls["doca_rdma_connect"].argtypes[:3]
    assert decls["doca_rdma_get_dpa_handle"].variants[0].argtypes == (P, PP)
    assert CONNECTION_MARKER in decls and decls[CONNECTION_MARKER].since == (3, 0)


def test_the_26_srq_functions() -> None:
    (line,) = [ln for ln in capi_inventory.section(capi_inventory.lines(), "6.4") if ln.startswith("| RDMA shared receive queue")]
    m = re.search(r"`(doca_rdma_create_with_srq)`, `doca_rdma_srq_\{([^}]*)\}`", line)
    assert m, "§6.4 format changed; update this parser"
    first, group = m.groups()
    expected = {first} | {f"doca_rdma_srq_{n.strip()}" for n in group.split(",")}
    assert len(expected) == 13 and {d.name for d in RDMA_SRQ_26} == expected
    for d in RDMA_SRQ_26:
        assert d.until == (2, 6) and d.since is None and not d.variants, d.name
        assert "up to DOCA 2.6 (the shared receive queue API was removed in 3.0)" in d.availability()


# -- 2. binding -----------------------------------------------------------------------------


def test_missing_symbols_become_stubs_naming_versions(lib30: BoundLib) -> None:
    # The fake common exports no rdma function: every one is a falsy stub.
    lib = capi.bind(lib30.cdll, RDMA + RDMA_SRQ_26, (3, 0, 58), libname="rdma")
    assert lib.missing == {d.name for d in RDMA + RDMA_SRQ_26}
    assert isinstance(lib.doca_rdma_create, MissingFunction) and not lib.doca_rdma_create
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_create is not exported by the loaded libdoca_rdma "
                                               r"\(DOCA 3\.0\.0058\); DOCA 2\.6 to 3\.x all export it"):
        lib.doca_rdma_create(None, None)
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_connect_to_addr .*\(DOCA 3\.0\.0058\); it is exported "
                                               r"from DOCA 3\.0 \(added after 2\.6 with the connection API\)"):
        lib.doca_rdma_connect_to_addr(None, None, 0)
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_srq_create .*\(DOCA 3\.0\.0058\); it is exported up to "
                                               r"DOCA 2\.6 \(the shared receive queue API was removed in 3\.0\)"):
        lib.doca_rdma_srq_create(None, None)


@pytest.fixture
def rdma30_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 3.0-like common and a libdoca_rdma with connection objects."""
    return fakelibs.dir("rdma30")


@pytest.fixture
def rdma26_dir(fakelibs: FakeLibs) -> Path:
    """A DOCA 2.6-like common and a libdoca_rdma with the 2.6 ABI."""
    return fakelibs.dir("rdma26")


def _use(directory: Path, use_libdir: UseLibdir) -> BoundLib:
    use_libdir(directory)
    common = capi.load_common()
    fake.attach(loader.load("rdma"), common.cdll)
    return common


@pytest.fixture
def env30(rdma30_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(rdma30_dir, use_libdir)


@pytest.fixture
def env26(rdma26_dir: Path, use_libdir: UseLibdir) -> BoundLib:
    return _use(rdma26_dir, use_libdir)


def _argtypes(fn: Any) -> tuple[Any, ...]:
    return tuple(fn.argtypes)


def test_30_runtime_binds_the_connection_signatures(env30: BoundLib) -> None:
    lib = capi.load("rdma")
    assert lib.version == (3, 0, 58) and lib.has(CONNECTION_MARKER)
    assert _argtypes(lib.doca_rdma_task_send_allocate_init) == (P, P, P, DATA, PP)
    assert _argtypes(lib.doca_rdma_task_send_imm_allocate_init) == (P, P, P, C.c_uint32, DATA, PP)
    assert _argtypes(lib.doca_rdma_export) == (P, PP, C.POINTER(C.c_size_t), PP)
    assert _argtypes(lib.doca_rdma_connect) == (P, P, C.c_size_t, P)
    assert _argtypes(lib.doca_rdma_task_receive_allocate_init) == (P, P, DATA, PP)
    assert lib.missing >= {d.name for d in RDMA_SRQ_26}
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_srq_create is not exported by the loaded libdoca_rdma "
                                               r"\(DOCA 3\.0\.0058\); it is exported up to DOCA 2\.6"):
        lib.doca_rdma_srq_create(None, None)


def test_26_runtime_binds_the_26_signatures(env26: BoundLib) -> None:
    lib = capi.load("rdma")
    assert lib.version == (2, 6, 58) and not lib.has(CONNECTION_MARKER)
    assert _argtypes(lib.doca_rdma_task_send_allocate_init) == (P, P, DATA, PP)
    assert _argtypes(lib.doca_rdma_task_send_imm_allocate_init) == (P, P, C.c_uint32, DATA, PP)
    assert _argtypes(lib.doca_rdma_export) == (P, PP, C.POINTER(C.c_size_t))
    assert _argtypes(lib.doca_rdma_connect) == (P, P, C.c_size_t)
    assert lib.has("doca_rdma_srq_create")
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_start_listen_to_port is not exported by the loaded "
                                               r"libdoca_rdma \(DOCA 2\.6\.0058\); it is exported from DOCA 3\.0"):
        lib.doca_rdma_start_listen_to_port(None, 1)


def test_the_companion_symbol_decides_not_the_version(env26: BoundLib, rdma30_dir: Path) -> None:
    """§6.1: the ABI change may predate 3.0, so the marker symbol picks the signature."""
    old = capi.bind(loader.load("rdma"), RDMA, (3, 0, 58), libname="rdma")  # 2.6 library, 3.0 version string
    assert _argtypes(old.doca_rdma_task_send_allocate_init) == (P, P, DATA, PP)
    new = capi.bind(C.CDLL(str(rdma30_dir / "libdoca_rdma.so")), RDMA, (2, 8, 81), libname="rdma")
    assert _argtypes(new.doca_rdma_task_send_allocate_init) == (P, P, P, DATA, PP)


# -- 3. the object layer on the fakes ------------------------------------------------------------


class Bench:
    """A device, a PE, buffers over Python memory and the fake's helper functions."""

    def __init__(self, common: BoundLib) -> None:
        self.common = common
        self.infos = ndev.devinfo_create_list()
        self.devinfo = cast(ndev.NativeDevInfo, self.infos[0])
        self.dev = ndev.NativeDev(self.devinfo.ptr)  # the fake only needs a non-NULL dev
        self.pe = npe.pe_create()
        self.inv = NativeBufInventory(1)  # the fake's get_by_args only needs a non-NULL inventory
        self.fake = capi.bind(loader.load("rdma"), fake.FAKE_RDMA_DECLS, common.version, libname="rdma")
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

    def last_sent(self) -> bytes:
        out = C.create_string_buffer(64)
        n = self.fake.fake_rdma_last_sent(out)
        return out.raw[:n]

    def peer(self, rdma: nrdma.NativeRdma) -> bytes:
        out = C.create_string_buffer(64)
        n = self.fake.fake_rdma_peer(rdma.ptr, out)
        return out.raw[:n]


def _completions(pool: Any, num: int = 8) -> list[object]:
    done: list[object] = []
    pool.set_conf(lambda owner, ud, cud: done.append(owner), lambda owner, ud, cud: done.append(("error", owner)),
                  num, NO_CTX)
    return done


def test_settings(env30: BoundLib) -> None:
    b = Bench(env30)
    r = nrdma.rdma_create(b.dev)
    assert r.conn_api
    r.set_send_queue_size(100)
    assert r.get_send_queue_size() == 128
    r.set_permissions(0x7)
    r.set_grh_enabled(False)
    r.set_mtu(4)
    r.set_max_num_connections(3)
    r.set_rnr_retry_count(5)
    r.set_receive_dst_buf_list_len(2)
    assert [r.get_permissions(), r.get_grh_enabled(), r.get_mtu(), r.get_max_num_connections(),
            r.get_rnr_retry_count(), r.get_receive_dst_buf_list_len()] == [0x7, False, 4, 3, 5, 2]
    with pytest.raises(DocaInvalidValue, match="does not fit the 16-bit C parameter"):
        r.set_max_num_connections(1 << 16)
    with pytest.raises(DocaInvalidValue, match="doca_rdma_set_rnr_retry_count"):
        r.set_rnr_retry_count(8)  # refused by the library
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_set_sl .*incomplete"):
        r.set_sl(1)  # the fake lacks it
    r.destroy()
    assert b.fake.fake_rdma_live() == 0


def test_export_connect_and_send_round_trip(env30: BoundLib) -> None:
    b = Bench(env30)
    r = nrdma.rdma_create(b.dev)
    r.set_max_num_connections(2)
    events: list[tuple[int, nrdma.NativeRdmaConnection]] = []
    r.set_connection_state_cb(lambda kind, conn: events.append((kind, conn)))
    sent, received = _completions(r.send), _completions(r.receive)
    _completions(r.send_imm)
    b.pe.connect_ctx(r)
    assert r.start() == 2  # the fake common runs at once
    blob0, c0 = r.export()
    blob1, c1 = r.export()
    # The C blob buffer was overwritten by the second export: the first was copied.
    assert (blob0, blob1) == (b"FAKE-RDMA-CONN-0", b"FAKE-RDMA-CONN-1")
    assert isinstance(blob0, bytes) and c0.ptr and c1.ptr and c0.ptr != c1.ptr
    assert (c0.get_id(), c1.get_id()) == (0, 1)
    assert c0.get_addr() is None  # not an RDMA-CM connection
    with pytest.raises(DocaFull, match="doca_rdma_export"):
        r.export()
    peer = b"FAKE-peer\x00blob with a NUL"
    r.connect(peer, c0)
    assert b.peer(r) == peer
    # The established callback is called from C inside doca_pe_progress; Python runs after it.
    assert events == []
    assert b.pe.progress()
    assert events == [(nrdma.EV_ESTABLISHED, c0)]
    with pytest.raises(DocaConnectionAborted, match="doca_rdma_connect"):
        r.connect(b"not a blob", c1)
    with pytest.raises(DocaBadState, match="doca_rdma_connect"):
        r.connect(peer, c0)  # already connected
    # A send on the connection, through the 3.x allocate_init.
    src = b.buf(b"hello rdma")
    t = r.task_send_allocate_init(c0, src)
    assert isinstance(t, nrdma.NativeRdmaTask) and t.kind == "send" and t.ptr != t.task_ptr
    assert env30.doca_task_get_user_data(t.task_ptr) == t.key
    assert t.get_src_buf() == src.ptr and t.get_rdma_connection() is c0
    t.set_rdma_connection(c1)
    assert t.get_rdma_connection() is c1
    t.set_rdma_connection(c0)
    t.owner = Owner("the public send")
    t.submit()
    assert sent == [] and b.pe.progress()
    assert sent == ["the public send"] and not t.inflight
    assert b.last_sent() == b"hello rdma"
    imm = r.task_send_imm_allocate_init(c0, src, 0xCAFEBABE)
    assert imm.imm == 0xCAFEBABE
    imm.imm = 7
    assert imm.imm == 7
    with pytest.raises(DocaInvalidValue, match="32 bits"):
        imm.imm = 1 << 32
    # A receive and its result getters.
    dst = b.buf(b">", size=32)
    rt = r.task_receive_allocate_init(dst)
    assert rt.get_dst_buf() == dst.ptr
    rt.owner = Owner("the public receive")
    rt.submit()
    assert b.pe.progress() and received == ["the public receive"]
    assert (rt.opcode, rt.result_len, rt.imm) == (1, len(fake.RECV_DATA), fake.RECV_IMM)
    assert rt.result_conn is c0
    assert C.string_at(dst.get_data(), dst.get_data_len()) == b">" + fake.RECV_DATA
    # Task types the fake lacks, and connections of another ctx.
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_task_write_set_conf .*DOCA 3\.0\.0058"):
        r.write.set_conf(print, print, 4, NO_CTX)
    other = nrdma.rdma_create(b.dev)
    with pytest.raises(DocaInvalidValue, match="does not belong to this rdma ctx"):
        other.task_send_allocate_init(c0, src)
    with pytest.raises(DocaInvalidValue, match="does not belong"):
        other.connect(peer, c1)
    for task in (t, imm, rt):
        task.free()
    other.destroy()
    r.destroy()
    b.pe.destroy()
    assert b.fake.fake_rdma_live() == 0


def test_cm_flow_and_connection_callbacks(env30: BoundLib) -> None:
    b = Bench(env30)
    r = nrdma.rdma_create(b.dev)
    r.set_max_num_connections(8)
    events: list[tuple[int, nrdma.NativeRdmaConnection]] = []
    r.set_connection_state_cb(lambda kind, conn: events.append((kind, conn)))
    b.pe.connect_ctx(r)
    r.start()
    assert r.start_listen_to_port(4791) == 4791 and b.fake.fake_rdma_listen_port(r.ptr) == 4791
    # Server: a request from C reaches Python after progress; accept it there.
    assert b.fake.fake_rdma_incoming_request(r.ptr) == 0
    assert events == [] and b.pe.progress()
    [(kind, srv)] = events
    assert kind == nrdma.EV_REQUEST and srv.ptr and srv.get_id() == 0
    srv.owner = "public connection"
    srv.accept(b"hi")
    assert b.pe.progress() and events[-1] == (nrdma.EV_ESTABLISHED, srv) and srv.owner == "public connection"
    with pytest.raises(DocaBadState, match="doca_rdma_connection_accept"):
        srv.accept(None)
    with pytest.raises(DocaInvalidValue, match="255 bytes"):
        srv.accept(bytes(256))
    srv.disconnect()
    assert b.pe.progress() and events[-1] == (nrdma.EV_DISCONNECTION, srv)
    b.fake.fake_rdma_incoming_request(r.ptr)
    b.pe.progress()
    events[-1][1].reject()
    # Client: the connection exists before DOCA names its pointer; the established
    # callback brings it (matched through the connection user data).
    cli = r.connect_to_addr(0, "192.0.2.7", 7471)
    assert cli.ptr is None
    with pytest.raises(DocaBadState, match="not established yet"):
        cli.get_id()
    assert b.pe.progress() and events[-1] == (nrdma.EV_ESTABLISHED, cli)
    assert cli.ptr and cli.get_addr() == (0, "192.0.2.7", 7471)
    bad = r.connect_to_addr(1, "2001:db8::1", fake.FAIL_PORT)
    assert b.pe.progress() and events[-1] == (nrdma.EV_FAILURE, bad) and bad.ptr
    assert bad.get_addr() == (1, "2001:db8::1", fake.FAIL_PORT)
    assert b.fake.fake_rdma_live_addrs() == 2
    # A failing Python callback surfaces from progress; later events wait for the next one.
    before = len(events)

    def boom(kind: int, conn: nrdma.NativeRdmaConnection) -> None:
        events.append((kind, conn))
        if len(events) == before + 1:
            raise RuntimeError("callback failed")

    r.set_connection_state_cb(boom)
    b.fake.fake_rdma_incoming_request(r.ptr)
    b.fake.fake_rdma_incoming_request(r.ptr)
    with pytest.raises(RuntimeError, match="callback failed"):
        b.pe.progress()
    assert len(events) == before + 1 and len(r.pending) == 1
    b.pe.progress()
    assert len(events) == before + 2 and events[-1][0] == nrdma.EV_REQUEST and events[-1][1] is not events[-2][1]
    r.stop_listen_to_port(4791)
    with pytest.raises(errors.DocaNotFound, match="doca_rdma_stop_listen_to_port"):
        r.stop_listen_to_port(4791)
    r.destroy()
    assert b.fake.fake_rdma_live_addrs() == 0 and b.fake.fake_rdma_live() == 0
    b.pe.destroy()


def test_capabilities(env30: BoundLib) -> None:
    b = Bench(env30)
    d = b.devinfo
    assert nrdma.cap_get_max_recv_queue_size(d) == fake.MAX_QUEUE_SIZE
    assert nrdma.cap_get_max_send_queue_size(d) == fake.MAX_QUEUE_SIZE // 2
    assert nrdma.cap_get_max_send_buf_list_len(d) == fake.MAX_BUF_LIST_LEN
    assert nrdma.cap_get_max_message_size(d) == fake.MAX_MESSAGE_SIZE
    assert nrdma.cap_get_gid_table_size(d) == fake.GID_TABLE_SIZE
    assert nrdma.cap_get_gid(d, 1, 2) == [b"\xfe" + bytes(14) + b"\x01", b"\xfe" + bytes(14) + b"\x02"]
    assert nrdma.cap_get_gid(d, 0, 0) == []
    with pytest.raises(DocaInvalidValue, match="doca_rdma_cap_get_gid"):
        nrdma.cap_get_gid(d, 3, 2)
    assert nrdma.cap_transport_type_is_supported(d, 0) and not nrdma.cap_transport_type_is_supported(d, 1)
    assert nrdma.cap_task_receive_get_max_dst_buf_list_len(d, 0) == fake.MAX_BUF_LIST_LEN
    assert nrdma.cap_task_is_supported(d, "send") and nrdma.cap_task_is_supported(d, "receive")
    assert not nrdma.cap_task_is_supported(d, "read")  # NOT_SUPPORTED
    assert not nrdma.cap_task_is_supported(d, "write")  # not exported by the fake
    with pytest.raises(DocaInvalidValue, match="unknown rdma task type"):
        nrdma.cap_task_is_supported(d, "teleport")


def test_26_runtime_uses_the_implicit_connection(env26: BoundLib) -> None:
    b = Bench(env26)
    r = nrdma.rdma_create(b.dev)
    assert not r.conn_api
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_set_connection_state_callbacks is not exported .*"
                                               r"\(DOCA 2\.6\.0058\); it is exported from DOCA 3\.0"):
        r.set_connection_state_cb(print)
    assert r.get_max_num_connections() == 1
    r.set_max_num_connections(1)
    with pytest.raises(DocaNotSupported, match=r"max_num_connections=2 needs .*DOCA 3\.0\+.*DOCA 2\.6\.0058"):
        r.set_max_num_connections(2)
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_set_rnr_retry_count .*DOCA 2\.6\.0058"):
        r.set_rnr_retry_count(3)
    sent, received = _completions(r.send), _completions(r.receive)
    _completions(r.send_imm)
    b.pe.connect_ctx(r)
    r.start()
    blob, conn = r.export()
    assert blob == b"FAKE-RDMA-26" and conn.implicit and conn.ptr is None
    assert conn.get_id() == 0 and conn.get_addr() is None
    with pytest.raises(DocaNotSupported, match=r"second doca_rdma_export .*DOCA 2\.6\.0058 has one implicit"):
        r.export()
    r.connect(b"FAKE-peer-26", conn)
    assert b.peer(r) == b"FAKE-peer-26"
    # The 2.6 allocate_init has no connection argument: a misaligned call would not send "over 2.6".
    src = b.buf(b"over 2.6")
    t = r.task_send_allocate_init(conn, src)
    assert t.get_rdma_connection() is conn and t.get_src_buf() == src.ptr
    t.set_rdma_connection(conn)
    t.owner = Owner("send26")
    t.submit()
    assert b.pe.progress() and sent == ["send26"] and b.last_sent() == b"over 2.6"
    imm = r.task_send_imm_allocate_init(conn, src, 0xCAFEBABE)
    assert imm.imm == 0xCAFEBABE
    rt = r.task_receive_allocate_init(b.buf(size=16))
    rt.owner = Owner("recv26")
    rt.submit()
    assert b.pe.progress() and received == ["recv26"] and rt.result_conn is conn
    # What 2.6 lacks.
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_start_listen_to_port .*DOCA 2\.6\.0058"):
        r.start_listen_to_port(4791)
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_addr_create .*DOCA 2\.6\.0058"):
        r.connect_to_addr(0, "192.0.2.7", 7471)
    with pytest.raises(DocaNotSupported, match=r"doca_rdma_connection_accept needs .*DOCA 2\.6\.0058"):
        conn.accept(None)
    other = nrdma.rdma_create(b.dev)
    with pytest.raises(DocaInvalidValue, match="does not belong"):
        r.task_send_allocate_init(nrdma.NativeRdmaConnection(other, None, implicit=True), src)
    for task in (t, imm, rt):
        task.free()
    other.destroy()
    r.destroy()
    b.pe.destroy()


@pytest.mark.multiprocess
def test_importing_the_rdma_modules_loads_no_library(rdma30_dir: Path) -> None:
    code = (
        "import doca_py.native.rdma, doca_py.native.capi.rdma\n"
        "from doca_py.native import capi, loader\n"
        "assert 'rdma' in capi.tables()\n"
        "assert not loader._cache, loader._cache\n"
    )
    env = dict(os.environ, DOCA_PY_IMPL="emulated", **{loader.ENV_LIBDIR: str(rdma30_dir)})
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_probe_compares_the_fake_with_the_table(rdma30_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from doca_py.native import probe

    assert probe.main(["--json", str(rdma30_dir)]) == 0
    reports = {r["lib"]: r for r in json.loads(capsys.readouterr().out)["libraries"]}
    assert reports["rdma"]["declared"] == len(RDMA) + len(RDMA_SRQ_26)
    assert reports["rdma"]["undeclared"] == []
    assert "doca_rdma_task_write_allocate_init" in reports["rdma"]["missing"]


