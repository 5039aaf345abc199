"""The two sides' message handling (``host_recv_event_cb`` / ``dpu_recv_event_cb``), without DOCA objects.

The host opens with a direction message; the DPU answers with its own (its file size when the
file is on the DPU) or with a failure status; the host then sends the export descriptor of the
memory holding (or to receive) the file, and waits for the DPU's status once the DPU has done
the DMA. Every problem found while reading a message is answered with a failure status (as the
C app does) and ends the negotiation in ``ERROR`` with the reason in ``error``.

Stricter than the C app, which takes any message at any time: a message out of this order (a
second direction, an export before the direction was answered, a success status before the
export was sent) is refused the same way; so is a file of 0 bytes (DOCA cannot register an
empty memory range: the C app fails later, without telling its peer), and on the host, a DPU
answer that contradicts where the file is.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable

from apps.common.errors import ProtocolError

from .wire import Direction, MsgType, Status, pack_direction, pack_status, parse, peek_type

__all__ = ["State", "HostNegotiation", "DpuNegotiation", "EMPTY_FILE"]

EMPTY_FILE = "the file is empty: DOCA cannot register a 0-byte memory range, there is nothing to DMA"

log = logging.getLogger("apps.dma_copy")


class State(enum.Enum):
    """``enum dma_comch_state``, the host's waits spelled out."""

    NEGOTIATING = 0
    """DPU: waiting for the direction, then the export descriptor. Host: waiting for the DPU's direction."""
    EXPORTING = 1
    """Host: the DPU accepted; the runner registers and exports the memory (`HostNegotiation.exported`)."""
    WAIT_STATUS = 2
    """Host: the export descriptor was sent; waiting for the DPU's status."""
    COMPLETE = 3
    ERROR = 4


def _unwritable(check: Callable[[], None]) -> str:
    """Why the file cannot be written here (*check* raised), or ``""``."""
    try:
        check()
    except OSError as exc:
        return f"cannot write the file: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    return ""


class _Side:
    side = ""
    peer = ""

    def __init__(self) -> None:
        self.state = State.NEGOTIATING
        self.error = ""
        """Why the negotiation failed (``ERROR``)."""
        self.peer_failed = False
        """Whether the failure is the peer's own (it sent a failure status)."""

    @property
    def done(self) -> bool:
        """COMPLETE or ERROR."""
        return self.state in (State.COMPLETE, State.ERROR)

    def fail(self, reason: str) -> bytes:
        """End in ``ERROR`` for *reason*; the failure status to send the peer."""
        if self.state is not State.ERROR:
            self.state = State.ERROR
            self.error = reason
            log.error("%s", reason[:1].upper() + reason[1:])
        return pack_status(False)

    def _peer_failure(self) -> None:
        self.state = State.ERROR
        self.peer_failed = True
        self.error = f"the {self.peer} reported a failure (status message is_success=false; its log says why)"
        log.error("Failure was detected in dma copy: %s", self.error)


