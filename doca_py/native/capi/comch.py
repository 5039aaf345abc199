"""Raw declarations of libdoca_comch and its DOCA 2.6 predecessor libdoca_cc
(``doca-c-api.md`` §2.10–2.12, §4.3, §6.2–6.5).

[`COMCH`][doca_py.native.capi.comch.COMCH] holds every exported function of the 3.0.0058 ``doca_comch.h``,
``doca_comch_consumer.h`` and ``doca_comch_producer.h`` in header order, with its 3.x
signature; rows added after 2.6 carry ``since=(3, 0)``. [`CC_26`][doca_py.native.capi.comch.CC_26] holds the 70
DOCA 2.6 ``doca_cc_*`` functions of libdoca_cc (§6.3): the same functions under the
old prefix, two of them differently named ([`RENAMES_26`][doca_py.native.capi.comch.RENAMES_26]), registered as their
own table under the library name ``"cc"``.

One symbol changed ABI (§6.2 #15): ``doca_comch_producer_task_send_alloc_init`` gained
``uint8_t *imm_data, uint32_t imm_data_len`` before the consumer id. Its 2.x signature
is a [`Variant`][doca_py.native.capi.Variant] chosen by the *absence* of
[`IMM_MARKER`][doca_py.native.capi.comch.IMM_MARKER] (``doca_comch_producer_task_send_get_imm_data``), which arrived
with immediate data; ``doca_cc_producer_task_send_alloc_init`` has the old signature.

Callbacks (§4.3): [`ComchEventMsgRecvCb`][doca_py.native.capi.comch.ComchEventMsgRecvCb] (``recv_buffer`` is a ``c_void_p``
address, valid only during the call: copy it with ``ctypes.string_at``),
[`ComchEventConnectionStatusChangedCb`][doca_py.native.capi.comch.ComchEventConnectionStatusChangedCb] and [`ComchEventConsumerCb`][doca_py.native.capi.comch.ComchEventConsumerCb]; task
callbacks are [`TaskCompletionCb`][doca_py.native.capi.TaskCompletionCb]. ``uint8_t *`` data
pointers (immediate data) are ``c_void_p`` (pass ``bytes`` or a ctypes buffer; the
``const uint8_t *`` returns come back as addresses). DPA handles
(``doca_dpa_dev_comch_*_t``) are ``uint64_t``.

[`load_comch`][doca_py.native.capi.comch.load_comch] returns the comch functions under their 3.x names whichever
library the runtime has: libdoca_comch, or on DOCA 2.6 libdoca_cc seen through
[`RENAMES_26`][doca_py.native.capi.comch.RENAMES_26] (3.x-only functions are then ``DocaNotSupported`` stubs):

```python
import ctypes
from doca_py import errors
from doca_py.native.capi.comch import load_comch

lib = load_comch()
client = ctypes.c_void_p()
errors.check(lib.doca_comch_client_create(dev_ptr, b"svc", ctypes.byref(client)), "doca_comch_client_create")
```
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_uint8, c_uint32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, cast

from .. import loader
from ._decl import BoundLib, Decl, MissingFunction, TaskCompletionCb, format_version, pre3, register

if TYPE_CHECKING:
    from ._raw import ComchLib

__all__ = [
    "COMCH",
    "CC_26",
    "RENAMES_26",
    "LIBNAME",
    "LIBNAME_26",
    "IMM_MARKER",
    "ComchEventMsgRecvCb",
    "ComchEventConnectionStatusChangedCb",
    "ComchEventConsumerCb",
    "comch_view",
    "load_comch",
]

LIBNAME = "comch"
LIBNAME_26 = "cc"

#: Present from the release whose producer send task carries immediate data (§6.2 #15).
IMM_MARKER = "doca_comch_producer_task_send_get_imm_data"

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *, const void *, uint8_t * data
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
CB = TaskCompletionCb  # doca_comch_*task*_completion_cb_t
ENUM = c_int
U32 = c_uint32
U32_P = POINTER(c_uint32)
U64_P = POINTER(c_uint64)  # uint64_t *, doca_dpa_dev_comch_*_t *

ComchEventMsgRecvCb = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_uint32, c_void_p)
"""``doca_comch_event_msg_recv_cb_t(event, recv_buffer, msg_len, connection)``; the buffer
is valid only during the call."""

ComchEventConnectionStatusChangedCb = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_uint8)
"""``doca_comch_event_connection_status_changed_cb_t(event, connection, change_successful)``
(both the connect and the disconnect callback)."""

ComchEventConsumerCb = ctypes.CFUNCTYPE(None, c_void_p, c_void_p, c_uint32)
"""``doca_comch_event_consumer_cb_t(event, connection, remote_consumer_id)`` (new and expired)."""

# "—" rows of doca-c-api.md: absent in 2.6.0058 (libdoca_cc), present in 3.0.0058.
_NEW: dict[str, Any] = {"since": (3, 0), "note": "added after 2.6"}
_DPA: dict[str, Any] = {"since": (3, 0), "note": "added after 2.6; DPA datapath only"}


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


# 2.x doca_comch_producer_task_send_alloc_init(producer, buf, consumer_id, →task): no imm_data, imm_data_len.
_PRODUCER_ALLOC_26 = (P, P, U32, OUT)

COMCH: tuple[Decl, ...] = (
    # -- §2.10 core: connection, capabilities, server, client, send task, events (rows 1–42)
    _f("doca_comch_connection_set_user_data", ERR, P, DATA),
    _f("doca_comch_connection_get_user_data", DATA, P),
    _f("doca_comch_server_get_server_ctx", P, P),
    _f("doca_comch_client_get_client_ctx", P, P),
    _f("doca_comch_cap_get_max_name_len", ERR, P, U32_P),
    _f("doca_comch_cap_get_max_msg_size", ERR, P, U32_P),
    _f("doca_comch_cap_get_max_recv_queue_size", ERR, P, U32_P),
    _f("doca_comch_cap_get_max_clients", ERR, P, U32_P),
    _f("doca_comch_server_create", ERR, P, P, c_char_p, OUT),
    _f("doca_comch_server_destroy", ERR, P),
    _f("doca_comch_cap_server_is_supported", ERR, P),
    _f("doca_comch_server_set_max_msg_size", ERR, P, U32),
    _f("doca_comch_server_get_max_msg_size", ERR, P, U32_P),
    _f("doca_comch_server_set_recv_queue_size", ERR, P, U32),
    _f("doca_comch_server_get_recv_queue_size", ERR, P, U32_P),
    _f("doca_comch_server_get_device", ERR, P, OUT),
    _f("doca_comch_server_get_device_rep", ERR, P, OUT),
    _f("doca_comch_server_as_ctx", P, P),
    _f("doca_comch_server_disconnect", ERR, P, P, **_NEW),
    _f("doca_comch_client_create", ERR, P, c_char_p, OUT),
    _f("doca_comch_client_destroy", ERR, P),
    _f("doca_comch_cap_client_is_supported", ERR, P),
    _f("doca_comch_client_set_max_msg_size", ERR, P, U32),
    _f("doca_comch_client_get_max_msg_size", ERR, P, U32_P),
    _f("doca_comch_client_set_recv_queue_size", ERR, P, U32),
    _f("doca_comch_client_get_recv_queue_size", ERR, P, U32_P),
    _f("doca_comch_client_get_device", ERR, P, OUT),
    _f("doca_comch_client_as_ctx", P, P),
    _f("doca_comch_client_get_connection", ERR, P, OUT),
    _f("doca_comch_cap_get_max_send_tasks", ERR, P, U32_P),
    _f("doca_comch_server_task_send_set_conf", ERR, P, CB, CB, U32),
    _f("doca_comch_client_task_send_set_conf", ERR, P, CB, CB, U32),
    _f("doca_comch_server_task_send_alloc_init", ERR, P, P, P, U32, OUT),
    _f("doca_comch_client_task_send_alloc_init", ERR, P, P, P, U32, OUT),
    _f("doca_comch_task_send_as_task", P, P),
    _f("doca_comch_server_event_msg_recv_register", ERR, P, ComchEventMsgRecvCb),
    _f("doca_comch_client_event_msg_recv_register", ERR, P, ComchEventMsgRecvCb),
    _f("doca_comch_server_event_connection_status_changed_register", ERR, P,
       ComchEventConnectionStatusChangedCb, ComchEventConnectionStatusChangedCb),
    _f("doca_comch_connection_update_info", ERR, P),
    _f("doca_comch_connection_get_counter", ERR, P, ENUM, U64_P),
    _f("doca_comch_server_event_consumer_register", ERR, P, ComchEventConsumerCb, ComchEventConsumerCb),
    _f("doca_comch_client_event_consumer_register", ERR, P, ComchEventConsumerCb, ComchEventConsumerCb),
    # -- §2.11 consumer (rows 1–35)
    _f("doca_comch_consumer_create", ERR, P, P, OUT),
    _f("doca_comch_consumer_destroy", ERR, P),
    _f("doca_comch_consumer_cap_is_supported", ERR, P),
    _f("doca_comch_consumer_get_id", ERR, P, U32_P),
    _f("doca_comch_consumer_cap_get_max_num_tasks", ERR, P, U32_P),
    _f("doca_comch_consumer_cap_get_max_buf_size", ERR, P, U32_P),
    _f("doca_comch_consumer_cap_get_max_buf_list_len", ERR, P, U32_P, **_NEW),
    _f("doca_comch_consumer_cap_get_max_consumers", ERR, P, U32_P),
    _f("doca_comch_consumer_cap_get_max_imm_data_len", ERR, P, U32_P, **_NEW),
    _f("doca_comch_consumer_get_imm_data_len", ERR, P, U32_P, **_NEW),
    _f("doca_comch_consumer_set_imm_data_len", ERR, P, U32, **_NEW),
    _f("doca_comch_consumer_as_ctx", P, P),
    _f("doca_comch_consumer_completion_create", ERR, OUT, **_DPA),
    _f("doca_comch_consumer_completion_set_dpa_thread", ERR, P, P, **_DPA),
    _f("doca_comch_consumer_completion_destroy", ERR, P, **_DPA),
    _f("doca_comch_consumer_completion_start", ERR, P, **_DPA),
    _f("doca_comch_consumer_completion_stop", ERR, P, **_DPA),
    _f("doca_comch_consumer_completion_get_dpa_handle", ERR, P, U64_P, **_DPA),
    _f("doca_comch_consumer_completion_set_max_num_consumers", ERR, P, U32, **_DPA),
    _f("doca_comch_consumer_completion_get_max_num_consumers", ERR, P, U32_P, **_DPA),
    _f("doca_comch_consumer_completion_set_max_num_recv", ERR, P, U32, **_DPA),
    _f("doca_comch_consumer_completion_get_max_num_recv", ERR, P, U32_P, **_DPA),
    _f("doca_comch_consumer_completion_set_imm_data_len", ERR, P, U32, **_DPA),
    _f("doca_comch_consumer_completion_get_imm_data_len", ERR, P, U32_P, **_DPA),
    _f("doca_comch_consumer_set_dev_max_num_recv", ERR, P, U32, **_DPA),
    _f("doca_comch_consumer_set_completion", ERR, P, P, U32, **_DPA),
    _f("doca_comch_consumer_get_dpa_handle", ERR, P, U64_P, **_DPA),
    _f("doca_comch_consumer_task_post_recv_set_conf", ERR, P, CB, CB, U32),
    _f("doca_comch_consumer_task_post_recv_alloc_init", ERR, P, P, OUT),
    _f("doca_comch_consumer_task_post_recv_get_buf", P, P),
    _f("doca_comch_consumer_task_post_recv_set_buf", None, P, P),
    _f("doca_comch_consumer_task_post_recv_get_producer_id", U32, P),
    _f("doca_comch_consumer_task_post_recv_get_imm_data", P, P, **_NEW),
    _f("doca_comch_consumer_task_post_recv_get_imm_data_len", U32, P, **_NEW),
    _f("doca_comch_consumer_task_post_recv_as_task", P, P),
    # -- §2.12 producer (rows 1–22)
    _f("doca_comch_producer_create", ERR, P, OUT),
    _f("doca_comch_producer_destroy", ERR, P),
    _f("doca_comch_producer_cap_is_supported", ERR, P),
    _f("doca_comch_producer_get_id", ERR, P, U32_P),
    _f("doca_comch_producer_cap_get_max_num_tasks", ERR, P, U32_P),
    _f("doca_comch_producer_cap_get_max_buf_size", ERR, P, U32_P),
    _f("doca_comch_producer_cap_get_max_buf_list_len", ERR, P, U32_P, **_NEW),
    _f("doca_comch_producer_cap_get_max_producers", ERR, P, U32_P),
    _f("doca_comch_producer_as_ctx", P, P),
    _f("doca_comch_producer_set_dev_max_num_send", ERR, P, U32, **_DPA),
    _f("doca_comch_producer_dpa_completion_attach", ERR, P, P, **_DPA),
    _f("doca_comch_producer_get_dpa_handle", ERR, P, U64_P, **_DPA),
    _f("doca_comch_producer_task_send_set_conf", ERR, P, CB, CB, U32),
    _f("doca_comch_producer_task_send_alloc_init", ERR, P, P, P, U32, U32, OUT,
       variants=(pre3(ERR, _PRODUCER_ALLOC_26, marker=IMM_MARKER),)),
    _f("doca_comch_producer_task_send_get_buf", P, P),
    _f("doca_comch_producer_task_send_set_buf", None, P, P),
    _f("doca_comch_producer_task_send_get_consumer_id", U32, P),
    _f("doca_comch_producer_task_send_set_consumer_id", None, P, U32),
    _f("doca_comch_producer_task_send_get_imm_data", P, P, **_NEW),
    _f("doca_comch_producer_task_send_get_imm_data_len", U32, P, **_NEW),
    _f("doca_comch_producer_task_send_set_imm_data", None, P, P, U32, **_NEW),
    _f("doca_comch_producer_task_send_as_task", P, P),
)
"""Every exported libdoca_comch function of DOCA 3.0.0058 in header order (§2.10–2.12)."""


_CC: dict[str, Any] = {"until": (2, 6), "note": "DOCA 2.6 libdoca_cc; renamed doca_comch_* in libdoca_comch"}

RENAMES_26: dict[str, str] = {}
"""3.x name → DOCA 2.6 libdoca_cc name, for the 70 functions 2.6 already had (§6.3)."""


def _cc(name: str, name_3x: str, restype: Any, *argtypes: Any) -> Decl:
    """A 2.6 libdoca_cc row: its own name, the 3.x ``doca_comch_*`` name, its 2.6 signature."""
    RENAMES_26[name_3x] = name
    return Decl(name, restype, tuple(argtypes), **_CC)


# Same signatures as the 3.x rows (a test compares them) except the producer send
# alloc_init, which has no imm_data/imm_data_len yet; two names differ beyond the prefix.
CC_26: tuple[Decl, ...] = (
    _cc("doca_cc_connection_set_user_data", "doca_comch_connection_set_user_data", ERR, P, DATA),
    _cc("doca_cc_connection_get_user_data", "doca_comch_connection_get_user_data", DATA, P),
    _cc("doca_cc_server_get_server_ctx", "doca_comch_server_get_server_ctx", P, P),
    _cc("doca_cc_client_get_client_ctx", "doca_comch_client_get_client_ctx", P, P),
    _cc("doca_cc_cap_get_max_name_len", "doca_comch_cap_get_max_name_len", ERR, P, U32_P),
    _cc("doca_cc_cap_get_max_msg_size", "doca_comch_cap_get_max_msg_size", ERR, P, U32_P),
    _cc("doca_cc_cap_get_max_recv_queue_size", "doca_comch_cap_get_max_recv_queue_size", ERR, P, U32_P),
    _cc("doca_cc_cap_get_max_clients", "doca_comch_cap_get_max_clients", ERR, P, U32_P),
    _cc("doca_cc_server_create", "doca_comch_server_create", ERR, P, P, c_char_p, OUT),
    _cc("doca_cc_server_destroy", "doca_comch_server_destroy", ERR, P),
    _cc("doca_cc_cap_server_is_supported", "doca_comch_cap_server_is_supported", ERR, P),
    _cc("doca_cc_server_set_max_msg_size", "doca_comch_server_set_max_msg_size", ERR, P, U32),
    _cc("doca_cc_server_get_max_msg_size", "doca_comch_server_get_max_msg_size", ERR, P, U32_P),
    _cc("doca_cc_server_set_recv_queue_size", "doca_comch_server_set_recv_queue_size", ERR, P, U32),
    _cc("doca_cc_server_get_recv_queue_size", "doca_comch_server_get_recv_queue_size", ERR, P, U32_P),
    _cc("doca_cc_server_get_device", "doca_comch_server_get_device", ERR, P, OUT),
    _cc("doca_cc_server_get_device_repr", "doca_comch_server_get_device_rep", ERR, P, OUT),
    _cc("doca_cc_server_as_ctx", "doca_comch_server_as_ctx", P, P),
    _cc("doca_cc_client_create", "doca_comch_client_create", ERR, P, c_char_p, OUT),
    _cc("doca_cc_client_destroy", "doca_comch_client_destroy", ERR, P),
    _cc("doca_cc_cap_client_is_supported", "doca_comch_cap_client_is_supported", ERR, P),
    _cc("doca_cc_client_set_max_msg_size", "doca_comch_client_set_max_msg_size", ERR, P, U32),
    _cc("doca_cc_client_get_max_msg_size", "doca_comch_client_get_max_msg_size", ERR, P, U32_P),
    _cc("doca_cc_client_set_recv_queue_size", "doca_comch_client_set_recv_queue_size", ERR, P, U32),
    _cc("doca_cc_client_get_recv_queue_size", "doca_comch_client_get_recv_queue_size", ERR, P, U32_P),
    _cc("doca_cc_client_get_device", "doca_comch_client_get_device", ERR, P, OUT),
    _cc("doca_cc_client_as_ctx", "doca_comch_client_as_ctx", P, P),
    _cc("doca_cc_client_get_connection", "doca_comch_client_get_connection", ERR, P, OUT),
    _cc("doca_cc_cap_get_max_send_tasks", "doca_comch_cap_get_max_send_tasks", ERR, P, U32_P),
    _cc("doca_cc_server_task_send_set_conf", "doca_comch_server_task_send_set_conf", ERR, P, CB, CB, U32),
    _cc("doca_cc_client_task_send_set_conf", "doca_comch_client_task_send_set_conf", ERR, P, CB, CB, U32),
    _cc("doca_cc_server_task_send_alloc_init", "doca_comch_server_task_send_alloc_init", ERR, P, P, P, U32, OUT),
    _cc("doca_cc_client_task_send_alloc_init", "doca_comch_client_task_send_alloc_init", ERR, P, P, P, U32, OUT),
    _cc("doca_cc_task_send_as_task", "doca_comch_task_send_as_task", P, P),
    _cc("doca_cc_server_event_msg_recv_register", "doca_comch_server_event_msg_recv_register", ERR, P, ComchEventMsgRecvCb),
    _cc("doca_cc_client_event_msg_recv_register", "doca_comch_client_event_msg_recv_register", ERR, P, ComchEventMsgRecvCb),
    _cc("doca_cc_server_event_connection_register", "doca_comch_server_event_connection_status_changed_register", ERR, P, ComchEventConnectionStatusChangedCb, ComchEventConnectionStatusChangedCb),
    _cc("doca_cc_connection_update_info", "doca_comch_connection_update_info", ERR, P),
    _cc("doca_cc_connection_get_counter", "doca_comch_connection_get_counter", ERR, P, ENUM, U64_P),
    _cc("doca_cc_server_event_consumer_register", "doca_comch_server_event_consumer_register", ERR, P, ComchEventConsumerCb, ComchEventConsumerCb),
    _cc("doca_cc_client_event_consumer_register", "doca_comch_client_event_consumer_register", ERR, P, ComchEventConsumerCb, ComchEventConsumerCb),
    _cc("doca_cc_consumer_create", "doca_comch_consumer_create", ERR, P, P, OUT),
    _cc("doca_cc_consumer_destroy", "doca_comch_consumer_destroy", ERR, P),
    _cc("doca_cc_consumer_cap_is_supported", "doca_comch_consumer_cap_is_supported", ERR, P),
    _cc("doca_cc_consumer_get_id", "doca_comch_consumer_get_id", ERR, P, U32_P),
    _cc("doca_cc_consumer_cap_get_max_num_tasks", "doca_comch_consumer_cap_get_max_num_tasks", ERR, P, U32_P),
    _cc("doca_cc_consumer_cap_get_max_buf_size", "doca_comch_consumer_cap_get_max_buf_size", ERR, P, U32_P),
    _cc("doca_cc_consumer_cap_get_max_consumers", "doca_comch_consumer_cap_get_max_consumers", ERR, P, U32_P),
    _cc("doca_cc_consumer_as_ctx", "doca_comch_consumer_as_ctx", P, P),
    _cc("doca_cc_consumer_task_post_recv_set_conf", "doca_comch_consumer_task_post_recv_set_conf", ERR, P, CB, CB, U32),
    _cc("doca_cc_consumer_task_post_recv_alloc_init", "doca_comch_consumer_task_post_recv_alloc_init", ERR, P, P, OUT),
    _cc("doca_cc_consumer_task_post_recv_get_buf", "doca_comch_consumer_task_post_recv_get_buf", P, P),
    _cc("doca_cc_consumer_task_post_recv_set_buf", "doca_comch_consumer_task_post_recv_set_buf", None, P, P),
    _cc("doca_cc_consumer_task_post_recv_get_producer_id", "doca_comch_consumer_task_post_recv_get_producer_id", U32, P),
    _cc("doca_cc_consumer_task_post_recv_as_task", "doca_comch_consumer_task_post_recv_as_task", P, P),
    _cc("doca_cc_producer_create", "doca_comch_producer_create", ERR, P, OUT),
    _cc("doca_cc_producer_destroy", "doca_comch_producer_destroy", ERR, P),
    _cc("doca_cc_producer_cap_is_supported", "doca_comch_producer_cap_is_supported", ERR, P),
    _cc("doca_cc_producer_get_id", "doca_comch_producer_get_id", ERR, P, U32_P),
    _cc("doca_cc_producer_cap_get_max_num_tasks", "doca_comch_producer_cap_get_max_num_tasks", ERR, P, U32_P),
    _cc("doca_cc_producer_cap_get_max_buf_size", "doca_comch_producer_cap_get_max_buf_size", ERR, P, U32_P),
    _cc("doca_cc_producer_cap_get_max_producers", "doca_comch_producer_cap_get_max_producers", ERR, P, U32_P),
    _cc("doca_cc_producer_as_ctx", "doca_comch_producer_as_ctx", P, P),
    _cc("doca_cc_producer_task_send_set_conf", "doca_comch_producer_task_send_set_conf", ERR, P, CB, CB, U32),
    _cc("doca_cc_producer_task_send_alloc_init", "doca_comch_producer_task_send_alloc_init", ERR, *_PRODUCER_ALLOC_26),
    _cc("doca_cc_producer_task_send_get_buf", "doca_comch_producer_task_send_get_buf", P, P),
    _cc("doca_cc_producer_task_send_set_buf", "doca_comch_producer_task_send_set_buf", None, P, P),
    _cc("doca_cc_producer_task_send_get_consumer_id", "doca_comch_producer_task_send_get_consumer_id", U32, P),
    _cc("doca_cc_producer_task_send_set_consumer_id", "doca_comch_producer_task_send_set_consumer_id", None, P, U32),
    _cc("doca_cc_producer_task_send_as_task", "doca_comch_producer_task_send_as_task", P, P),
)
"""The DOCA 2.6.0058 libdoca_cc functions (in the 3.x header order), 2.6 signatures."""

register(LIBNAME, COMCH)
register(LIBNAME_26, CC_26)


def comch_view(cc: BoundLib) -> BoundLib:
    """The functions of a bound libdoca_cc under their 3.x ``doca_comch_*`` names.

    Functions 2.6 lacks (and ``doca_cc_*`` symbols the library does not export) are
    [`MissingFunction`][doca_py.native.capi.MissingFunction] stubs naming the 2.6 name and versions.
    """
    table = {d.name: d for d in COMCH}
    view = BoundLib(cc.cdll, cc.libname, cc.version, table)
    missing: set[str] = set()
    for d in COMCH:
        old = RENAMES_26.get(d.name)
        fn = cc.__dict__.get(old) if old is not None else None
        if fn:
            setattr(view, d.name, fn)
            continue
        message = None
        if old is not None:
            message = (f"{d.name} ({old} in DOCA 2.6) is not exported by the loaded libdoca_{cc.libname} "
                       f"(DOCA {format_version(cc.version)}); {d.availability()}")
        setattr(view, d.name, MissingFunction(d, cc.libname, cc.version, message))
        missing.add(d.name)
    view.missing = frozenset(missing)
    return view


_cached: BoundLib | None = None


def load_comch() -> ComchLib:
    """The comch functions under their 3.x names (cached until ``loader.reset()``).

    libdoca_comch if it can be opened, else DOCA 2.6's libdoca_cc through
    [`comch_view`][doca_py.native.capi.comch.comch_view]. Raises [`DocaLibraryNotFound`][doca_py.native.loader.DocaLibraryNotFound]
    (an ``ImportError``) listing the attempts for both when neither opens.
    """
    global _cached
    hit = _cached
    if hit is not None and loader.loaded_path(hit.libname) is not None and loader.load(hit.libname) is hit.cdll:
        return cast("ComchLib", hit)
    from . import load

    try:
        lib = load(LIBNAME)
    except loader.DocaLibraryNotFound as exc:
        try:
            lib = comch_view(load(LIBNAME_26))
        except loader.DocaLibraryNotFound as exc26:
            raise loader.DocaLibraryNotFound(LIBNAME, exc.attempts + exc26.attempts) from None
    _cached = lib
    return cast("ComchLib", lib)
