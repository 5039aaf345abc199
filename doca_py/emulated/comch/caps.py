"""Factories and ``doca_comch_cap_*`` of the emulated devices."""

from __future__ import annotations

from ..._backend.protocols.core import DevInfoHandle
from ..dev import EmuDevInfo
from .config import (
    has_imm,
    MAX_BUF_LIST_LEN, MAX_BUF_SIZE, MAX_CLIENTS, MAX_CONSUMERS, MAX_IMM_DATA_LEN, MAX_MSG_SIZE, MAX_NAME_LEN,
    MAX_NUM_TASKS, MAX_PRODUCERS, MAX_RECV_QUEUE_SIZE, MAX_SEND_TASKS,
)

# -- capabilities --------------------------------------------------------------------------------
def _has_reps(devinfo: DevInfoHandle) -> bool:
    return isinstance(devinfo, EmuDevInfo) and bool(devinfo.spec.reps)


def cap_server_is_supported(devinfo: DevInfoHandle) -> bool:
    return _has_reps(devinfo)


def cap_client_is_supported(devinfo: DevInfoHandle) -> bool:
    return not _has_reps(devinfo)


def cap_get_max_name_len(devinfo: DevInfoHandle) -> int:
    return MAX_NAME_LEN


def cap_get_max_msg_size(devinfo: DevInfoHandle) -> int:
    return MAX_MSG_SIZE


def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return MAX_RECV_QUEUE_SIZE


def cap_get_max_clients(devinfo: DevInfoHandle) -> int:
    return MAX_CLIENTS


def cap_get_max_send_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_SEND_TASKS


def consumer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


def consumer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS


def consumer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_SIZE


def consumer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def consumer_cap_get_max_consumers(devinfo: DevInfoHandle) -> int:
    return MAX_CONSUMERS


def consumer_cap_get_max_imm_data_len(devinfo: DevInfoHandle) -> int:
    return MAX_IMM_DATA_LEN if has_imm() else 0  # DOCA 2.6 has no immediate data


def producer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


def producer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS


def producer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_SIZE


def producer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def producer_cap_get_max_producers(devinfo: DevInfoHandle) -> int:
    return MAX_PRODUCERS
