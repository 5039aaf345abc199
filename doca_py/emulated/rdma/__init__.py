"""Emulated ``doca_rdma``: connections over TCP, one-sided access through shared memory.

* **State machine.** The rules of the DOCA version presented (:mod:`.version`, read at
  ``start``). 3.x: ``start`` returns STARTING and the next ``progress`` makes the ctx
  RUNNING without any connection ("ready to export and connect"). 2.6: the ctx stays
  STARTING until ``connect`` was called, then the next ``progress`` makes it RUNNING.
  Both: ``export``/``connect`` work while STARTING or RUNNING; a second ``connect`` on a
  connection is ``BAD_STATE``.
* **Connections.** ``start`` opens a TCP listener (``DOCA_PY_RDMA_BIND_ADDR``, default
  ``127.0.0.1``, port 0). Each ``export`` allocates a connection and returns a blob
  naming the listener, this host (boot id), this process and a random 128-bit key.
  ``connect`` dials the peer's listener and proves it holds the peer's key; the peer
  does the same, so each connection has two streams (see :mod:`..transport.stream`, :mod:`.wire`); it is
  established once both are up. The RDMA-CM flow (``start_listen_to_port`` /
  ``connect_to_addr`` / ``accept``) builds the same two streams after a request/accept
  exchange on the CM port.
* **Tasks.** ``submit`` queues the task (the base :class:`EmuTask` rules) and puts it on
  its queue: the connection's send queue or the ctx's receive queue. Inside
  ``progress`` the work starts in submission order per queue, as on a queue pair: a
  send is framed (its source read then), a receive posted, a same-host read or write
  copied. A task on a connection whose peer has not connected yet waits, as on an RC
  queue pair, until the connection is up, breaks (``CONNECTION_RESET``) or the connect
  window (``DOCA_PY_RDMA_CONNECT_WINDOW``, default 5 s) ends (``TIME_OUT``). A submit on
  an exported connection that was never connected is refused (``NOT_CONNECTED``).
  Local buffers must be in maps that have the ctx's device added (else
  ``NOT_PERMITTED``); the remote buffer of read, write and atomics is one buffer (the
  head of a chain).
* **send / receive.** A send is a frame on the stream this side dialed. The peer's I/O
  thread copies it into the oldest posted receive of the peer ctx and acknowledges;
  acknowledgements are batched. With no receive posted the stream stalls (nothing
  later on it is processed) for the sender's receiver-not-ready window; then the
  send fails with ``DOCA_ERROR_TIME_OUT``.
* **read / write.** Peers on the same host (equal boot ids) access the exporter's
  memory directly through :meth:`EmuMmap.ptr` (zero copy; range, RDMA permission and
  revocation checked on every access), inside ``progress``. Peers on different hosts
  send the request to the connection peer, whose I/O thread resolves the mmap blob
  itself (key and revocation), checks range and RDMA_READ/RDMA_WRITE permission of the
  map and of its ctx, and only then touches memory. Atomics always go to the peer,
  whose single I/O thread serialises them.
* **Failures.** A stream that dies fails every task waiting on it with
  ``DOCA_ERROR_CONNECTION_RESET`` (the first failed task moves the ctx to STOPPING as
  any failed task does) and reports the connection's disconnection (or failure,
  before it was established) through the connection state callbacks. A failed
  connection keeps its slot until ``disconnect`` (or a stop) releases it. ``connect``
  to a peer whose side is gone since its export (its ctx stopped or restarted, or it
  released the connection) succeeds, as DOCA's local connect does, and fails the
  connection; only a malformed, forged or replayed blob is refused at once.
* **Silent peers.** Work waiting for the peer's response (``pending``) runs a retry-window
  timer on the I/O thread (``DOCA_PY_RDMA_RETRY_WINDOW``, default 4 s): when the peer gave no
  sign of life for a whole window (no byte on either stream, no room made in a full socket),
  the connection breaks with ``DOCA_ERROR_IO_FAILED``, as an RC queue pair whose transport
  retries ran out. A receiver stalled for want of a receive sends RNR NAKs (``R_RNR``) meanwhile.
  No timer runs while nothing waits.

Layers (:data:`LAYERS`), bottom-up; a module imports only modules before it, type-only
imports included, and reaches a later one through an interface handed down to it:

    config → caps → wire → segments → work → shm → ring_poll → connection → settings → tasks → remote_tasks → task_alloc → serve → ctx → sync_event_tasks

:mod:`.work` holds the task bases the rings and queues complete (:class:`.tasks.RdmaTask`
extends them); :class:`.shm.RingOwner`/:class:`.shm.RingPeer` and
:class:`.connection.ConnectionOwner` are the ctx and connection as the lower modules see them
(:class:`EmuRdma` and :class:`EmuRdmaConnection` satisfy them); :class:`.tasks.RdmaTaskCtx`
declares what the tasks use of the ctx. No name with a leading underscore is used outside
its module.
"""

