"""ComchOptions: the server/client settings in one frozen value."""

from __future__ import annotations

import pytest

from doca_py import errors as e
from doca_py.comch import ComchClient, ComchOptions, ComchServer

from .helpers import pair


def test_options_through_constructor_and_configure(backend: str) -> None:
    with pair(start=False) as p:
        srv, cli = p.server.ctx, p.client.ctx
        assert isinstance(srv, ComchServer) and isinstance(cli, ComchClient)
        srv.configure(ComchOptions(max_msg_size=2048, recv_queue_size=32))
        assert (srv.get_max_msg_size(), srv.get_recv_queue_size()) == (2048, 32)
        before = cli.get_recv_queue_size()
        cli.configure(ComchOptions(max_msg_size=1024))  # None leaves recv_queue_size alone
        assert (cli.get_max_msg_size(), cli.get_recv_queue_size()) == (1024, before)
        with ComchClient(p.host, p.name + "x", options=ComchOptions(max_msg_size=512, recv_queue_size=16)) as c2:
            assert (c2.get_max_msg_size(), c2.get_recv_queue_size()) == (512, 16)


def test_options_only_while_idle(backend: str) -> None:
    with pair() as p:
        with pytest.raises(e.DocaBadState):
            p.server.ctx.configure(ComchOptions(max_msg_size=1024))
