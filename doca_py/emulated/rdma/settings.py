"""The typed attributes of the emulated rdma ctx (``doca_rdma_set_*`` / ``get_*``), checked as DOCA does."""

from __future__ import annotations

from ..._backend.settings import RdmaSettingMethods
from collections.abc import Callable

from ...errors import (
    DocaInvalidValue,
    DocaNotSupported,
)
from ...types import AccessFlag as A
from .. import version as emu_version
from ..ctx import EmuCtx
from .connection import CONNECTIONS_SINCE, EmuRdmaConnection, need_connections
from .config import GID_TABLE_SIZE, MAX_BUF_LIST_LEN, MAX_NUM_CONNECTIONS, MAX_QUEUE_SIZE, NOT_RDMA

#: Settings whose setter and getter exist from DOCA 3.0 (``max_num_connections`` is 1 before: see ``_set``).
_SINCE_30 = frozenset({"rnr_retry_count", "connection_request_timeout"})


class RdmaSettings(RdmaSettingMethods, EmuCtx):
    """The settable attributes of :class:`EmuRdma` (setters only while IDLE)."""

    conn_cb: Callable[[int, EmuRdmaConnection], None] | None

    # -- attributes (idle only for setters) -----------------------------------------------------
    _ATTRS = {"permissions": "perms", "transport_type": "transport", "gid_index": "gid_index",
              "max_num_connections": "max_conns", "mtu": "mtu", "recv_queue_size": "recv_queue",
              "send_queue_size": "send_queue", "max_send_buf_list_len": "send_list_len",
              "receive_dst_buf_list_len": "recv_list_len", "grh_enabled": "grh", "sl": "sl",
              "rnr_retry_count": "rnr_retry", "connection_request_timeout": "cm_timeout_ms"}

    def _set(self, name: str, value: int) -> None:
        if name in _SINCE_30:
            emu_version.require(f"doca_rdma_set_{name}", CONNECTIONS_SINCE, "added after 2.6")
        self._configurable("task_receive_set_dst_buf_list_len" if name == "receive_dst_buf_list_len" else f"set_{name}")
        attr = self._ATTRS[name]
        v = int(value)
        if v < 0:
            raise DocaInvalidValue(f"{name} must not be negative")
        if name == "permissions":
            if v & ~int(sum(A)):
                raise DocaInvalidValue(f"unknown access flag bits in {v:#x}")
            if v & NOT_RDMA:
                raise DocaInvalidValue(f"doca_rdma_set_permissions takes the local and RDMA access flags; "
                                       f"{A(v & NOT_RDMA)!r} are not RDMA flags")
        elif name == "transport_type":
            if v not in (0, 1):
                raise DocaInvalidValue(f"unknown transport type {v}")
            if v == 1:
                raise DocaNotSupported("the emulated device supports the RC transport only")
        elif name == "mtu" and v > 4:
            raise DocaInvalidValue(f"unsupported mtu enum value {v}")
        elif name in ("recv_queue_size", "send_queue_size"):
            if not 0 < v <= MAX_QUEUE_SIZE:
                raise DocaInvalidValue(f"{name} must be in 1..{MAX_QUEUE_SIZE}")
            v = 1 << (v - 1).bit_length()
        elif name in ("max_send_buf_list_len", "receive_dst_buf_list_len") and not 0 < v <= MAX_BUF_LIST_LEN:
            raise DocaInvalidValue(f"{name} must be in 1..{MAX_BUF_LIST_LEN}")
        elif name == "max_num_connections" and not 0 < v <= MAX_NUM_CONNECTIONS:
            raise DocaInvalidValue(f"max_num_connections must be in 1..{MAX_NUM_CONNECTIONS}")
        elif name == "max_num_connections" and v != 1 and emu_version.VERSION < CONNECTIONS_SINCE:
            raise need_connections(f"max_num_connections={v} (doca_rdma_set_max_num_connections)")
        elif name == "gid_index" and v >= GID_TABLE_SIZE:
            raise DocaInvalidValue(f"gid_index {v} is outside the GID table (size {GID_TABLE_SIZE})")
        elif name == "rnr_retry_count" and v > 7:
            raise DocaInvalidValue("rnr_retry_count is at most 7")
        elif name == "connection_request_timeout" and v > 0xFFFF:
            raise DocaInvalidValue("connection_request_timeout is a 16-bit number of milliseconds")
        setattr(self, attr, v)

    def _get(self, name: str) -> int:
        if emu_version.VERSION < CONNECTIONS_SINCE:
            if name in _SINCE_30:
                emu_version.require(f"doca_rdma_get_{name}", CONNECTIONS_SINCE, "added after 2.6")
            if name == "max_num_connections":
                return 1  # DOCA 2.6: one implicit connection per ctx
        return int(getattr(self, self._ATTRS[name]))

    def set_connection_state_cb(self, cb: Callable[[int, EmuRdmaConnection], None]) -> None:
        emu_version.require("doca_rdma_set_connection_state_callbacks", CONNECTIONS_SINCE,
                            "DOCA 2.6 has no connection objects: a lost peer fails the ctx's tasks")
        self._configurable("set_connection_state_callbacks")
        self.conn_cb = cb
