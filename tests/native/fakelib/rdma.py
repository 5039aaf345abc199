"""Build and drive the fake ``libdoca_rdma`` (``rdma.c``).

What the fake does is described at the top of ``rdma.c``. ``conn_api=True`` builds
the DOCA 3.x ABI (connection objects, RDMA-CM); ``conn_api=False`` the DOCA 2.6 one.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char, c_int, c_size_t, c_void_p
from pathlib import Path

from doca_py.native.capi._decl import Decl

from . import attach_common, c_str, compile_library

__all__ = ["FAKE_RDMA_DECLS", "attach", "build_fake_rdma", "RECV_DATA", "RECV_IMM", "MAX_QUEUE_SIZE",
           "MAX_BUF_LIST_LEN", "MAX_MESSAGE_SIZE", "GID_TABLE_SIZE", "FAIL_PORT"]

MAX_QUEUE_SIZE = 4096
MAX_BUF_LIST_LEN = 8
MAX_MESSAGE_SIZE = 1 << 30
GID_TABLE_SIZE = 4
RECV_DATA = b"fake-recv"
RECV_IMM = 0x12345678
#: ``connect_to_addr`` to this port reports a failure instead of an established connection.
FAIL_PORT = 1

FAKE_RDMA_DECLS: tuple[Decl, ...] = (
    Decl("fake_rdma_live", c_int, ()),
    Decl("fake_rdma_last_sent", c_size_t, (POINTER(c_char),)),
    Decl("fake_rdma_peer", c_size_t, (c_void_p, POINTER(c_char))),
    Decl("fake_rdma_incoming_request", c_int, (c_void_p,)),
    Decl("fake_rdma_listen_port", ctypes.c_uint16, (c_void_p,)),
    Decl("fake_rdma_live_addrs", c_int, ()),
)
"""The fake-only helpers (bind them with :func:`~doca_py.native.capi.bind`); the
connection ones exist only in a ``conn_api=True`` build."""


def params(*, conn_api: bool = True) -> dict[str, object]:
    """The ``params.h`` of one build."""
    return {
        "CONN_API": int(conn_api),
        "RECV_DATA": c_str(RECV_DATA),
        "RECV_LEN": len(RECV_DATA),
        "RECV_IMM": f"{RECV_IMM:#x}u",
        "MAX_QUEUE": MAX_QUEUE_SIZE,
        "MAX_BUF_LIST_LEN": MAX_BUF_LIST_LEN,
        "MAX_MESSAGE_SIZE": f"{MAX_MESSAGE_SIZE}u",
        "GID_TABLE_SIZE": GID_TABLE_SIZE,
        "FAIL_PORT": FAIL_PORT,
    }


def build_fake_rdma(dest: Path, *, conn_api: bool = True) -> Path:
    """Compile the fake into *dest* as ``libdoca_rdma.so`` (normally next to a fake common).

    Raises :class:`~tests.native.fakelib.FakeBuildError` without a compiler or on a
    compile error.
    """
    return compile_library("rdma.c", dest, "libdoca_rdma.so", params(conn_api=conn_api))


def attach(rdma: ctypes.CDLL, common: ctypes.CDLL) -> None:
    """Give the fake rdma the fake libdoca_common it creates ctxs and tasks with."""
    attach_common(rdma, "fake_rdma_attach", common, ("fake_ctx_create", "fake_ctx_destroy", "fake_ctx_set_task_cb",
                                                     "fake_task_alloc_init", "doca_task_submit", "doca_task_free"))
    attach_common(rdma, "fake_rdma_attach_sync_event", common, ("fake_sync_event_remote_value", "fake_task_fail"))
