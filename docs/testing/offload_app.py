"""A small host <-> DPU application: the host hands a buffer to the DPU, which
copies it with DMA and answers its CRC-32.

Host: a comch client; exports its buffer for PCI access and sends the export
blob. DPU: a comch server on the host PF's representor; imports the blob,
DMA-copies the bytes into its own memory and answers ``crc <value>`` (or
``error <status>`` when the copy fails).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable

import doca_py as d
from doca_py.comch import ComchClient, ComchServer
from doca_py.types import AccessFlag, CtxState

TIMEOUT = 30.0


def _until(pe: d.Pe, done: Callable[[], bool], what: str) -> None:
    """Progress *pe* until *done()*; every wait is bounded."""
    end = time.monotonic() + TIMEOUT
    while not done():
        if time.monotonic() > end:
            raise TimeoutError(f"no {what} within {TIMEOUT} s")
        pe.wait(0.1)


def free(task: d.Task, user_data: object, ctx_user_data: object) -> None:
    """Completion callback of the comch sends: the task returns to its pool."""
    task.free()


def run_host(dev: d.Dev, server_name: str, data: bytes) -> int:
    """Send *data* to the DPU for copying; return the CRC-32 of its copy."""
    answers: list[bytes] = []
    with d.Pe() as pe:
        client = ComchClient(dev, server_name)
        pe.connect_ctx(client)
        client.task_send_set_conf(free, free, 4)
        client.event_msg_recv_register(
            lambda msg, conn: answers.append(bytes(msg)))
        client.start()
        _until(pe, lambda: client.get_state() == CtxState.RUNNING,
               "connection to the DPU")
        mm = d.Mmap()
        mem = mm.allocate(len(data))
        mem[:] = data
        mm.set_permissions(
            AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_ONLY)
        mm.add_dev(dev)
        mm.start()
        conn = client.get_connection()
        blob = mm.export_pci(dev)
        client.task_send_alloc_init(conn, b"copy " + blob).submit()
        _until(pe, lambda: bool(answers), "answer from the DPU")
        # the DPU may have closed the connection already
        if client.get_state() == CtxState.RUNNING:
            client.stop()
        _until(pe, lambda: client.get_state() == CtxState.IDLE, "client stop")
        client.close()
        del mem
        mm.close()
    kind, _, value = answers[0].partition(b" ")
    if kind != b"crc":
        raise RuntimeError(
            f"the DPU could not copy the buffer: {value.decode()}")
    return int(value)


def run_dpu(dev: d.Dev, rep: d.DevRep, server_name: str,
            on_ready: Callable[[], None] = lambda: None) -> bytes:
    """Serve one copy request; return the bytes copied (``b""``: it failed)."""
    requests: list[tuple[bytes, d.ComchConnection]] = []
    copied: list[d.DmaTaskMemcpy] = []
    with d.Pe() as pe, d.BufInventory(2) as inv:
        server = ComchServer(dev, rep, server_name)
        pe.connect_ctx(server)
        server.task_send_set_conf(free, free, 4)
        server.event_msg_recv_register(
            lambda msg, conn: requests.append((bytes(msg), conn)))
        server.start()
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: copied.append(t),
                                 lambda t, u, c: copied.append(t), 1)
        dma.start()
        on_ready()
        _until(pe, lambda: bool(requests), "request from the host")
        msg, conn = requests[0]
        remote = d.Mmap.create_from_export(msg.removeprefix(b"copy "), dev)
        rbase, size = remote.get_memrange()
        local = d.Mmap()
        mem = local.allocate(size)
        local.add_dev(dev)
        local.start()
        src = inv.buf_get_by_data(remote, rbase, size)
        dst = inv.buf_get_by_addr(local, local.get_memrange()[0], size)
        task = dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        _until(pe, lambda: bool(copied), "DMA completion")
        status = task.get_status()
        data = bytes(mem) if status == d.ErrorCode.SUCCESS else b""
        answer = (f"crc {zlib.crc32(data)}" if data or not size
                  else f"error {status.name}")
        server.task_send_alloc_init(conn, answer.encode()).submit()
        task.free()
        src.dec_refcount()
        dst.dec_refcount()
        _until(pe, lambda: server.get_num_inflight_tasks() == 0, "answer sent")
        for ctx in (dma, server):
            ctx.close()
        del mem
        local.close()
        remote.close()
    return data
