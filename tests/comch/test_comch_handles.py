"""Borrowed comch servers and clients (``from_handle``): a second view that never destroys the ctx."""

from __future__ import annotations

import pytest

from typing import Any

import doca_py as d
from doca_py import errors as e
from doca_py.comch import ComchClient, ComchConsumer, ComchProducer, ComchServer
from doca_py.types import CtxState

from .helpers import free_all, local_mmap, pair


def _noop(*args: Any) -> None:
    pass


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


@pytest.mark.conformance
def test_borrowed_consumer_and_producer_leave_the_owners_working(backend: str) -> None:
    with pair() as p:
        mm, _ = local_mmap(p.dpu)
        with mm:
            cons = ComchConsumer(p.sconn, mm)
            p.server.pe.connect_ctx(cons)
            cons.task_post_recv_set_conf(_noop, _noop, 2)
            prod = ComchProducer(p.cconn)
            p.client.pe.connect_ctx(prod)
            prod.task_send_set_conf(_noop, _noop, 2)
            cview = ComchConsumer.from_handle(p.sconn, mm, cons.handle, user_data="view")
            pview = ComchProducer.from_handle(p.cconn, prod.handle)
            assert cview.borrowed and pview.borrowed and not cons.borrowed and cview.user_data == "view"
            assert (cview.handle, pview.handle) == (cons.handle, prod.handle)
            assert cview.get_connection() is p.sconn and pview.get_connection() is p.cconn
            assert cview.get_state() is CtxState.IDLE
            assert prod.start() == CtxState.RUNNING
            assert pview.get_state() is CtxState.RUNNING  # one DOCA ctx, two wrappers
            assert cons.start() == CtxState.STARTING
            p.pump(lambda: cons.get_state() == CtxState.RUNNING)
            assert (cview.get_id(), pview.get_id()) == (cons.get_id(), prod.get_id())
            cview.close()
            pview.close()
            # Closing the views neither stopped nor destroyed the owners' contexts.
            assert cons.get_state() is CtxState.RUNNING and prod.get_state() is CtxState.RUNNING
            kept = ComchProducer.from_handle(p.cconn, prod.handle)
            for ctx in (cons, prod):
                ctx.stop()
                free_all(ctx)
            p.pump(lambda: cons.get_state() == CtxState.IDLE and prod.get_state() == CtxState.IDLE)
            cons.close()
            p.client.ctx.stop()
            free_all(p.client.ctx)
            p.pump(lambda: p.client.ctx.get_state() == CtxState.IDLE)
            p.client.ctx.close()
            assert kept.closed and prod.closed  # a view closes with the client of its connection, as the owner


def test_fast_path_int_handles_are_native_only(backend: str) -> None:
    if backend == "native":
        pytest.skip("the emulated backend's rule")
    with pair() as p:
        mm, _ = local_mmap(p.dpu)
        with mm:
            with pytest.raises(e.DocaUsageError, match="native"):
                ComchConsumer.from_handle(p.sconn, mm, 1234)
            with pytest.raises(e.DocaUsageError, match="native"):
                ComchProducer.from_handle(p.cconn, 1234)


def test_connection_user_data_has_one_name(backend: str) -> None:
    """DOCA's get_user_data/set_user_data are the only spelling (no ``user_data`` attribute)."""
    with pair() as p:
        conn = p.sconn
        assert conn.get_user_data() is None
        conn.set_user_data("mine")
        assert conn.get_user_data() == "mine"
        assert not hasattr(conn, "user_data")
        with pytest.raises(AttributeError):
            conn.user_data = 1  # type: ignore[attr-defined]
