"""libdoca_rdma: the rdma samples across the two paths, a DOCA 2.6 build, and the C-only semantics.

* A mixed pair: one sample process on the native backend over libdoca, its peer on the emulated backend,
  both directions; the peer's output shows the bytes arrived.
* DOCA 2.6 (no connection objects: one implicit connection per ctx) through ``examples/rdma_rounds.py``.
* In this process, over libdoca: what only C reaches (connection user data and ids, address objects,
  the typed task pointers, the bridge's memory keys, 2.6's repeated export).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.errors import ErrorCode
from doca_py.native.capi import load_common
from doca_py.native.capi.rdma import RdmaConnectionEventCb, RdmaConnectionRequestCb, load_rdma
from doca_py.types import CtxState

from ..conformance.backends import over_libdoca
from ..rdma.helpers import Side, close_side, connect_pair, make_side, rig, run, wait_for
from .env import native_env

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0

_byref = ctypes.byref


def _emulated_env() -> dict[str, str]:
    env = dict(os.environ, DOCA_PY_IMPL="emulated")
    env.pop("DOCA_PY_LIBDIR", None)
    return env


def _start(script: str, env: dict[str, str], *args: str, stdin: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, f"examples/{script}", *args], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def _finish(p: subprocess.Popen[str], stdin: str | None = None) -> str:
    try:
        out, _ = p.communicate(stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        raise AssertionError(f"{p.args} did not exit within {TIMEOUT} s:\n{out}") from None
    assert p.returncode == 0, f"{p.args} exited with {p.returncode}:\n{out}"
    assert "Traceback" not in out, out
    return out


@pytest.fixture
def paths(tmp_path: Path) -> tuple[list[str], list[str]]:
    """(first side's, second side's) descriptor flags: each side's local file is the other's remote one."""
    a, b = str(tmp_path / "a.desc"), str(tmp_path / "b.desc")
    return ["-ld", a, "-re", b], ["-ld", b, "-re", a]


@pytest.mark.parametrize("native_side", ["receiver", "sender"])
def test_send_receive_between_libdoca_and_the_emulated_backend(native_side: str,
                                                               paths: tuple[list[str], list[str]]) -> None:
    native, emulated = native_env(), _emulated_env()
    recv_env, send_env = (native, emulated) if native_side == "receiver" else (emulated, native)
    text = f"sent to a {'native' if native_side == 'receiver' else 'emulated'} receiver"
    receiver = _start("rdma_receive.py", recv_env, *paths[0])
    sender = _start("rdma_send.py", send_env, *paths[1], "-s", text)
    try:
        sent = _finish(sender)
        got = _finish(receiver)
    finally:
        for p in (sender, receiver):
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert "RDMA send task was done successfully" in sent, sent
    assert f'Got from sender: "{text}"' in got, got


@pytest.mark.parametrize("native_side", ["responder", "requester"])
def test_write_between_libdoca_and_the_emulated_backend(native_side: str, tmp_path: Path,
                                                        paths: tuple[list[str], list[str]]) -> None:
    native, emulated = native_env(), _emulated_env()
    resp_env, req_env = (native, emulated) if native_side == "responder" else (emulated, native)
    mm = ["-m", str(tmp_path / "mmap.desc")]
    text = f"written into {'native' if native_side == 'responder' else 'emulated'} memory"
    responder = _start("rdma_write_responder.py", resp_env, *paths[0], *mm, stdin=True)
    requester = _start("rdma_write_requester.py", req_env, *paths[1], *mm, "-w", text)
    try:
        wrote = _finish(requester)
        held = _finish(responder, "\n")  # "press enter" once the requester has written
    finally:
        for p in (requester, responder):
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert f'Written to responder "{text}"' in wrote, wrote
    assert f'Requester has written: "{text}"' in held, held


def test_a_doca_2_6_build_runs_a_two_sided_rdma_example() -> None:
    # DOCA 2.6: export/connect without connection objects, tasks without a connection argument; the
    # example's host and DPU sides are processes of their own, on the same native path.
    proc = subprocess.run([sys.executable, "examples/rdma_rounds.py", "--rounds", "3"], cwd=ROOT,
                          env=native_env("2.6"), capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "DOCA 2.6" in out and "every round passed" in out, out


# -- in this process, over libdoca ------------------------------------------------------------------

@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with over_libdoca(monkeypatch):
        yield


@pytest.fixture
def doca26(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from doca_py.emulated import version

    monkeypatch.setattr(version, "VERSION", (2, 6))
    with over_libdoca(monkeypatch):
        yield


def _ptr(x: object) -> int:
    return int(getattr(getattr(x, "_h"), "ptr"))


def _pair() -> Iterator[tuple[d.Dev, d.Pe, d.BufInventory, Side, Side]]:
    with rig() as (dev, pe, inv):
        a, b = make_side(dev, pe), make_side(dev, pe)
        connect_pair(pe, a, b)
        yield dev, pe, inv, a, b
        close_side(a)
        close_side(b)


def test_connection_user_data_id_and_address_are_kept_by_the_library(native: None) -> None:
    l = load_rdma()
    for _, _, _, a, b in _pair():
        assert a.conn is not None and b.conn is not None
        conn = _ptr(a.conn)
        assert l.doca_rdma_connection_set_user_data(conn, 0xD0CA) == 0
        ud, cid, addr = ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_void_p(1)
        assert l.doca_rdma_connection_get_user_data(conn, _byref(ud)) == 0 and ud.value == 0xD0CA
        assert l.doca_rdma_connection_get_id(conn, _byref(cid)) == 0 and cid.value == a.conn.get_id()
        assert l.doca_rdma_connection_get_addr(conn, _byref(addr)) == 0 and addr.value is None  # export/connect
        assert l.doca_rdma_connection_get_user_data(_ptr(a.rdma), _byref(ud)) == ErrorCode.INVALID_VALUE


def test_address_objects_are_checked_and_give_their_parameters_back(native: None) -> None:
    l = load_rdma()
    addr = ctypes.c_void_p()
    assert l.doca_rdma_addr_create(0, b"127.0.0.1", 4791, _byref(addr)) == 0
    t, text, port = ctypes.c_int(), ctypes.c_char_p(), ctypes.c_uint16()
    assert l.doca_rdma_addr_get_params(addr.value, _byref(t), _byref(text), _byref(port)) == 0
    assert (t.value, text.value, port.value) == (0, b"127.0.0.1", 4791)
    assert l.doca_rdma_addr_destroy(addr.value) == 0
    assert l.doca_rdma_addr_destroy(addr.value) == ErrorCode.INVALID_VALUE  # destroyed already
    bad = ctypes.c_void_p()
    assert l.doca_rdma_addr_create(0, b"::1", 1, _byref(bad)) == ErrorCode.INVALID_VALUE  # not IPv4
    assert l.doca_rdma_addr_create(7, b"127.0.0.1", 1, _byref(bad)) == ErrorCode.INVALID_VALUE  # no such type
    assert l.doca_rdma_addr_create(1, None, 1, _byref(bad)) == ErrorCode.INVALID_VALUE
    assert bad.value is None


def test_connection_callbacks_need_all_but_the_request_one(native: None) -> None:
    l = load_rdma()
    with rig() as (dev, pe, _):
        r = d.Rdma(dev)
        cb = RdmaConnectionEventCb(lambda c, u, cu: None)  # never called: the call is refused
        rc = l.doca_rdma_set_connection_state_callbacks(_ptr(r), RdmaConnectionRequestCb(), RdmaConnectionEventCb(),
                                                        cb, cb)  # CFUNCTYPE(): NULL
        assert rc == ErrorCode.INVALID_VALUE
        r.close()


def test_typed_task_pointers_and_the_bytes_a_read_got(native: None) -> None:
    l = load_rdma()
    for dev, pe, inv, a, b in _pair():
        assert a.conn is not None
        b.mem[:5] = b"hello"
        rm = d.Mmap.create_from_export(b.mm.export_rdma(dev), dev)
        base = rm.get_memrange()[0]
        t = a.rdma.task_read_allocate_init(a.conn, inv.buf_get_by_data(rm, base, 5),
                                           inv.buf_get_by_addr(a.mm, a.base, 64))
        assert run(pe, a, t) == ["ok"] and bytes(a.mem[:5]) == b"hello"
        assert l.doca_rdma_task_read_get_result_len(_ptr(t)) == 5
        assert l.doca_rdma_task_read_as_task(_ptr(t)) == _ptr(t)
        # A read task is no write task, though the emulator builds both on one class of remote access.
        assert l.doca_rdma_task_write_as_task(_ptr(t)) is None
        t.free()
        rm.close()


def test_the_bridge_has_no_memory_keys(native: None) -> None:
    common = load_common()
    with rig() as (dev, pe, inv):
        mm = d.Mmap()
        mm.allocate(4096)
        mm.add_dev(dev)
        mm.start()
        buf = inv.buf_get_by_addr(mm, mm.get_memrange()[0], 64)
        mkey = ctypes.c_uint32()
        rc = common.doca_rdma_bridge_get_buf_mkey(_ptr(buf), _ptr(dev), _byref(mkey))
        assert rc == ErrorCode.NOT_SUPPORTED
        assert common.doca_rdma_bridge_get_buf_mkey(_ptr(buf), _ptr(dev), None) == ErrorCode.INVALID_VALUE
        assert common.doca_rdma_bridge_get_buf_mkey(None, _ptr(dev), _byref(mkey)) == ErrorCode.INVALID_VALUE
        buf.dec_refcount()
        mm.close()


def test_doca_2_6_exports_its_one_connection_again(doca26: None) -> None:
    l = load_rdma()
    with rig() as (dev, pe, inv):
        a, b = make_side(dev, pe, conn_cbs=False), make_side(dev, pe, conn_cbs=False)
        for s in (a, b):
            s.rdma.start()
        assert a.rdma.get_state() == CtxState.STARTING  # 2.6: until connected
        blob, n = ctypes.c_void_p(), ctypes.c_size_t()
        assert l.doca_rdma_export(_ptr(a.rdma), _byref(blob), _byref(n)) == 0
        first = ctypes.string_at(blob.value, n.value)  # type: ignore[arg-type]
        assert l.doca_rdma_export(_ptr(a.rdma), _byref(blob), _byref(n)) == 0
        assert ctypes.string_at(blob.value, n.value) == first  # type: ignore[arg-type]
        blob_b, b_conn = b.rdma.export()
        b.rdma.connect(first, b_conn)
        assert l.doca_rdma_connect(_ptr(a.rdma), blob_b, len(blob_b)) == 0
        wait_for(pe, lambda: a.rdma.get_state() == b.rdma.get_state() == CtxState.RUNNING, "RUNNING")
        b.mem[:3] = b"abc"
        r = a.rdma.task_receive_allocate_init(inv.buf_get_by_addr(a.mm, a.base, 64))
        r.submit()
        assert run(pe, b, b.rdma.task_send_allocate_init(b_conn, inv.buf_get_by_data(b.mm, b.base, 3))) == ["ok"]
        wait_for(pe, lambda: a.done, "the receive")
        assert bytes(a.mem[:3]) == b"abc"
        with pytest.raises(e.DocaNotSupported, match="DOCA 2.6"):
            b.rdma.export()  # a second connection: DOCA 2.6 has none
        close_side(a)
        close_side(b)
