"""``doca_rdma_cap_*`` of the emulated devices."""

from __future__ import annotations


from ..._backend.protocols.core import DevInfoHandle
from ...errors import (
    DocaInvalidValue,
)
from .config import GID_TABLE_SIZE, MAX_BUF_LIST_LEN, MAX_MESSAGE_SIZE, MAX_NUM_TASKS, MAX_QUEUE_SIZE

# -- capabilities ----------------------------------------------------------------------------------
def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return MAX_QUEUE_SIZE


def cap_get_max_send_queue_size(devinfo: DevInfoHandle) -> int:
    return MAX_QUEUE_SIZE


def cap_get_max_send_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def cap_get_max_message_size(devinfo: DevInfoHandle) -> int:
    return MAX_MESSAGE_SIZE


def cap_get_gid_table_size(devinfo: DevInfoHandle) -> int:
    return GID_TABLE_SIZE


def cap_get_gid(devinfo: DevInfoHandle, start: int, num: int) -> list[bytes]:
    if start < 0 or num < 0 or start + num > GID_TABLE_SIZE:
        raise DocaInvalidValue(f"GID entries [{start}, +{num}) are outside the table (size {GID_TABLE_SIZE})")
    v4 = devinfo.ipv4_addr()
    return [b"\0" * 10 + b"\xff\xff" + v4[:4] for _ in range(num)]


def cap_transport_type_is_supported(devinfo: DevInfoHandle, transport: int) -> bool:
    return transport == 0


def cap_task_is_supported(devinfo: DevInfoHandle, task: str) -> bool:
    return task in ("receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cmp_swp",
                    "atomic_fetch_add")


def cap_task_receive_get_max_dst_buf_list_len(devinfo: DevInfoHandle, transport: int) -> int:
    return MAX_BUF_LIST_LEN


def cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS
