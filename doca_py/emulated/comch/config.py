"""Capabilities, status codes and the process-wide configuration of the emulated comch."""

from __future__ import annotations

import itertools
import os
import struct
import time

from ...errors import (
    DocaNotSupported,
    ErrorCode,
)
from ...types import AccessFlag
from .. import version as emu_version
from ..ctx import complete_task
from .wire import (
    HDR_SIZE,
)

IDLE, STARTING, RUNNING, STOPPING = 0, 1, 2, 3

#: Comch immediate data (producer sends with imm data, the consumer's imm_data_len) exists from DOCA 3.0.
IMM_SINCE = (3, 0)


def has_imm() -> bool:
    """Whether the presented DOCA has comch immediate data (3.0+; 2.6's libdoca_cc has none)."""
    return emu_version.VERSION >= IMM_SINCE


def need_imm(what: str) -> DocaNotSupported:
    """The error for *what* where the presented DOCA (2.6) has no immediate data, as the native backend words it."""
    return DocaNotSupported(f"{what} needs comch immediate data (DOCA 3.0+: doca_comch_producer_task_send_alloc_init "
                            f"with imm_data/imm_data_len); DOCA {emu_version.VERSION[0]}.{emu_version.VERSION[1]}, "
                            "the version the emulator presents (DOCA_PY_EMU_VERSION), has none")


#: Capabilities of the emulated devices (``doca_comch_cap_*``).
MAX_NAME_LEN = 120  # including the terminating NUL, as DOCA counts it
MAX_MSG_SIZE = 4080
MAX_RECV_QUEUE_SIZE = 1 << 14
DEFAULT_RECV_QUEUE_SIZE = 1024
MAX_CLIENTS = 512
MAX_SEND_TASKS = 1 << 14
MAX_BUF_SIZE = 1 << 20  # producer/consumer buffers (hardware: up to 1 GiB)
MAX_BUF_LIST_LEN = 1
MAX_IMM_DATA_LEN = 32
MAX_NUM_TASKS = 1 << 14
MAX_CONSUMERS = 512
MAX_PRODUCERS = 512

#: Largest frame a peer may send; the receive buffer is sized from it once, so no length
#: read from the wire ever sizes an allocation.
MAX_FRAME = HDR_SIZE + MAX_IMM_DATA_LEN + MAX_BUF_SIZE
RX_SIZE = MAX_FRAME + (64 << 10)

SUCCESS = 0
AGAIN = int(ErrorCode.AGAIN)
NOT_FOUND = int(ErrorCode.NOT_FOUND)
TOO_BIG = int(ErrorCode.TOO_BIG)
RESET = int(ErrorCode.CONNECTION_RESET)
ABORTED = int(ErrorCode.CONNECTION_ABORTED)
NOT_CONNECTED = int(ErrorCode.NOT_CONNECTED)
FULL = int(ErrorCode.FULL)
BAD_STATE = int(ErrorCode.BAD_STATE)
INVALID = int(ErrorCode.INVALID_VALUE)
NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
PCI_READ = int(AccessFlag.PCI_READ_ONLY | AccessFlag.PCI_READ_WRITE)
PCI_WRITE = int(AccessFlag.PCI_READ_WRITE)
complete = complete_task
IO_FAILED = int(ErrorCode.IO_FAILED)
monotonic = time.monotonic

#: Seconds output waiting for the peer (producer data not acknowledged, bytes its socket refused)
#: may see no sign of life from it before the connection is declared dead
#: (``DOCA_PY_COMCH_RETRY_WINDOW``); the same default as rdma's retry window.
DEFAULT_RETRY_WINDOW = 4.0
_retry_window = float(os.environ.get("DOCA_PY_COMCH_RETRY_WINDOW", "") or DEFAULT_RETRY_WINDOW)


#: Same-host shared-memory rings for connections made from now on (``DOCA_PY_COMCH_SHM=1``; opt-in):
#: used when both ends enable them (see :mod:`.shm`).
_shm = os.environ.get("DOCA_PY_COMCH_SHM", "") == "1"


def configure(*, retry_window: float | None = None, shm: bool | None = None) -> None:
    """Override the environment for connections made from now on (tests, tools).

    *retry_window*: seconds work waiting for the peer may see no sign of life from it before it
    fails with ``DOCA_ERROR_IO_FAILED`` and the connection goes down (``0`` restores
    :data:`DEFAULT_RETRY_WINDOW`). *shm*: carry the frames of same-host connections in
    shared-memory rings polled by the progress engines (``DOCA_PY_COMCH_SHM``).
    """
    global _retry_window, _shm
    if retry_window is not None:
        _retry_window = retry_window if retry_window > 0 else DEFAULT_RETRY_WINDOW
    if shm is not None:
        _shm = shm


def shm_enabled() -> bool:
    """Whether connections made from now on offer (client) or accept (server) rings (never on a CPU
    whose rings lack a barrier: :func:`..transport.shmring.usable`)."""
    if not _shm:
        return False
    from ..transport.shmring import usable
    return usable()


def retry_window() -> float:
    """The retry window of connections made from now on (:func:`configure`)."""
    return _retry_window

MSG_HDRS: dict[int, bytes] = {}  # message headers by length (at most max_msg_size + 1 entries)
ids = itertools.count(1)  # consumer and producer ids: unique in the process, never 0
PEERCRED = struct.Struct("3i")
