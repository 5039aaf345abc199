"""Borrowed comch servers and clients (``from_handle``): a second view that never destroys the ctx."""

from __future__ import annotations

import pytest

from doca_py import errors as e
from doca_py.comch import ComchClient, ComchServer
from doca_py.types import CtxState

from .helpers import pair


def test_borrowed_server_and_client_leave_the_owners_working(backend: str) -> None:
    with pair(start=False) as p:
        srv, cli = p.server.ctx, p.client.ctx
        assert isinstance(srv, ComchServer) and isinstance(cli, ComchClient)
        srv.set_max_msg_size(1000)
        sview = ComchServer.from_handle(p.dpu, p.rep, p.name, srv.handle)
        cview = ComchClient.from_handle(p.host, p.name, cli.handle, user_data="view")
        assert sview.borrowed and cview.borrowed and cview.user_data == "view"
        assert sview.handle == srv.handle and sview.get_max_msg_size() == 1000
        assert cview.get_state() is CtxState.IDLE
        sview.close()
        cview.close()
        # The owners' contexts were neither stopped nor destroyed: they start and connect.
        assert srv.start() == CtxState.RUNNING
        assert cli.start() == CtxState.STARTING
        p.pump(lambda: cli.get_state() == CtxState.RUNNING and any(k == "connect" for k, _ in p.server.events))
        (conn,) = srv.get_connections()
        t = srv.task_send_alloc_init(conn, b"x")  # the connection is still the owner's
        t.free()


def test_int_handles_are_native_only(backend: str) -> None:
    if backend == "native":
        pytest.skip("the emulated backend's rule")
    with pair(start=False) as p, pytest.raises(e.DocaUsageError, match="native"):
        ComchClient.from_handle(p.host, p.name, 1234)
