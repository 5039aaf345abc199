"""Emulated ``doca_comch``: server, client, connections, producers and consumers.

A server listens on a Unix-domain socket (see :mod:`.wire` for paths and the
wire format); a client connects to it and becomes RUNNING once the handshake is
done. Both ends of a connection carry, on one byte stream, control messages,
consumer announcements, receive credits, producer data and the acknowledgements of
that data.

Tasks follow DOCA 3.x: ``submit`` only checks and queues the task on the ``Pe``; its
work runs in ``Pe.progress()`` (:meth:`EmuTask._begin`): a message or producer task then
appends its frame to the connection's output buffer (reading the producer's source
buffer at that moment) and posts one flush per progress engine and batch, so many
frames leave in one ``send``; the I/O thread finishes what the socket refuses. A
message task completes once its bytes are in the socket; a producer task completes
when the peer's I/O thread acknowledges the data landing in a posted receive buffer.

Credits: a consumer's posted receives are announced to the other side with CREDIT
frames (once the receive is queued, in ``progress``), and the connection counts them per
remote consumer. A producer send spends one credit at ``submit``; with none left
``submit`` raises ``DocaAgain`` and the caller keeps the task, as ``doca_task_submit``
returns ``DOCA_ERROR_AGAIN`` when the consumer has no receive posted. Should a credit
turn out to be stale (the consumer restarted, or was not running yet), the receiving
side answers ``AGAIN`` and the task waits, still in flight, for the next credit of that
consumer: ``AGAIN`` never reaches a completion callback. Waiting tasks fail only for a
real reason (the consumer expired, the connection died, the producer stopped).

Receiving: the I/O thread parses and validates frames, copies producer data straight
into the consumer's posted buffer (through :meth:`EmuMmap.view`, which checks range and
permission), and posts batches of control messages, events and completions to the
owning ``Pe``. It never runs user code.

Silent peers: while producer data waits for the peer's ACK or the socket refuses our bytes, a
retry-window timer runs on the I/O thread (``DOCA_PY_COMCH_RETRY_WINDOW``, default 4 s); a peer
that shows no sign of life (no byte read, no room made) for a whole window is dropped as a
crashed one, its waiting tasks failing with ``DOCA_ERROR_IO_FAILED``. Nothing runs when idle.

Layers (:data:`LAYERS`), bottom-up; a module imports only modules before it, type-only
imports included, and reaches a later one through an interface handed down to it:

    wire → config → caps → common → tasks → shm → receive → connection → endpoints → datapath

The tasks see their connection and ctx as :class:`.tasks.SendQueue`, :class:`.tasks.Batching`,
:class:`.tasks.ProducerSide` and :class:`.tasks.ConsumerSide`; the rings see a connection and its
endpoint as :class:`.shm.LinkedConnection` and :class:`.shm.LinkOwner`; a connection sees its
endpoint, consumers and producers as :class:`.receive.ConnectionOwner`, :class:`.receive.LocalConsumer`
and :class:`.receive.LocalProducer` (Protocols the classes of the higher modules satisfy). No name
with a leading underscore is used outside its module.
"""

from __future__ import annotations

from .config import (  # noqa: F401
    DEFAULT_RECV_QUEUE_SIZE,
    DEFAULT_RETRY_WINDOW,
    MAX_BUF_LIST_LEN,
    MAX_BUF_SIZE,
    MAX_CLIENTS,
    MAX_CONSUMERS,
    MAX_FRAME,
    MAX_IMM_DATA_LEN,
    MAX_MSG_SIZE,
    MAX_NAME_LEN,
    MAX_NUM_TASKS,
    MAX_PRODUCERS,
    MAX_RECV_QUEUE_SIZE,
    MAX_SEND_TASKS,
    RX_SIZE,
    configure,
)
from .connection import (  # noqa: F401
    EmuComchConnection,
)
from .tasks import (  # noqa: F401
    EmuComchConsumerTaskPostRecv,
    EmuComchProducerTaskSend,
    EmuComchTaskSend,
)
from .endpoints import (  # noqa: F401
    EmuComchClient,
    EmuComchServer,
    client_create,
    server_create,
)
from .datapath import (  # noqa: F401
    EmuComchConsumer,
    EmuComchProducer,
    consumer_create,
    producer_create,
)
from .caps import (  # noqa: F401
    cap_client_is_supported,
    cap_get_max_clients,
    cap_get_max_msg_size,
    cap_get_max_name_len,
    cap_get_max_recv_queue_size,
    cap_get_max_send_tasks,
    cap_server_is_supported,
    consumer_cap_get_max_buf_list_len,
    consumer_cap_get_max_buf_size,
    consumer_cap_get_max_consumers,
    consumer_cap_get_max_imm_data_len,
    consumer_cap_get_max_num_tasks,
    consumer_cap_is_supported,
    producer_cap_get_max_buf_list_len,
    producer_cap_get_max_buf_size,
    producer_cap_get_max_num_tasks,
    producer_cap_get_max_producers,
    producer_cap_is_supported,
)

#: The package's modules bottom-up: each imports only those before it.
LAYERS = ("wire", "config", "caps", "common", "tasks", "shm", "receive", "connection", "endpoints", "datapath",
          "__init__")

__all__ = [
    "EmuComchServer",
    "EmuComchClient",
    "EmuComchConnection",
    "EmuComchConsumer",
    "EmuComchProducer",
    "EmuComchTaskSend",
    "EmuComchConsumerTaskPostRecv",
    "EmuComchProducerTaskSend",
    "server_create",
    "client_create",
    "consumer_create",
    "producer_create",
    "MAX_NAME_LEN",
    "MAX_MSG_SIZE",
    "MAX_RECV_QUEUE_SIZE",
    "DEFAULT_RECV_QUEUE_SIZE",
    "MAX_CLIENTS",
    "MAX_SEND_TASKS",
    "MAX_BUF_SIZE",
    "MAX_IMM_DATA_LEN",
    "MAX_NUM_TASKS",
    "MAX_CONSUMERS",
    "MAX_PRODUCERS",
    "cap_server_is_supported",
    "cap_client_is_supported",
    "cap_get_max_name_len",
    "cap_get_max_msg_size",
    "cap_get_max_recv_queue_size",
    "cap_get_max_clients",
    "cap_get_max_send_tasks",
    "consumer_cap_is_supported",
    "consumer_cap_get_max_num_tasks",
    "consumer_cap_get_max_buf_size",
    "consumer_cap_get_max_buf_list_len",
    "consumer_cap_get_max_consumers",
    "consumer_cap_get_max_imm_data_len",
    "producer_cap_is_supported",
    "producer_cap_get_max_num_tasks",
    "producer_cap_get_max_buf_size",
    "producer_cap_get_max_buf_list_len",
    "producer_cap_get_max_producers",
    "configure",
    "DEFAULT_RETRY_WINDOW",
]
