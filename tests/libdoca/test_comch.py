"""libdoca_comch (DOCA 2.6: libdoca_cc): its C contract called raw, and comch programs with one side on the
native path over libdoca and the other on the emulated backend (both speak the emulator's comch, so a
native program and an emulated one are peers), and DOCA 2.6's libdoca_cc under the control-path sample."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from doca_py.emulated import version as emu_version
from doca_py.errors import ErrorCode
from doca_py.native import capi
from doca_py.native.capi.comch import ComchEventConnectionStatusChangedCb, ComchEventMsgRecvCb
from doca_py.native.capi import TaskCompletionCb
from tests.deadlines import hang

from .env import lib_dir, native_env

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = hang(60.0)
OK, INVALID, IN_PROGRESS = 0, int(ErrorCode.INVALID_VALUE), int(ErrorCode.IN_PROGRESS)
RUNNING, IDLE = 2, 0
HOST_PCI, DPU_PCI = b"3b:00.0", b"03:00.0"
P = ctypes.c_void_p
byref = ctypes.byref


# -- the C contract, raw -----------------------------------------------------------------------------

@pytest.fixture
def libs(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    saved = emu_version.VERSION
    monkeypatch.setenv("DOCA_PY_COMCH_DIR", tempfile.mkdtemp(prefix="ldc-"))
    d = lib_dir("3.2")
    common = capi.bind(ctypes.CDLL(str(d / "libdoca_common.so.3")), capi.tables()["common"], (3, 2, 0),
                       libname="common")
    comch = capi.bind(ctypes.CDLL(str(d / "libdoca_comch.so.3")), capi.tables()["comch"], (3, 2, 0),
                      libname="comch")
    try:
        yield common, comch
    finally:
        emu_version.VERSION = saved


def _open(common: Any, pci: bytes) -> int:
    lst, n = ctypes.POINTER(P)(), ctypes.c_uint32()
    assert common.doca_devinfo_create_list(byref(lst), byref(n)) == OK
    try:
        for i in range(n.value):
            eq = ctypes.c_uint8()
            assert common.doca_devinfo_is_equal_pci_addr(P(lst[i]), pci, byref(eq)) == OK
            if eq.value:
                dev = P()
                assert common.doca_dev_open(P(lst[i]), byref(dev)) == OK
                return int(dev.value or 0)
    finally:
        common.doca_devinfo_destroy_list(lst)
    raise AssertionError(f"no device {pci!r}")


def _open_rep(common: Any, dev: int, pci: bytes) -> int:
    lst, n = ctypes.POINTER(P)(), ctypes.c_uint32()
    assert common.doca_devinfo_rep_create_list(P(dev), 0, byref(lst), byref(n)) == OK
    try:
        for i in range(n.value):
            eq = ctypes.c_uint8()
            assert common.doca_devinfo_rep_is_equal_pci_addr(P(lst[i]), pci, byref(eq)) == OK
            if eq.value:
                rep = P()
                assert common.doca_dev_rep_open(P(lst[i]), byref(rep)) == OK
                return int(rep.value or 0)
    finally:
        common.doca_devinfo_rep_destroy_list(lst)
    raise AssertionError(f"no representor {pci!r}")


def _progress(common: Any, pe: P, until: Callable[[], bool]) -> None:
    end = time.monotonic() + DEADLINE
    while not until():
        assert time.monotonic() < end, "the condition did not hold before the deadline"
        common.doca_pe_progress(pe)


def _state(common: Any, ctx: int) -> int:
    st = ctypes.c_int()
    assert common.doca_ctx_get_state(P(ctx), byref(st)) == OK
    return st.value


def test_a_message_reaches_the_peer_s_callback_from_inside_progress_with_its_connection(libs: Any) -> None:
    common, comch = libs
    name = f"ldc-{uuid.uuid4().hex[:12]}".encode()
    dpu, host = _open(common, DPU_PCI), _open(common, HOST_PCI)
    rep = _open_rep(common, dpu, HOST_PCI)
    pe, srv, cli = P(), P(), P()
    assert common.doca_pe_create(byref(pe)) == OK
    assert comch.doca_comch_server_create(P(dpu), P(rep), name, byref(srv)) == OK
    assert comch.doca_comch_client_create(P(host), name, byref(cli)) == OK
    got: list[tuple[Any, ...]] = []
    events: list[tuple[str, int, int]] = []

    def on_msg(event: int | None, buf: int | None, n: int, conn: int | None) -> None:
        # The bytes are readable during the call; the connection answers for its server and user data.
        got.append((event, ctypes.string_at(buf, n) if buf else b"", conn,
                    comch.doca_comch_server_get_server_ctx(conn), comch.doca_comch_client_get_client_ctx(conn),
                    comch.doca_comch_connection_get_user_data(conn)))

    def on_connect(event: int | None, conn: int | None, ok: int) -> None:
        events.append(("connect", conn or 0, ok))
        assert comch.doca_comch_connection_set_user_data(conn, 0xC0FFEE) == OK

    def on_disconnect(event: int | None, conn: int | None, ok: int) -> None:
        events.append(("disconnect", conn or 0, ok))

    sent: list[int] = []

    def send_ok(task: int | None, ud: int, ctx_ud: int) -> None:
        sent.append(ud)
        common.doca_task_free(task)

    def send_err(task: int | None, ud: int, ctx_ud: int) -> None:
        raise AssertionError("the send failed")

    keep = [ComchEventMsgRecvCb(on_msg), ComchEventConnectionStatusChangedCb(on_connect),
            ComchEventConnectionStatusChangedCb(on_disconnect), TaskCompletionCb(send_ok), TaskCompletionCb(send_err)]
    assert comch.doca_comch_server_event_msg_recv_register(srv, keep[0]) == OK
    assert comch.doca_comch_server_event_connection_status_changed_register(srv, keep[1], keep[2]) == OK
    assert comch.doca_comch_server_task_send_set_conf(srv, keep[3], keep[4], 4) == OK
    assert comch.doca_comch_client_task_send_set_conf(cli, keep[3], keep[4], 4) == OK
    sctx, cctx = comch.doca_comch_server_as_ctx(srv), comch.doca_comch_client_as_ctx(cli)
    assert sctx == srv.value and cctx == cli.value  # one handle for the object and its ctx
    for ctx in (sctx, cctx):
        assert common.doca_pe_connect_ctx(pe, P(ctx)) == OK
    assert common.doca_ctx_start(P(sctx)) == OK
    assert common.doca_ctx_start(P(cctx)) == IN_PROGRESS
    _progress(common, pe, lambda: _state(common, cctx) == RUNNING and bool(events))
    cconn = P()
    assert comch.doca_comch_client_get_connection(cli, byref(cconn)) == OK
    assert comch.doca_comch_client_get_client_ctx(cconn) == cli.value
    assert comch.doca_comch_server_get_server_ctx(cconn) is None  # a client-side connection
    task = P()
    msg = ctypes.create_string_buffer(b"through libdoca_comch", 21)
    assert comch.doca_comch_client_task_send_alloc_init(cli, cconn, msg, 21, byref(task)) == OK
    msg[0] = b"X"  # copied at allocation, as DOCA does
    common.doca_task_set_user_data(comch.doca_comch_task_send_as_task(task), 7)
    assert common.doca_task_submit(comch.doca_comch_task_send_as_task(task)) == OK
    _progress(common, pe, lambda: bool(got) and sent == [7])
    ((event, data, sconn, owner, client_owner, ud),) = got
    assert event and data == b"through libdoca_comch"
    assert events[0] == ("connect", sconn, 1) and owner == srv.value and client_owner is None and ud == 0xC0FFEE
    count = ctypes.c_uint64()
    assert comch.doca_comch_connection_update_info(cconn) == OK
    assert comch.doca_comch_connection_get_counter(cconn, 1, byref(count)) == OK and count.value == 1
    _producer_task_fields(common, comch, pe, host, cconn)
    # The client goes: the server's disconnect callback names the connection, whose handle dies with it.
    assert common.doca_ctx_stop(P(cctx)) in (OK, IN_PROGRESS)
    _progress(common, pe, lambda: len(events) == 2 and _state(common, cctx) == IDLE)
    assert events[1] == ("disconnect", sconn, 1)
    assert comch.doca_comch_connection_update_info(P(sconn)) == INVALID
    assert comch.doca_comch_client_destroy(cli) == OK
    assert common.doca_ctx_stop(P(sctx)) == OK
    assert comch.doca_comch_server_destroy(srv) == OK
    assert comch.doca_comch_server_as_ctx(srv) is None  # destroyed: the handle is dead
    assert common.doca_pe_destroy(pe) == OK
    assert common.doca_dev_rep_close(P(rep)) == OK
    for dev in (dpu, host):
        assert common.doca_dev_close(P(dev)) == OK


def _producer_task_fields(common: Any, comch: Any, pe: P, dev: int, conn: P) -> None:
    """A producer send task's fields through the 3.x ABI: immediate data copied at allocation and at
    set_imm_data, a pointer to it that stays valid, the consumer id as C set it."""
    mem = ctypes.create_string_buffer(64)
    mm, inv, buf, prod, task = P(), P(), P(), P(), P()
    assert common.doca_mmap_create(byref(mm)) == OK
    assert common.doca_mmap_set_memrange(mm, ctypes.addressof(mem), ctypes.c_size_t(64)) == OK
    assert common.doca_mmap_add_dev(mm, P(dev)) == OK and common.doca_mmap_start(mm) == OK
    assert common.doca_buf_inventory_create(ctypes.c_size_t(1), byref(inv)) == OK
    assert common.doca_buf_inventory_start(inv) == OK
    assert common.doca_buf_inventory_buf_get_by_args(inv, mm, P(ctypes.addressof(mem)), ctypes.c_size_t(64),
                                                     P(ctypes.addressof(mem)), ctypes.c_size_t(8), byref(buf)) == OK
    fail = TaskCompletionCb(lambda task, ud, ctx_ud: None)
    assert comch.doca_comch_producer_create(conn, byref(prod)) == OK
    assert comch.doca_comch_producer_task_send_set_conf(prod, fail, fail, 2) == OK
    pctx = comch.doca_comch_producer_as_ctx(prod)
    assert common.doca_pe_connect_ctx(pe, P(pctx)) == OK and common.doca_ctx_start(P(pctx)) == OK
    imm = ctypes.create_string_buffer(b"imm!", 4)
    assert comch.doca_comch_producer_task_send_alloc_init(prod, buf, imm, 4, 9, byref(task)) == OK
    imm[0] = b"X"
    ptr = comch.doca_comch_producer_task_send_get_imm_data(task)
    assert ctypes.string_at(ptr, comch.doca_comch_producer_task_send_get_imm_data_len(task)) == b"imm!"
    assert comch.doca_comch_producer_task_send_get_imm_data(task) == ptr  # stable while the data is
    comch.doca_comch_producer_task_send_set_imm_data(task, b"other", 5)
    ptr = comch.doca_comch_producer_task_send_get_imm_data(task)
    assert ctypes.string_at(ptr, comch.doca_comch_producer_task_send_get_imm_data_len(task)) == b"other"
    assert comch.doca_comch_producer_task_send_get_consumer_id(task) == 9
    comch.doca_comch_producer_task_send_set_consumer_id(task, 0)  # names no consumer: taken, not ignored
    assert comch.doca_comch_producer_task_send_get_consumer_id(task) == 0
    assert comch.doca_comch_producer_task_send_get_buf(task) == buf.value
    common.doca_task_free(comch.doca_comch_producer_task_send_as_task(task))
    assert common.doca_ctx_stop(P(pctx)) == OK and comch.doca_comch_producer_destroy(prod) == OK
    assert common.doca_buf_dec_refcount(buf, None) == OK
    assert common.doca_buf_inventory_destroy(inv) == OK
    assert common.doca_mmap_destroy(mm) == OK


# -- one side native, the other emulated -------------------------------------------------------------

@pytest.fixture
def comch_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="ldc-") as d:  # short: it holds Unix socket paths
        yield d


def _env(path: str, comch_dir: str, version: str | None = None) -> dict[str, str]:
    base = dict(os.environ, DOCA_PY_COMCH_DIR=comch_dir, PYTHONWARNINGS="error::ResourceWarning")
    if path == "native":
        return native_env(version, base)
    base.update(DOCA_PY_IMPL="emulated")
    if version is not None:
        base["DOCA_PY_EMU_VERSION"] = version
    return base


def _start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, *argv], cwd=ROOT, env=env, text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_line(p: subprocess.Popen[str], text: str) -> list[str]:
    """Lines of *p* up to the first holding *text* (readline blocks: the child's deadline bounds it)."""
    assert p.stdout is not None
    seen: list[str] = []
    for line in p.stdout:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"exited (rc={p.wait(DEADLINE)}) without printing {text!r}:\n{''.join(seen)}")


