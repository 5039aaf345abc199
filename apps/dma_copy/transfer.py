"""The DOCA side of a copy: the host's exported memory, the DPU's DMA memcpy task, and the file I/O.

The host registers one buffer of the file's size (``PCI_READ_ONLY`` holding the file it sends,
``PCI_READ_WRITE`` for the file it receives) and exports it over PCI. The DPU registers a buffer
of its own, imports the host's export and copies the whole file with one DMA memcpy task, as the
C app does: a file is at most the device's ``doca_dma_cap_task_memcpy_get_max_buf_size``.

A received file is written to a temporary file beside ``--file`` and renamed over it once
complete and flushed, so a failed copy never leaves a partial file under that name (the C app
writes ``--file`` in place).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import doca_py as d
from doca_py.errors import DocaError, ErrorCode

from apps.common.comch_channel import POLL_INTERVAL, Aborted
from apps.common.errors import StorageAppError

__all__ = ["local_file_size", "read_into", "write_atomically", "check_writable", "HostExport", "dpu_dma_copy",
           "OUTPUT_MODE", "DMA_TIMEOUT"]

OUTPUT_MODE = 0o666
"""Permissions of a written file before the umask (``fopen(path, "w")`` of the C app)."""
DMA_TIMEOUT = 60.0
"""Longest wait for the one DMA task to complete: a device that never completes it fails the copy."""

log = logging.getLogger("apps.dma_copy")


def local_file_size(path: Path) -> int | None:
    """The size of *path* when this side has it (a readable regular file: ``args_validation_callback``),
    else ``None`` (this side will create it)."""
    if not (os.access(path, os.R_OK) and path.is_file()):
        return None
    size = path.stat().st_size
    log.info("The file size is %d", size)
    return size


def read_into(path: Path, view: memoryview) -> None:
    """Fill *view* with *path*, which must hold exactly ``len(view)`` bytes (``fill_buffer_with_file_content``)."""
    try:
        with open(path, "rb") as f:
            got = 0
            while got < len(view):
                n = f.readinto(view[got:])
                if not n:
                    break
                got += n
            if got != len(view) or f.read(1):
                raise StorageAppError(ErrorCode.IO_FAILED, f"{path} changed size while being copied (expected "
                                                           f"{len(view)} bytes)")
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED, f"Failed to read content from file: {path}: "
                                                   f"{exc.strerror or exc}") from None


def _directory(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def check_writable(path: Path) -> None:
    """Raise the ``OSError`` that `write_atomically` would meet creating a file beside *path*."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=_directory(path))
    except OSError as exc:  # name the file asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.close(fd)
    os.unlink(tmp)


def write_atomically(path: Path, data: memoryview) -> None:
    """Write *data* to a temporary file beside *path*, flush it to disk and rename it to *path*
    (``save_buffer_into_a_file``, without ever showing a partial file under that name)."""
    log.info("Writing DMA buffer into a file on %s", path)
    umask = os.umask(0)
    os.umask(umask)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=_directory(path))
    except OSError as exc:
        raise StorageAppError(ErrorCode.IO_FAILED, f"Failed to create the DMA copy file {path}: "
                                                   f"{exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), OUTPUT_MODE & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise StorageAppError(ErrorCode.IO_FAILED, f"Failed to write full content into the output file {path}: "
                                                   f"{exc.strerror or exc}") from None


class HostExport:
    """The host's file memory: registered with *dev*, filled from *path* when *local*, exported over PCI."""

    def __init__(self, dev: d.Dev, path: Path, size: int, local: bool) -> None:
        self.mmap = d.Mmap()
        try:
            self.mmap.add_dev(dev)
            self.buffer = self.mmap.allocate(size)
            """The file's memory (the file once the DPU wrote it, when not *local*)."""
            # The DPU reads the file from it, or writes the file into it
            self.mmap.set_permissions(d.AccessFlag.PCI_READ_ONLY if local else d.AccessFlag.PCI_READ_WRITE)
            if local:
                read_into(path, self.buffer)
            self.mmap.start()
            self.addr = self.mmap.get_memrange()[0]
            """Its address, as the DPU names it (``host_addr``)."""
            self.descriptor = self.mmap.export_pci(dev)
            """``doca_mmap_export_pci``."""
        except BaseException:
            self.mmap.close()
            raise

    def close(self) -> None:
        """Destroy the mmap (the DPU's import of it stops working)."""
        self.mmap.close()


def dpu_dma_copy(dev: d.Dev, path: Path, size: int, local: bool, host_addr: int, export_desc: bytes,
                 abort: threading.Event) -> None:
    """``dpu_start_dma_copy`` once negotiated: copy the *size* bytes of the file between a local buffer
    and the host's export (``host_addr``) with one DMA memcpy task (to the host when *local*, else
    from it, then write the file)."""
    with contextlib.ExitStack() as stack:
        pe = d.Pe()
        stack.callback(pe.close)
        dma = d.Dma(dev)
        stack.callback(dma.close)
        results: list[ErrorCode] = []

        def done(task: d.DmaTaskMemcpy, user_data: object, ctx_user_data: object) -> None:
            results.append(ErrorCode.SUCCESS)
            task.free()

        def failed(task: d.DmaTaskMemcpy, user_data: object, ctx_user_data: object) -> None:
            results.append(task.get_status())
            task.free()

        dma.task_memcpy_set_conf(done, failed, 1)
        pe.connect_ctx(dma)
        dma.start()
        stack.callback(_stop, dma)
        inv = d.BufInventory(2)
        stack.callback(inv.close)

        local_mm = d.Mmap()
        stack.callback(local_mm.close)
        local_mm.add_dev(dev)
        buffer = local_mm.allocate(size)
        local_mm.set_permissions(d.AccessFlag.LOCAL_READ_ONLY if local else d.AccessFlag.LOCAL_READ_WRITE)
        local_mm.start()
        try:
            remote_mm = d.Mmap.create_from_export(export_desc, dev)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Failed to create memory map from export: {exc}") from None
        stack.callback(remote_mm.close)
        try:
            remote_buf = inv.buf_get_by_addr(remote_mm, host_addr, size)
        except DocaError as exc:
            raise StorageAppError(exc.code, f"Unable to acquire DOCA remote buffer of {size} bytes at "
                                            f"{host_addr:#x}: {exc}") from None
        stack.callback(remote_buf.dec_refcount)
        local_buf = inv.buf_get_by_addr(local_mm, local_mm.get_memrange()[0], size)
        stack.callback(local_buf.dec_refcount)
        if local:
            read_into(path, buffer)
        src, dst = (local_buf, remote_buf) if local else (remote_buf, local_buf)
        src.set_data(src.get_data(), size)
        task = dma.task_memcpy_alloc_init(src, dst)
        try:
            task.submit()
        except DocaError:
            task.free()
            raise
        deadline = time.monotonic() + DMA_TIMEOUT
        while not results:
            if abort.is_set():
                raise Aborted("stopped during the DMA copy")
            if time.monotonic() > deadline:
                raise StorageAppError(ErrorCode.TIME_OUT, f"the DMA task did not complete within {DMA_TIMEOUT:g} s")
            pe.wait(POLL_INTERVAL)
        if results[0] is not ErrorCode.SUCCESS:
            raise StorageAppError(results[0], f"DMA copy failed: {results[0].name}")
        log.info("DMA copy was done Successfully")
        if not local:
            write_atomically(path, buffer)


def _stop(ctx: d.Dma) -> None:
    try:
        ctx.stop(wait=5.0)
    except DocaError as exc:
        log.debug("stopping the DMA ctx: %s", exc)
