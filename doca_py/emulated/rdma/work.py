"""An rdma task as the layers below :mod:`.tasks` see it: queued, started, completed.

The rings (:mod:`.shm`) and the connection's queues (:mod:`.connection`) hold tasks and
complete them, but are lower than :mod:`.tasks`: they know a task through these bases,
which :class:`.tasks.RdmaTask` and :class:`.tasks.EmuRdmaTaskReceive` extend. They add
no slot and no state of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ctx import EmuTask

if TYPE_CHECKING:
    from ..buf import EmuBuf

__all__ = ["Work", "ReceiveWork"]


class Work(EmuTask):
    """A task on an rdma queue: a connection's send queue or the ctx's receive queue."""

    if not TYPE_CHECKING:  # the slots are the task classes': no __dict__ (hidden from mypy's slot check)
        __slots__ = ()
    if TYPE_CHECKING:  # set by :class:`.tasks.RdmaTask`
        fifo: object  # the :class:`.connection.Fifo` it waits in, or None
        ready: bool
        nbytes: int

    def go(self) -> None:
        """Start the work (Pe thread, inside ``progress()``); a refusal completes the task now."""
        raise NotImplementedError

    def succeed(self) -> None:
        """Success response arrived (I/O thread): account the bytes."""

    #: Whether the class has a :meth:`succeed` of its own (set per class): the rings skip the call for the
    #: others (a send: nothing to account), one call per message less.
    succeeds = False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.succeeds = cls.succeed is not Work.succeed


class ReceiveWork(Work):
    """A posted receive: what landing a send fills in."""

    if not TYPE_CHECKING:
        __slots__ = ()
    if TYPE_CHECKING:  # set by :class:`.tasks.EmuRdmaTaskReceive`
        dst: EmuBuf | None
        opcode: int
        result_len: int
        imm: int
        result_conn: object

