"""The control channel over comch (apps.storage.channels.comch_transport): a server thread and a client in
this process, malformed and oversized frames, disconnects, timeouts, one client only."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

import doca_py as d
from doca_py.comch import ComchConnection, ComchConsumer, ComchServer
from doca_py.errors import ErrorCode
from doca_py.types import CtxState

from apps.storage.channels.control_channel import ControlChannel
from apps.storage.channels.comch_transport import ComchTransport, connect_comch_client, listen_comch_server
from apps.storage.wire.control import ControlMessage, MessageType, StorageDetails, encode_frame, make_error_response, \
    make_response
from apps.common.errors import ControlRequestError, PeerClosedError, ProtocolError, StorageAppError
from apps.common.runtime.doca_features import doca_features

from tests.deadlines import hang

pytestmark = pytest.mark.usefixtures("backend")

HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"
DEADLINE = hang(20.0)
M = MessageType
QUERY = ControlMessage(M.QUERY_STORAGE_REQUEST, 0, 0)

ServerScript = Callable[[ControlChannel, ComchServer, ComchConnection], Any]


def unique_name() -> str:
    return f"initiator-test-{uuid.uuid4().hex}"


@dataclass
class ServerThread:
    """A comch server served by *script* on its own thread (its Pe is progressed only there)."""

    name: str
    script: ServerScript
    result: dict[str, Any] = field(default_factory=dict)
    listening: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe:
                rep = dev.open_rep_by_pci_addr(HOST_PCI)

                def started() -> bool:
                    self.listening.set()
                    return False

                channel, server, conn = listen_comch_server(dev, rep, self.name, pe, timeout=DEADLINE,
                                                            should_abort=started)
                try:
                    self.result["value"] = self.script(channel, server, conn)
                finally:
                    channel.close()
                    server.close()
        except BaseException as exc:  # noqa: BLE001 - re-raised by join()
            self.result["error"] = exc
        finally:
            self.listening.set()

    def join(self) -> Any:
        self.thread.join(DEADLINE)
        assert not self.thread.is_alive(), "the server thread did not finish"
        if "error" in self.result:
            raise self.result["error"]
        return self.result.get("value")


@contextmanager
def served(script: ServerScript) -> Iterator[tuple[ServerThread, ControlChannel, d.ComchClient, d.Pe]]:
    srv = ServerThread(unique_name(), script)
    srv.thread.start()
    assert srv.listening.wait(DEADLINE)
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev, d.Pe() as pe:
        channel, client = connect_comch_client(dev, srv.name, pe, timeout=DEADLINE)
        try:
            yield srv, channel, client, pe
        finally:
            channel.close()
            client.close()


def test_request_response_both_ways_and_frame_limit() -> None:
    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> list[ControlMessage]:
        got = [channel.receive(DEADLINE)]
        channel.send(make_response(got[0], StorageDetails(1 << 30, 8192)))
        got.append(channel.receive(DEADLINE))
        channel.send(make_error_response(got[1], ErrorCode.NOT_SUPPORTED, "no init here"))
        got.append(channel.receive(DEADLINE))  # the shutdown
        channel.send(make_response(got[2]))
        assert isinstance(channel.transport, ComchTransport)
        assert channel.transport.flush(DEADLINE)
        return got

    with served(script) as (srv, channel, client, _):
        assert isinstance(channel.transport, ComchTransport)
        assert channel.transport.connection is client.get_connection()
        assert channel.transport.is_connected
        # A frame must fit in one comch message (4080 bytes on the emulated backend).
        assert channel._decoder.max_body == client.get_max_msg_size() - 4
        resp = channel.request(QUERY, timeout=DEADLINE)
        assert resp.payload == StorageDetails(1 << 30, 8192)
        init = ControlMessage(M.START_STORAGE_REQUEST, 1, 1)
        with pytest.raises(ControlRequestError, match="start_storage_response id: 1 failed!: no init here") as info:
            channel.request(init, timeout=DEADLINE)
        assert info.value.code == ErrorCode.NOT_SUPPORTED
        with pytest.raises(StorageAppError, match="does not fit in one comch message") as too_big:
            channel.transport.send(b"\x00" * (client.get_max_msg_size() + 1))
        assert too_big.value.code == ErrorCode.INVALID_VALUE
        assert channel.request(ControlMessage(M.SHUTDOWN_REQUEST, 2, 2), timeout=DEADLINE).type is \
            M.SHUTDOWN_RESPONSE
        got = srv.join()
    assert [m.type for m in got] == [M.QUERY_STORAGE_REQUEST, M.START_STORAGE_REQUEST, M.SHUTDOWN_REQUEST]


@pytest.mark.parametrize("raw, match", [
    (bytes.fromhex("0000000C 00000063 00000000 00000000"), "unknown control message type 99"),
    (b"\xff\xff\xff\xff", "announces a 4294967295-byte body, more than the 4076-byte limit"),
    (bytes.fromhex("00000004 00000001"), "shorter than the 12-byte prefix"),
    (bytes.fromhex("00000010 00000002 00000000 00000000 00000000"), "query_storage_response truncated"),
])
def test_malformed_frames_are_rejected(raw: bytes, match: str) -> None:
    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> str:
        assert channel.receive(DEADLINE) == QUERY  # the session's first message
        with pytest.raises(ProtocolError, match=match) as info:
            channel.receive(DEADLINE)
        return str(info.value)

    with served(script) as (srv, channel, _, _):
        assert isinstance(channel.transport, ComchTransport)
        channel.send(QUERY)
        channel.transport.send(raw)
        assert channel.transport.flush(DEADLINE)
        assert match.split()[0] in srv.join()


def test_a_frame_split_over_messages_is_reassembled() -> None:
    start = ControlMessage(M.START_STORAGE_REQUEST, 1, 1)

    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> list[ControlMessage]:
        return [channel.receive(DEADLINE), channel.receive(DEADLINE)]

    with served(script) as (srv, channel, _, _):
        frame = encode_frame(start)
        assert isinstance(channel.transport, ComchTransport)
        channel.send(QUERY)  # a session starts with a whole query_storage_request
        channel.transport.send(frame[:3])
        channel.transport.send(frame[3:])
        assert channel.transport.flush(DEADLINE)
        assert srv.join() == [QUERY, start]


def test_server_going_away_is_peer_closed_on_the_client() -> None:
    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> None:
        channel.receive(DEADLINE)
        server.stop()  # drops the client

    with served(script) as (srv, channel, client, _):
        channel.send(QUERY)
        assert isinstance(channel.transport, ComchTransport)
        assert channel.transport.flush(DEADLINE)
        srv.join()
        with pytest.raises(PeerClosedError, match="closed by the peer"):
            channel.receive(DEADLINE)
        assert channel.is_closed and not channel.transport.is_connected
        with pytest.raises(PeerClosedError):
            channel.send(QUERY)
        assert client.get_state() != CtxState.RUNNING


def test_client_going_away_is_peer_closed_on_the_server() -> None:
    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> str:
        first = channel.receive(DEADLINE)
        assert first == QUERY
        with pytest.raises(PeerClosedError) as info:
            channel.receive(DEADLINE)
        return str(info.value)

    with served(script) as (srv, channel, client, _):
        channel.send(QUERY)
        assert isinstance(channel.transport, ComchTransport)
        assert channel.transport.flush(DEADLINE)
        client.stop()
        assert "closed by the peer" in srv.join()


def test_consumer_events_reach_the_peer_in_order() -> None:
    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> list[int]:
        pe = channel.transport.pe  # type: ignore[attr-defined]
        ids: list[int] = []
        with d.Mmap() as mm:
            mm.allocate(4096)
            mm.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
            mm.add_dev(server.get_device())
            mm.start()
            channel.receive(DEADLINE)  # the client's hooks are in place
            consumers = []
            for _ in range(3):
                cons = ComchConsumer(conn, mm)
                pe.connect_ctx(cons)
                cons.task_post_recv_set_conf(lambda t, u, c: None, lambda t, u, c: None, 4)
                cons.start()
                consumers.append(cons)
                ids.append(cons.get_id())
            channel.send(ControlMessage(M.INIT_STORAGE_RESPONSE, 0, 0))
            channel.receive(DEADLINE)  # the client saw them: drop them
            for cons in consumers:
                cons.close()
            channel.send(ControlMessage(M.START_STORAGE_RESPONSE, 1, 1))
            channel.receive(DEADLINE)
        return ids

    with served(script) as (srv, channel, _, _):
        transport = channel.transport
        assert isinstance(transport, ComchTransport)
        seen: list[tuple[str, int]] = []
        transport.on_new_consumer = lambda cid: seen.append(("new", cid))
        transport.on_expired_consumer = lambda cid: seen.append(("expired", cid))
        channel.send(QUERY)
        assert channel.receive(DEADLINE).type is M.INIT_STORAGE_RESPONSE
        while len(transport.remote_consumer_ids) < 3:
            assert channel.poll(0.1) is None
        channel.send(QUERY)
        assert channel.receive(DEADLINE).type is M.START_STORAGE_RESPONSE
        while len(transport.expired_consumer_ids) < 3:
            assert channel.poll(0.1) is None
        channel.send(QUERY)
        assert transport.flush(DEADLINE)  # a comch message leaves at the next progress
        ids = srv.join()
    assert transport.remote_consumer_ids == ids
    assert sorted(transport.expired_consumer_ids) == sorted(ids)
    assert [k for k, _ in seen] == ["new"] * 3 + ["expired"] * 3


def test_connect_times_out_or_aborts_without_a_server() -> None:
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev, d.Pe() as pe:
        with pytest.raises(StorageAppError, match="Timed out after 0.2 s connecting to the comch server") as info:
            connect_comch_client(dev, unique_name(), pe, timeout=0.2)
        assert info.value.code == ErrorCode.TIME_OUT
        calls: list[int] = []

        def abort() -> bool:
            calls.append(1)
            return len(calls) > 2

        with pytest.raises(StorageAppError, match="User requested abort") as info:
            connect_comch_client(dev, unique_name(), pe, timeout=DEADLINE, should_abort=abort)
        assert info.value.code == ErrorCode.CONNECTION_ABORTED


def test_listen_times_out_and_refuses_a_taken_name() -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe:
        rep = dev.open_rep_by_pci_addr(HOST_PCI)
        with pytest.raises(StorageAppError, match="waiting for a comch client") as info:
            listen_comch_server(dev, rep, unique_name(), pe, timeout=0.1)
        assert info.value.code == ErrorCode.TIME_OUT
    srv = ServerThread(unique_name(), lambda ch, s, c: ch.receive(DEADLINE))
    srv.thread.start()
    assert srv.listening.wait(DEADLINE)
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe:
        rep = dev.open_rep_by_pci_addr(HOST_PCI)
        with pytest.raises(StorageAppError, match="already in use") as info:
            listen_comch_server(dev, rep, srv.name, pe, timeout=0.1)
        assert info.value.code == ErrorCode.ALREADY_EXIST
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev, d.Pe() as pe:
        channel, client = connect_comch_client(dev, srv.name, pe, timeout=DEADLINE)
        channel.send(QUERY)
        assert isinstance(channel.transport, ComchTransport)
        assert channel.transport.flush(DEADLINE)
        assert srv.join() == QUERY
        channel.close()
        client.close()


def _refused(channel: ControlChannel, client: d.ComchClient) -> None:
    """*channel*'s server disconnects it (bounded wait)."""
    with pytest.raises(PeerClosedError):
        channel.receive(DEADLINE)
    channel.close()
    client.close()


