"""The typed setting methods of ``doca_rdma``, shared by both backends.

Each backend implements one ``_set(name, value)`` / ``_get(name)`` pair (the emulator
validates and stores; native calls the DOCA setter named in its declaration table); the
typed methods that the contract (:class:`~doca_py._backend.protocols.rdma.RdmaHandle`)
names after DOCA's setters are written once, here.
"""

from __future__ import annotations

__all__ = ["RdmaSettingMethods"]


class RdmaSettingMethods:
    """``set_<name>`` / ``get_<name>`` for every ``doca_rdma_set_<name>`` setting."""

    __slots__ = ()

    def _set(self, name: str, value: int) -> None:
        raise NotImplementedError

    def _get(self, name: str) -> int:
        raise NotImplementedError

    def set_permissions(self, value: int) -> None:
        self._set("permissions", value)

    def get_permissions(self) -> int:
        return self._get("permissions")

    def set_transport_type(self, value: int) -> None:
        self._set("transport_type", value)

    def get_transport_type(self) -> int:
        return self._get("transport_type")

    def set_gid_index(self, value: int) -> None:
        self._set("gid_index", value)

    def get_gid_index(self) -> int:
        return self._get("gid_index")

    def set_max_num_connections(self, value: int) -> None:
        self._set("max_num_connections", value)

    def get_max_num_connections(self) -> int:
        return self._get("max_num_connections")

    def set_mtu(self, value: int) -> None:
        self._set("mtu", value)

    def get_mtu(self) -> int:
        return self._get("mtu")

    def set_recv_queue_size(self, value: int) -> None:
        self._set("recv_queue_size", value)

    def get_recv_queue_size(self) -> int:
        return self._get("recv_queue_size")

    def set_send_queue_size(self, value: int) -> None:
        self._set("send_queue_size", value)

    def get_send_queue_size(self) -> int:
        return self._get("send_queue_size")

    def set_max_send_buf_list_len(self, value: int) -> None:
        self._set("max_send_buf_list_len", value)

    def get_max_send_buf_list_len(self) -> int:
        return self._get("max_send_buf_list_len")

    def set_receive_dst_buf_list_len(self, value: int) -> None:
        """``doca_rdma_task_receive_set_dst_buf_list_len``."""
        self._set("receive_dst_buf_list_len", value)

    def get_receive_dst_buf_list_len(self) -> int:
        return self._get("receive_dst_buf_list_len")

    def set_grh_enabled(self, value: bool) -> None:
        self._set("grh_enabled", int(value))

    def get_grh_enabled(self) -> bool:
        return bool(self._get("grh_enabled"))

    def set_sl(self, value: int) -> None:
        self._set("sl", value)

    def get_sl(self) -> int:
        return self._get("sl")

    def set_rnr_retry_count(self, value: int) -> None:
        self._set("rnr_retry_count", value)

    def get_rnr_retry_count(self) -> int:
        return self._get("rnr_retry_count")

    def set_connection_request_timeout(self, value: int) -> None:
        self._set("connection_request_timeout", value)

    def get_connection_request_timeout(self) -> int:
        return self._get("connection_request_timeout")