def _finish(p: subprocess.Popen[str], before: list[str] | None = None) -> str:
    try:
        out, _ = p.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        raise AssertionError(f"did not exit in time:\n{out}") from None
    text = "".join(before or []) + out
    assert p.returncode == 0, text
    assert "Traceback" not in text, text
    return text


def _sample_pair(server_env: dict[str, str], client_env: dict[str, str], kind: str) -> tuple[str, str]:
    server = _start([f"examples/comch_{kind}_server.py", "-p", "03:00.0", "-r", "3b:00.0",
                     "-t", f"{kind} from the server"], server_env)
    try:
        head = _wait_line(server, "CC server context is running")
        client = _start([f"examples/comch_{kind}_client.py", "-p", "3b:00.0", "-t", f"{kind} from the client"],
                        client_env)
        try:
            cout = _finish(client)
        finally:
            if client.poll() is None:
                client.kill()
                client.communicate()
        return _finish(server, head), cout
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()


@pytest.mark.parametrize("server_path, client_path", [("native", "emulated"), ("emulated", "native")])
def test_the_ctrl_path_samples_talk_across_paths(server_path: str, client_path: str, comch_dir: str) -> None:
    sout, cout = _sample_pair(_env(server_path, comch_dir), _env(client_path, comch_dir), "ctrl_path")
    assert "Message received: 'ctrl_path from the client'" in sout, sout
    assert "Message received: 'ctrl_path from the server'" in cout, cout


