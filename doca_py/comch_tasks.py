"""The ``doca_comch`` task types: control-message sends and the fast path's receive and send (DOCA 3.x API).

Import these names from [`doca_py.comch`][doca_py.comch] (or ``doca_py``); this module is where they live.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._backend.protocols.comch import ComchConsumerTaskPostRecvHandle, ComchProducerTaskSendHandle
from ._args import wrong_type
from .buf import Buf, freed_buf
from .ctx import Task

if TYPE_CHECKING:
    from .comch import ComchConnection

__all__ = ["ComchTaskSend", "ComchConsumerTaskPostRecv", "ComchProducerTaskSend"]


class ComchTaskSend(Task):
    """``doca_comch_task_send``: one control message to a connection (copied at allocation).

    Completes successfully once the message has been handed to the link."""

    __slots__ = ("_conn",)
    _conn: ComchConnection

    def get_connection(self) -> ComchConnection:
        """Python-only: the connection the task sends on (DOCA has no getter for it)."""
        return self._conn


class _BufTask(Task):
    """A comch task over one buffer."""

    __slots__ = ("_buf",)
    _h: ComchConsumerTaskPostRecvHandle | ComchProducerTaskSendHandle
    _buf: Buf

    def get_buf(self) -> Buf:
        """``doca_comch_<task>_get_buf``: the buf."""
        return self._buf

    def set_buf(self, buf: Buf) -> None:
        """``doca_comch_<task>_set_buf``: replace the buffer (not while in flight)."""
        if not isinstance(buf, Buf):
            raise wrong_type(f"{type(self).__name__}.set_buf", Buf, buf=buf)
        if buf._closed:
            raise freed_buf(f"{type(self).__name__}.set_buf", buf=buf)
        self._h.set_buf(buf._h)
        self._buf = buf


class ComchConsumerTaskPostRecv(_BufTask):
    """``doca_comch_consumer_task_post_recv``: a buffer offered to the peer's producers.

    On success the producer's data follows the buffer's previous data (its data length
    grew by the bytes received)."""

    __slots__ = ()
    _h: ComchConsumerTaskPostRecvHandle

    def get_producer_id(self) -> int:
        """``doca_comch_consumer_task_post_recv_get_producer_id``: the producer that filled the buffer (0 if none)."""
        return int(self._h.producer_id)

    def get_imm_data(self) -> bytes:
        """``doca_comch_consumer_task_post_recv_get_imm_data``: the immediate data sent with the buffer (empty if
        none)."""
        return bytes(self._h.imm)

    def get_imm_data_len(self) -> int:
        """``doca_comch_consumer_task_post_recv_get_imm_data_len``: the imm data len."""
        return len(self._h.imm)


class ComchProducerTaskSend(_BufTask):
    """``doca_comch_producer_task_send``: a buffer's data (plus immediate data) into the next
    posted buffer of a remote consumer.

    [`submit`][doca_py.ctx.Task.submit] raises [`DocaAgain`][doca_py.errors.DocaAgain] while that consumer has no
    buffer posted (``doca_task_submit`` returns ``DOCA_ERROR_AGAIN`` in DOCA 3.x): the task
    is not in flight and stays the caller's; submit it again after a later
    ``Pe.progress()``, as DOCA's samples loop ``do { submit } while (AGAIN)``. The buffer's
    bytes are read when the task runs (in ``progress``), not at submit. The error callback
    reports fatal errors only (``NOT_FOUND`` for an unknown or expired consumer, ``TOO_BIG``,
    a lost connection), and a failed task stops the producer."""

    __slots__ = ()
    _h: ComchProducerTaskSendHandle

    def get_consumer_id(self) -> int:
        """``doca_comch_producer_task_send_get_consumer_id``: the consumer id."""
        return int(self._h.consumer_id)

    def set_consumer_id(self, consumer_id: int) -> None:
        """``doca_comch_producer_task_send_set_consumer_id``: set the consumer id to *consumer_id*."""
        self._h.set_consumer_id(consumer_id)

    def get_imm_data(self) -> bytes:
        """``doca_comch_producer_task_send_get_imm_data``: the imm data."""
        return bytes(self._h.imm)

    def get_imm_data_len(self) -> int:
        """``doca_comch_producer_task_send_get_imm_data_len``: the imm data len."""
        return len(self._h.imm)

    def set_imm_data(self, imm_data: bytes) -> None:
        """``doca_comch_producer_task_send_set_imm_data``: copy *imm_data* (at most
        ``ComchConsumer.cap_get_max_imm_data_len`` bytes) into the task."""
        self._h.set_imm_data(bytes(imm_data))
