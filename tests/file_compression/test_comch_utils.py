"""``ComchChannel`` (the C apps' comch_utils) in one process: the role from the device, one client
only, messages within the connection's limit, the peer's departure."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from doca_py.errors import DocaInvalidValue

from apps.common.comch_channel import ComchChannel
from apps.common.errors import PeerClosedError
from apps.common.runtime.doca_features import doca_features

from tests.deadlines import hang

from .procs import DPU_PCI, HOST_PCI

pytestmark = pytest.mark.usefixtures("backend")
DEADLINE = hang(20.0)


@pytest.fixture
def name(monkeypatch: pytest.MonkeyPatch, comch_env: dict[str, str]) -> Iterator[str]:
    monkeypatch.setenv("DOCA_PY_COMCH_DIR", comch_env["DOCA_PY_COMCH_DIR"])
    yield f"cu-{uuid.uuid4().hex}"


def _pump(channels: list[ComchChannel], until: Callable[[], bool]) -> None:
    end = time.monotonic() + DEADLINE
    while not until():
        assert time.monotonic() < end, "deadline"
        for ch in channels:
            ch.progress(0.01)


def _connect(server: ComchChannel, client: ComchChannel) -> None:
    never = threading.Event()
    server.start_ctx()
    client.start_ctx()
    _pump([server, client], lambda: server.connection is not None and client.ctx.get_state().name == "RUNNING")
    assert server.wait_connected(never, timeout=0) is server.connection
    assert client.wait_connected(never, timeout=0) is client.connection is not None


def test_roles_messages_and_the_departure_of_the_peer(name: str) -> None:
    got: dict[str, list[bytes]] = {"server": [], "client": []}
    server = ComchChannel.open(name, DPU_PCI, HOST_PCI, lambda m: got["server"].append(bytes(m)))
    client = ComchChannel.open(name, HOST_PCI, None, lambda m: got["client"].append(bytes(m)))
    try:
        assert server.is_server and not client.is_server and server.rep is not None and client.rep is None
        _connect(server, client)
        assert server.connected and client.connected and not server.lost and not client.lost
        big = b"x" * client.max_msg_size
        client.send(big)
        server.send(b"pong")
        _pump([server, client], lambda: bool(got["server"] and got["client"]))
        assert got == {"server": [big], "client": [b"pong"]}
        with pytest.raises(DocaInvalidValue, match="larger than max comch length"):
            client.try_send(big + b"!")
    finally:
        client.close()
    _pump([server], lambda: server.lost)
    assert not server.connected
    with pytest.raises(PeerClosedError, match="the comch client closed the connection"):
        server.check()
    server.close()


def test_the_server_keeps_one_client(name: str) -> None:
    server = ComchChannel.open(name, DPU_PCI, HOST_PCI, lambda m: None)
    first = ComchChannel.open(name, HOST_PCI, None, lambda m: None)
    second = ComchChannel.open(name, HOST_PCI, None, lambda m: None)
    try:
        _connect(server, first)
        second.start_ctx()
        if not doca_features().comch_server_disconnect:
            # DOCA 2.6 has no doca_comch_server_disconnect: the second client is counted and ignored, not dropped.
            _pump([server, first, second], lambda: server.refused_clients == 1)
            assert server.connected and first.connected and not server.lost and not second.lost
            return
        _pump([server, first, second], lambda: server.refused_clients == 1 and second.lost)
        assert server.connected and first.connected and not server.lost
        with pytest.raises(PeerClosedError, match="refused or dropped"):
            second.wait_connected(threading.Event(), timeout=0)
    finally:
        second.close()
        first.close()
        server.close()


def test_a_server_needs_the_representor(name: str) -> None:
    with pytest.raises(DocaInvalidValue, match="missing representor PCI address"):
        ComchChannel.open(name, DPU_PCI, None, lambda m: None)