@pytest.mark.parametrize("server_path, client_path", [("native", "emulated"), ("emulated", "native")])
def test_the_data_path_samples_move_producer_data_across_paths(server_path: str, client_path: str,
                                                               comch_dir: str) -> None:
    sout, cout = _sample_pair(_env(server_path, comch_dir), _env(client_path, comch_dir), "data_path_high_speed")
    # Each consumer prints what the other side's producer wrote into its buffer.
    assert re.search(r"Message received: 'data_path_high_speed from the client'", sout), sout
    assert re.search(r"Message received: 'data_path_high_speed from the server'", cout), cout


def test_doca_26_libdoca_cc_runs_the_ctrl_path_samples(comch_dir: str) -> None:
    libdir = lib_dir("2.6")
    assert (libdir / "libdoca_cc.so.2").exists() and not list(libdir.glob("libdoca_comch*"))
    env = _env("native", comch_dir, "2.6")
    sout, cout = _sample_pair(env, env, "ctrl_path")
    assert "Message received: 'ctrl_path from the client'" in sout, sout
    assert "Message received: 'ctrl_path from the server'" in cout, cout


def test_doca_26_libdoca_cc_moves_producer_data_to_a_3x_emulated_peer(comch_dir: str) -> None:
    # 2.6's producer send has no immediate data (its alloc_init lacks the two parameters).
    sout, cout = _sample_pair(_env("native", comch_dir, "2.6"), _env("emulated", comch_dir),
                              "data_path_high_speed")
    assert "Message received: 'data_path_high_speed from the client'" in sout, sout
    assert "Message received: 'data_path_high_speed from the server'" in cout, cout


@pytest.mark.parametrize("server_path, client_path", [("native", "emulated"), ("emulated", "native")])
def test_file_compression_across_paths(server_path: str, client_path: str, comch_dir: str, tmp_path: Path) -> None:
    src, out = tmp_path / "in.bin", tmp_path / "out.bin"
    data = os.urandom(40_000) + b"compressible text of the file compression app\n" * 2_000
    src.write_bytes(data)
    server = _start(["-m", "apps.file_compression", "-p", "03:00.0", "-r", "3b:00.0", "-f", str(out)],
                    _env(server_path, comch_dir))
    try:
        head = _wait_line(server, "Server waiting on a client to connect")
        client = _start(["-m", "apps.file_compression", "-p", "3b:00.0", "-f", str(src)],
                        _env(client_path, comch_dir))
        try:
            cout = _finish(client)
        finally:
            if client.poll() is None:
                client.kill()
                client.communicate()
        sout = _finish(server, head)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert "SUCCESS: file was received and decompressed successfully" in sout, sout
    assert "Received message: Server was done receiving messages" in cout, cout
    assert out.read_bytes() == data