class HostNegotiation(_Side):
    """The host's side: *local_size* is the size of its file, ``None`` when it does not have it;
    *check_destination* as for `DpuNegotiation` (run once the DPU says it sends the file, before
    any memory is exported)."""

    side, peer = "host", "DPU"

    def __init__(self, local_size: int | None, check_destination: Callable[[], None]) -> None:
        super().__init__()
        self.local_size = local_size
        self.check_destination = check_destination
        self.file_size = 0
        """The size of the file to copy, once the DPU answered."""

    @property
    def local(self) -> bool:
        """Whether the file is on the host (the DPU reads it) or not (the DPU writes it here)."""
        return self.local_size is not None

    def request(self) -> bytes:
        """``send_file_direction_request``: the first message."""
        return pack_direction(self.local, self.local_size or 0)

    def on_message(self, msg: bytes | memoryview) -> bytes | None:
        """``host_recv_event_cb``: take one message; the failure status to send back, if any."""
        if self.done:
            return None
        if peek_type(msg) == MsgType.EXPORT_DESCRIPTOR:  # not one the host takes, whatever follows
            return self.fail(f"Received bad message type. Type: {int(MsgType.EXPORT_DESCRIPTOR)}")
        try:
            m = parse(msg)
        except ProtocolError as exc:
            return self.fail(str(exc))
        if isinstance(m, Status):
            if not m.is_success:
                self._peer_failure()
                return None
            if self.state is not State.WAIT_STATUS:
                return self.fail("received a success status before the export descriptor was sent")
            self.state = State.COMPLETE
            return None
        assert isinstance(m, Direction)
        if self.state is not State.NEGOTIATING:
            return self.fail("received a second direction message")
        if m.file_in_host != self.local:
            where = "host" if m.file_in_host else "DPU"
            return self.fail(f"the DPU's direction message says the file is on the {where}, but it is "
                             f"{'' if self.local else 'not '}on the host")
        size = self.local_size if self.local_size is not None else m.file_size
        if size == 0:
            return self.fail(EMPTY_FILE)
        if not self.local:
            problem = _unwritable(self.check_destination)
            if problem:
                return self.fail(problem)
        self.file_size = size
        self.state = State.EXPORTING
        return None

    def exported(self) -> None:
        """The export descriptor was sent: wait for the DPU's status."""
        if self.state is State.EXPORTING:
            self.state = State.WAIT_STATUS


class DpuNegotiation(_Side):
    """The DPU's side: *local_size* as for the host, *max_size* the DMA device's largest memcpy
    (``doca_dma_cap_task_memcpy_get_max_buf_size``), *check_destination* raising the ``OSError``
    that writing the file here would meet (run once the host says it sends the file)."""

    side, peer = "DPU", "host"

    def __init__(self, local_size: int | None, max_size: int, check_destination: Callable[[], None]) -> None:
        super().__init__()
        self.local_size = local_size
        self.max_size = max_size
        self.check_destination = check_destination
        self.file_size = 0
        """The size of the file to copy, once the direction was accepted."""
        self.answered = False
        """Whether the direction message was answered."""
        self.host_addr = 0
        """The file's address in the host's export (``COMPLETE``)."""
        self.export_desc = b""
        """The host's export descriptor (``COMPLETE``)."""

    @property
    def local(self) -> bool:
        """Whether the file is on the DPU (DMA to the host) or not (DMA from the host)."""
        return self.local_size is not None

    def on_message(self, msg: bytes | memoryview) -> bytes | None:
        """``dpu_recv_event_cb``: take one message; the answer to send, if any."""
        if self.state is State.ERROR:
            return None
        try:
            m = parse(msg)
        except ProtocolError as exc:
            return self.fail(str(exc))
        if isinstance(m, Status):
            if not m.is_success:
                self._peer_failure()
            return None  # a success status means nothing to the DPU (the C app ignores it too)
        if self.state is State.COMPLETE:
            return self.fail("received a message after the export descriptor")
        if isinstance(m, Direction):
            return self._direction(m)
        if not self.answered:
            return self.fail("received the export descriptor before the direction message")
        self.host_addr, self.export_desc = m.host_addr, m.export_desc
        self.state = State.COMPLETE
        return None

    def _direction(self, m: Direction) -> bytes:
        """``dpu_process_dma_direction_and_size``."""
        if self.answered:
            return self.fail("received a second direction message")
        if self.local and m.file_in_host:
            return self.fail("Error - File was found on both Host and DPU")
        if not self.local and not m.file_in_host:
            return self.fail("Error - File was not found on both Host and DPU")
        size = self.local_size if self.local_size is not None else m.file_size
        if size > self.max_size:
            return self.fail(f"DMA device maximum allowed file size in bytes is {self.max_size}, received file size "
                             f"is {size} bytes")
        if size == 0:
            return self.fail(EMPTY_FILE)
        if not self.local:
            problem = _unwritable(self.check_destination)
            if problem:
                return self.fail(problem)
        self.file_size = size
        self.answered = True
        if self.local:
            log.info("File was found locally, it will be DMA copied to the Host")
        else:
            log.info("File was not found locally, it will be DMA copied from the Host")
        # the C answer: where the file is from the DPU's view and, only when it is here, its size
        return pack_direction(not self.local, self.local_size or 0)
