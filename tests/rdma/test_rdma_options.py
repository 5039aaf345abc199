"""RdmaOptions: every setting in one frozen value, applied through the DOCA-named setters."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.rdma import Rdma, RdmaOptions, RdmaTransportType
from doca_py.types import CtxState, MtuSize

from .helpers import PERMS, rig

OPTIONS = RdmaOptions(permissions=PERMS, transport_type=RdmaTransportType.RC, gid_index=0, max_num_connections=4,
                      mtu=MtuSize.MTU_1K, recv_queue_size=100, send_queue_size=64, max_send_buf_list_len=4,
                      receive_dst_buf_list_len=2, rnr_retry_count=3, connection_request_timeout=1500)


@pytest.fixture
def dev(backend: str) -> Iterator[d.Dev]:
    with rig() as (dev, _, _):
        yield dev


def _settings(r: Rdma) -> tuple[object, ...]:
    return (r.get_permissions(), r.get_transport_type(), r.get_gid_index(), r.get_max_num_connections(),
            r.get_mtu(), r.get_recv_queue_size(), r.get_send_queue_size(), r.get_max_send_buf_list_len(),
            r.task_receive_get_dst_buf_list_len(), r.get_rnr_retry_count(), r.get_connection_request_timeout())


EXPECTED = (PERMS, RdmaTransportType.RC, 0, 4, MtuSize.MTU_1K, 128, 64, 4, 2, 3, 1500)  # queues: powers of two


def test_options_are_frozen_keyword_only_and_default_to_none() -> None:
    assert all(getattr(RdmaOptions(), f.name) is None for f in dataclasses.fields(RdmaOptions))
    with pytest.raises(dataclasses.FrozenInstanceError):
        OPTIONS.mtu = MtuSize.MTU_2K  # type: ignore[misc]
    with pytest.raises(TypeError):
        RdmaOptions(PERMS)  # type: ignore[misc]


def test_constructor_and_configure_apply_every_setting(dev: d.Dev) -> None:
    with Rdma(dev, options=OPTIONS) as a, Rdma(dev) as b:
        assert _settings(a) == EXPECTED
        b.configure(OPTIONS)
        assert _settings(b) == EXPECTED


def test_none_leaves_a_setting_alone(dev: d.Dev) -> None:
    with Rdma(dev) as r:
        r.set_max_num_connections(7)
        default_mtu = r.get_mtu()
        r.configure(RdmaOptions(rnr_retry_count=5))
        assert (r.get_rnr_retry_count(), r.get_max_num_connections(), r.get_mtu()) == (5, 7, default_mtu)


def test_refused_values_and_states_raise_like_the_setters(dev: d.Dev) -> None:
    with Rdma(dev) as r:
        with pytest.raises(e.DocaInvalidValue):
            r.configure(RdmaOptions(max_num_connections=2, rnr_retry_count=8))
        assert r.get_max_num_connections() == 2  # applied in field order, up to the refused one
    with rig() as (dev2, pe, _), Rdma(dev2, options=RdmaOptions(permissions=PERMS)) as r:
        pe.connect_ctx(r)
        r.task_send_set_conf(lambda *a: None, lambda *a: None, 4)
        assert r.start() is CtxState.STARTING
        with pytest.raises(e.DocaBadState):
            r.configure(RdmaOptions(mtu=MtuSize.MTU_2K))