from __future__ import annotations

from .config import (  # noqa: F401
    C_BROKEN,
    C_CLOSED,
    C_CONNECTING,
    C_ESTABLISHED,
    C_NEW,
    C_REQUESTED,
    DEFAULT_CONNECT_WINDOW,
    DEFAULT_QUEUE_SIZE,
    DEFAULT_RETRY_WINDOW,
    EV_DISCONNECTION,
    EV_ESTABLISHED,
    EV_FAILURE,
    EV_REQUEST,
    F_CAS,
    F_IMM,
    F_NODATA,
    GID_TABLE_SIZE,
    MAX_BUF_LIST_LEN,
    MAX_MESSAGE_SIZE,
    MAX_NUM_CONNECTIONS,
    MAX_NUM_TASKS,
    MAX_QUEUE_SIZE,
    OP_RECV_SEND,
    OP_RECV_SEND_WITH_IMM,
    OP_RECV_WRITE_WITH_IMM,
    R_ACK,
    R_DATA,
    R_ERR,
    R_RNR,
    T_ATOMIC,
    T_DISC,
    T_MAP,
    T_READ,
    T_SEND,
    T_WRITE,
    configure,
    host_id,
    rnr_window,
    cfg,
)
from .wire import (  # noqa: F401
    BLOB_SIZE,
    ConnBlob,
    decode_blob,
    encode_blob,
    used_keys as _used_keys,  # the replay check's memory, for tests
    used_lock as _used_lock,
)
from .connection import (  # noqa: F401
    EmuRdmaConnection,
)
from .remote_tasks import (  # noqa: F401
    EmuRdmaTaskAtomic,
    EmuRdmaTaskRead,
    EmuRdmaTaskWrite,
)
from .tasks import (  # noqa: F401
    EmuRdmaTaskReceive,
    EmuRdmaTaskSend,
)
from .serve import (  # noqa: F401
    conn_responses,
)
from .ctx import (  # noqa: F401
    EmuRdma,
    rdma_create,
)
from .caps import (  # noqa: F401
    cap_get_gid,
    cap_get_gid_table_size,
    cap_get_max_message_size,
    cap_get_max_num_tasks,
    cap_get_max_recv_queue_size,
    cap_get_max_send_buf_list_len,
    cap_get_max_send_queue_size,
    cap_task_is_supported,
    cap_task_receive_get_max_dst_buf_list_len,
    cap_transport_type_is_supported,
)

#: The package's modules bottom-up: each imports only those before it.
LAYERS = ("config", "caps", "wire", "segments", "work", "shm", "ring_poll", "connection", "settings", "tasks",
          "remote_tasks", "task_alloc", "serve", "ctx", "sync_event_tasks", "__init__")

__all__ = [
    "EmuRdma", "EmuRdmaConnection", "rdma_create", "configure", "host_id", "decode_blob", "MAX_MESSAGE_SIZE",
    "MAX_BUF_LIST_LEN", "MAX_QUEUE_SIZE", "MAX_NUM_CONNECTIONS", "ConnBlob", "rnr_window",
    "cap_get_max_recv_queue_size", "cap_get_max_send_queue_size", "cap_get_max_send_buf_list_len",
    "cap_get_max_message_size", "cap_get_gid_table_size", "cap_get_gid", "cap_transport_type_is_supported",
    "cap_task_is_supported", "cap_task_receive_get_max_dst_buf_list_len", "cap_get_max_num_tasks",
]
