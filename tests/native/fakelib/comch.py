"""Build and drive the fake ``libdoca_comch`` (``comch.c``; DOCA 2.6's ``libdoca_cc`` too).

What the fake does is described at the top of ``comch.c``. Builds:

* ``imm_api=True`` (default): the DOCA 3.x ABI, ``doca_comch_producer_task_send_alloc_init``
  takes ``imm_data, imm_data_len``; immediate-data functions and
  ``doca_comch_server_disconnect`` exist.
* ``imm_api=False``: the 2.x ABI (no immediate data, no ``server_disconnect``).
* ``cc=True`` (implies ``imm_api=False``): DOCA 2.6's ``libdoca_cc``, every symbol
  renamed ``doca_cc_*`` (and the two 2.6 spellings of §6.3).
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char, c_char_p, c_int, c_uint8, c_uint32, c_void_p
from pathlib import Path

from doca_py.native.capi._decl import Decl

from . import attach_common, c_str, compile_library

__all__ = ["FAKE_COMCH_DECLS", "attach", "build_fake_comch", "RECV_DATA", "RECV_IMM", "RECV_PRODUCER_ID",
           "BAD_CONSUMER_ID", "MAX_MSG_SIZE", "MAX_NAME_LEN", "MAX_IMM_DATA_LEN", "MAX_CLIENTS", "FIRST_ID"]

MAX_MSG_SIZE = 4080
MAX_NAME_LEN = 64
MAX_IMM_DATA_LEN = 32
MAX_CLIENTS = 8
RECV_DATA = b"fake-produced"
RECV_IMM = b"\x01imm\x00"
RECV_PRODUCER_ID = 77
BAD_CONSUMER_ID = 0xDEAD
#: First consumer / producer id handed out.
FIRST_ID = 100

FAKE_COMCH_DECLS: tuple[Decl, ...] = (
    Decl("fake_comch_live", c_int, ()),
    Decl("fake_comch_last_msg", c_uint32, (POINTER(c_char),)),
    Decl("fake_comch_last_produced", c_uint32,
         (POINTER(c_char), POINTER(c_uint8), POINTER(c_uint32), POINTER(c_uint32))),
    Decl("fake_comch_server_incoming", c_int, (c_void_p, POINTER(c_void_p))),
    Decl("fake_comch_incoming_msg", c_int, (c_void_p, c_char_p, c_uint32)),
    Decl("fake_comch_remote_consumer", c_int, (c_void_p, c_uint32, c_uint8)),
)
"""The fake-only helpers (bind them with :func:`~doca_py.native.capi.bind`)."""

# The two DOCA 2.6 spellings that are not a plain prefix change (§6.3); the longer
# prefixes come first, so they win over the plain rename.
_RENAMES_26 = {
    "doca_comch_server_event_connection_status_changed_register": "doca_cc_server_event_connection_register",
    "doca_comch_server_get_device_rep": "doca_cc_server_get_device_repr",
    "doca_comch_": "doca_cc_",
}


def params(*, imm_api: bool = True, cc: bool = False) -> dict[str, object]:
    """The ``params.h`` of one build."""
    return {
        "IMM_API": int(imm_api and not cc),
        "RECV_DATA": c_str(RECV_DATA),
        "RECV_LEN": len(RECV_DATA),
        "RECV_IMM_C": c_str(RECV_IMM),
        "RECV_IMM_LEN": len(RECV_IMM),
        "RECV_PRODUCER_ID": RECV_PRODUCER_ID,
        "BAD_CONSUMER_ID": BAD_CONSUMER_ID,
        "MAX_CLIENTS": MAX_CLIENTS,
        "MAX_MSG_SIZE": MAX_MSG_SIZE,
        "MAX_NAME_LEN": MAX_NAME_LEN,
        "MAX_IMM": MAX_IMM_DATA_LEN,
        "FIRST_ID": FIRST_ID,
    }


def build_fake_comch(dest: Path, *, imm_api: bool = True, cc: bool = False) -> Path:
    """Compile the fake into *dest* as ``libdoca_comch.so`` (``libdoca_cc.so`` with ``cc=True``).

    Raises :class:`~tests.native.fakelib.FakeBuildError` without a compiler or on a
    compile error.
    """
    name = "cc" if cc else "comch"
    return compile_library("comch.c", dest, f"libdoca_{name}.so", params(imm_api=imm_api, cc=cc),
                           renames=_RENAMES_26 if cc else None)


def attach(comch: ctypes.CDLL, common: ctypes.CDLL) -> None:
    """Give the fake comch the fake libdoca_common it creates ctxs and tasks with."""
    attach_common(comch, "fake_comch_attach", common,
                  ("fake_ctx_create", "fake_ctx_destroy", "fake_ctx_set_task_cb", "fake_task_alloc_init",
                   "doca_task_submit", "doca_task_free", "doca_ctx_get_state"))
