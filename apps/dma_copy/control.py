"""The DMA Copy flow on each side (``host_start_dma_copy`` / ``dpu_start_dma_copy``).

Host (comch client): connect, send the direction message, and once the DPU accepted, register
the file's memory (the file it sends, or room for the file it receives), export it and send the
export descriptor; wait for the DPU's status, then write the received file.

DPU (comch server): wait for a host, answer its direction message, take its export descriptor,
copy the file with one DMA memcpy task (and write it when it came from the host), then send
the status. Any failure after the host's first message is sent to the host as a failure
status (the C app forgets it on some paths, leaving its host waiting).

Both sides fail (exit status 1, ``EXCEPTION: <reason>``) when the peer goes away, on a malformed
or out-of-order message, a failure status from the peer, or a file the DMA device cannot copy.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from doca_py import Dma, Mmap
from doca_py.errors import DocaError, ErrorCode

from apps.common.comch_channel import POLL_INTERVAL, Aborted, ComchChannel
from apps.common.errors import PeerClosedError, StorageAppError

from .config import DmaCopyConfig
from .negotiation import DpuNegotiation, HostNegotiation, State
from .transfer import HostExport, check_writable, dpu_dma_copy, local_file_size, write_atomically
from .wire import pack_export_descriptor, pack_status

__all__ = ["SERVER_NAME", "ANSWER_WAIT", "LINGER", "run", "run_host", "run_dpu"]

SERVER_NAME = "dma copy server"
"""The comch server name (``SERVER_NAME`` of the C app)."""
ANSWER_WAIT = 2.0
"""Longest wait for a failure status to leave (and, on the DPU, for the host to disconnect on it) before
this side ends: it ends sooner once the status left and the host is gone."""
LINGER = 10.0
"""Longest wait of the DPU, its success status sent, for the host to disconnect."""

log = logging.getLogger("apps.dma_copy")


def _tell(channel: ComchChannel, msg: bytes) -> None:
    """Send *msg* (a failure status) and give it `ANSWER_WAIT` to leave; a peer already gone is no
    second error."""
    try:
        channel.send(msg)
        channel.flush(ANSWER_WAIT)
        channel.wait_disconnected(ANSWER_WAIT)
    except (PeerClosedError, DocaError, Aborted) as exc:
        log.error("Failed to send status message: %s", exc)


def _await(channel: ComchChannel, msgs: deque[bytes], side: HostNegotiation | DpuNegotiation,
           until: tuple[State, ...], abort: threading.Event, waiting_for: str) -> None:
    """Feed the received messages to *side*, sending its answers, until its state is in *until*."""
    while True:
        while msgs and side.state not in until:
            answer = side.on_message(msgs.popleft())
            if answer is not None:
                if side.state is State.ERROR:
                    _tell(channel, answer)
                else:
                    channel.send(answer, abort)
        if side.state in until:
            return
        if channel.lost or channel.send_error is not None:
            err = channel.peer_closed() if channel.lost else PeerClosedError(channel.send_error or "")
            raise PeerClosedError(f"{err} while waiting for {waiting_for}: no file written")
        if abort.is_set():
            raise Aborted(f"stopped while waiting for {waiting_for}")
        channel.progress(POLL_INTERVAL)


def _failed(side: HostNegotiation | DpuNegotiation) -> StorageAppError:
    return StorageAppError(ErrorCode.BAD_STATE, f"Failure was detected in dma copy: {side.error}")


# -- host ---------------------------------------------------------------------------------------------
def run_host(config: DmaCopyConfig, channel: ComchChannel, msgs: deque[bytes], abort: threading.Event) -> int:
    """``host_start_dma_copy``."""
    local_size = local_file_size(config.file)
    if not Mmap.cap_is_export_pci_supported(channel.dev.as_devinfo()):
        raise StorageAppError(ErrorCode.NOT_SUPPORTED, f"device {config.pci_addr} cannot export memory over PCI")
    side = HostNegotiation(local_size, lambda: check_writable(config.file))
    channel.start(abort)
    if side.local:
        log.info("File was found locally, it will be DMA copied to the DPU")
    else:
        log.info("File was not found locally, it will be DMA copied from the DPU")
    channel.send(side.request(), abort)
    export: HostExport | None = None
    try:
        try:
            _await(channel, msgs, side, (State.EXPORTING, State.ERROR), abort, "the DPU's direction message")
            if side.state is State.EXPORTING:
                try:
                    export = HostExport(channel.dev, config.file, side.file_size, side.local)
                    msg = pack_export_descriptor(export.addr, export.descriptor)
                    if len(msg) > channel.max_msg_size:
                        raise StorageAppError(ErrorCode.INVALID_VALUE, f"Export message exceeds max length of comch. "
                                                                       f"Message len: {len(msg)}, Max len: "
                                                                       f"{channel.max_msg_size}")
                except (StorageAppError, DocaError) as exc:
                    _tell(channel, side.fail(f"cannot register or export the file's memory: {exc}"))
                    raise _failed(side) from None
                channel.send(msg, abort)
                side.exported()
                _await(channel, msgs, side, (State.COMPLETE, State.ERROR), abort, "the DPU's status message")
        except Aborted:
            _tell(channel, side.fail("the host was stopped (Ctrl-C or SIGTERM)"))
            raise
        if side.state is State.ERROR:
            raise _failed(side)
        log.info("Final status message was successfully received")
        if not side.local:
            assert export is not None
            write_atomically(config.file, export.buffer)
        return 0
    finally:
        if export is not None:
            export.close()


# -- DPU ----------------------------------------------------------------------------------------------
def run_dpu(config: DmaCopyConfig, channel: ComchChannel, msgs: deque[bytes], abort: threading.Event) -> int:
    """``dpu_start_dma_copy``."""
    local_size = local_file_size(config.file)
    info = channel.dev.as_devinfo()
    if not Dma.cap_task_memcpy_is_supported(info):
        raise StorageAppError(ErrorCode.NOT_SUPPORTED, f"device {config.pci_addr} cannot run DMA memcpy tasks")
    max_size = Dma.cap_task_memcpy_get_max_buf_size(info)
    log.debug("DOCA DMA device supports maximum buffer size of %d bytes", max_size)
    side = DpuNegotiation(local_size, max_size, lambda: check_writable(config.file))
    channel.start(abort)
    try:
        _await(channel, msgs, side, (State.COMPLETE, State.ERROR), abort, "the host's DMA metadata")
        if side.state is State.ERROR:
            raise StorageAppError(ErrorCode.BAD_STATE, f"Comch DMA metadata negotiation failed: {side.error}")
        try:
            dpu_dma_copy(channel.dev, config.file, side.file_size, side.local, side.host_addr, side.export_desc,
                         abort)
        except (StorageAppError, DocaError) as exc:
            _tell(channel, side.fail(str(exc)))
            raise
    except Aborted:
        if side.state is not State.ERROR:
            _tell(channel, side.fail("the DPU was stopped (Ctrl-C or SIGTERM)"))
        raise
    channel.send(pack_status(True), abort)
    if not channel.flush(LINGER, abort):
        raise PeerClosedError("the host did not take the success status: "
                              + ("the file was written here" if not side.local else "the host has no file"))
    # the host disconnects once it has the status
    channel.wait_disconnected(LINGER, abort)
    return 0


def run(config: DmaCopyConfig, abort: threading.Event) -> int:
    """Open the comch channel, then run the host or the DPU side as the device's side says."""
    msgs: deque[bytes] = deque()
    channel = ComchChannel.open(SERVER_NAME, config.pci_addr, config.rep_pci or None,
                                lambda m: msgs.append(bytes(m)))
    try:
        if channel.is_server:
            return run_dpu(config, channel, msgs, abort)
        return run_host(config, channel, msgs, abort)
    finally:
        channel.close()


