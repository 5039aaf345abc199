"""``python -m tests.storage.silent_initiator NAME``: a comch client ready for one producer send, then idle.

For `tests.storage.test_initiator_evidence`: it connects to the comch server *NAME* on the host device, starts
sends a ``query_storage_request`` (so a bridge's server takes it as its initiator), starts a consumer, posts
one receive and sends a second ``query_storage_request``: on the connection's one byte stream the consumer's
announcement and the receive's credit travel ahead of it, so once the server has that message, a producer
can send to the consumer. Then it only keeps its Pe going until it is killed. The test stops it (SIGSTOP): a send to it then goes
unanswered, as to an initiator that hangs.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import doca_py as d
from doca_py.comch import ComchConsumer, ComchConsumerTaskPostRecv
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from apps.storage.channels.comch_transport import ComchTransport, connect_comch_client
from apps.storage.wire.control import ControlMessage, MessageType

HOST = "3b:00.0"
SIZE = 64
WAIT = 60.0


def _ignore(task: ComchConsumerTaskPostRecv, ud: Any, ctx_ud: Any) -> None:
    pass


def main(name: str) -> int:
    dev = d.Dev.open_by_pci_addr(HOST)
    pe = d.Pe()
    channel, client = connect_comch_client(dev, name, pe, timeout=WAIT)
    transport = channel.transport
    assert isinstance(transport, ComchTransport)
    channel.send(ControlMessage(MessageType.QUERY_STORAGE_REQUEST, 1, 1, None))
    transport.flush(WAIT)
    mm = d.Mmap()
    mm.allocate(SIZE)
    mm.set_permissions(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
    mm.add_dev(dev)
    mm.start()
    inv = d.BufInventory(1)
    consumer = ComchConsumer(client.get_connection(), mm)
    pe.connect_ctx(consumer)
    consumer.task_post_recv_set_conf(_ignore, _ignore, 1)
    consumer.start()
    end = time.monotonic() + WAIT
    while consumer.get_state() != CtxState.RUNNING:
        assert time.monotonic() < end, "the consumer did not start"
        transport.pump(0.01)
    buf = inv.buf_get_by_addr(mm, mm.get_memrange()[0], SIZE)
    consumer.task_post_recv_alloc_init(buf).submit()
    while pe.progress():  # the receive is queued, then its credit goes out
        pass
    channel.send(ControlMessage(MessageType.QUERY_STORAGE_REQUEST, 2, 2, None))
    transport.flush(WAIT)
    while True:
        transport.pump(0.1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