def _needs_server_disconnect() -> None:
    if not doca_features().comch_server_disconnect:
        pytest.skip("DOCA 2.6 has no doca_comch_server_disconnect: its server cannot refuse a client")


def test_a_second_client_is_refused() -> None:
    _needs_server_disconnect()
    second_done = threading.Event()

    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> int:
        transport = channel.transport
        assert isinstance(transport, ComchTransport)
        assert channel.receive(DEADLINE) == QUERY
        while not second_done.is_set():
            channel.poll(0.05)  # progress: the second client is refused meanwhile
        return transport.refused_clients

    with served(script) as (srv, channel, _, _):
        channel.send(QUERY)
        assert isinstance(channel.transport, ComchTransport)
        assert channel.transport.flush(DEADLINE)
        with d.Dev.open_by_pci_addr(HOST_PCI) as dev, d.Pe() as pe:
            try:
                ch2, client2 = connect_comch_client(dev, srv.name, pe, timeout=DEADLINE)
            except StorageAppError as exc:
                # Refused before it was seen RUNNING.
                assert exc.code == ErrorCode.CONNECTION_RESET, exc
            else:
                _refused(ch2, client2)
        second_done.set()
        assert srv.join() == 1


SILENT = 3


@pytest.fixture
def waiting_room_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most two silent clients wait side by side for the session (MAX_PENDING_CLIENTS)."""
    from apps.storage.channels import comch_transport

    monkeypatch.setattr(comch_transport, "MAX_PENDING_CLIENTS", 2)


def _initiator_after_silent_clients(script: ServerScript, silent: int, expected: object) -> None:
    """Serve *script*: *silent* clients connect and say nothing, then the initiator connects and sends its
    query_storage_request; the script's result must be *expected*, and each silent client finds itself
    refused on its side."""
    srv = ServerThread(unique_name(), script)
    srv.thread.start()
    assert srv.listening.wait(DEADLINE)
    with d.Dev.open_by_pci_addr(HOST_PCI) as dev:
        quiet = []
        for _ in range(silent):
            qpe = d.Pe()
            quiet.append((qpe, *connect_comch_client(dev, srv.name, qpe, timeout=DEADLINE)))
        with d.Pe() as pe:
            channel, client = connect_comch_client(dev, srv.name, pe, timeout=DEADLINE)
            channel.send(QUERY)
            assert isinstance(channel.transport, ComchTransport)
            assert channel.transport.flush(DEADLINE)
            assert srv.join() == expected
            channel.close()
            client.close()
        for qpe, qchannel, qclient in quiet:
            _refused(qchannel, qclient)
            qpe.close()


@pytest.mark.usefixtures("waiting_room_of_two")
def test_silent_clients_do_not_keep_the_initiator_out() -> None:
    """Clients that connect and say nothing wait side by side (at most MAX_PENDING_CLIENTS, here 2:
    the first is pushed out by the third); the initiator connecting after them gets the session with
    its query_storage_request, and the silent ones still waiting are then disconnected."""

    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> tuple[ControlMessage, int]:
        transport = channel.transport
        assert isinstance(transport, ComchTransport)
        msg = channel.receive(DEADLINE)
        while transport.refused_clients < SILENT:  # the two still waiting go at the next progress
            channel.poll(0.05)
        return msg, transport.refused_clients

    _initiator_after_silent_clients(script, SILENT, (QUERY, SILENT))


@pytest.mark.usefixtures("waiting_room_of_two")
@pytest.mark.parametrize("rings", [False, True], ids=["socket", "rings"])
def test_a_refused_client_costs_the_server_nothing(monkeypatch: pytest.MonkeyPatch, rings: bool) -> None:
    """Silent clients pushed out of the waiting room, or refused once the session started, stay
    connected on their side; the server has closed their connections and released their receive
    buffers (over a MiB each) at once — with the cyclic garbage collector off, so nothing waits for a
    collection that an idle bridge would not make."""
    _needs_server_disconnect()
    import gc
    import time

    from doca_py.emulated.comch.connection import EmuComchConnection

    from doca_py.emulated.comch import config as comch_config

    monkeypatch.setattr(comch_config, "_shm", rings)  # for the connections this test makes
    silent = 6

    # Only this test's connections: earlier tests in this process may have left theirs to the collector.
    earlier = {id(o) for o in gc.get_objects() if isinstance(o, EmuComchConnection)}

    def refused_here() -> list[EmuComchConnection]:
        return [o for o in gc.get_objects() if isinstance(o, EmuComchConnection) and id(o) not in earlier
                and o.is_server_side() and o.torn_down]

    def script(channel: ControlChannel, server: ComchServer, conn: ComchConnection) -> tuple[ControlMessage, int, int]:
        transport = channel.transport
        assert isinstance(transport, ComchTransport)
        msg = channel.receive(DEADLINE)
        end = time.monotonic() + DEADLINE
        # The refusals are torn down on the I/O thread, the rings let go at the Pe's next poll: progress
        # until every refused connection is torn down and holds nothing (bounded: the old code never did).
        while True:
            gone = refused_here()
            holding = [o for o in gone if o.rx is not None or o.mv is not None]
            if (transport.refused_clients >= silent and len(gone) >= silent and not holding) \
                    or time.monotonic() >= end:
                return msg, transport.refused_clients, len(holding)
            channel.poll(0.05)

    enabled = gc.isenabled()
    gc.disable()
    try:
        _initiator_after_silent_clients(script, silent, (QUERY, silent, 0))
    finally:
        if enabled:
            gc.enable()
