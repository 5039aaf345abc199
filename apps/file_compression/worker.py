"""The compression worker: one DEFLATE compress or decompress of a whole file, on a DOCA compress
device or, for compression only, in software with zlib, as NVIDIA's C app does.

The C app opens the first device whose ``doca_compress`` supports the task it needs
(``allocate_compress_resources`` without a PCI address): compress deflate on the client,
decompress deflate on the server. When no device can compress (BlueField-3 decompresses in
hardware but does not compress), the client compresses with zlib: raw DEFLATE,
``deflateInit2(Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, MAX_MEM_LEVEL, Z_DEFAULT_STRATEGY)``,
and computes the checksum with zlib's ``adler32`` and ``crc32``. The server has no software path.

Destination sizes are the C app's: ``max(n + 16, 2n)`` bytes for compression and
``min(max_buf_size, 1032 n)`` for decompression, both capped by the device's
``max_buf_size`` (128 MiB in software); an output that does not fit fails the file.
"""

from __future__ import annotations

import enum
import logging
import time
import zlib
from typing import Any

import doca_py as d
from doca_py.compress import Compress, CompressTaskType
from doca_py.errors import DocaError, DocaNotFound, DocaTimeout, ErrorCode, lookup

from .wire import file_checksum

__all__ = ["Method", "DeflateWorker", "SW_MAX_FILE_SIZE", "DECOMPRESS_RATIO", "dst_size", "compress_sw",
           "TASK_TIMEOUT"]

SW_MAX_FILE_SIZE = 128 * 1024 * 1024
"""Largest file of the software path (the C app's ``SW_MAX_FILE_SIZE``)."""
DECOMPRESS_RATIO = 1032
"""Largest expansion of DEFLATE (the C app's ``DECOMPRESS_RATIO``)."""
TASK_TIMEOUT = 60.0
"""Seconds one compress task may take before the file fails (the C app waits forever)."""
_MAX_MEM_LEVEL = 9  # zlib's MAX_MEM_LEVEL (Python exposes only DEF_MEM_LEVEL)

log = logging.getLogger("apps.file_compression")


class Method(enum.Enum):
    """``enum file_compression_compress_method``."""

    HW = "DOCA compress"
    """``COMPRESS_DEFLATE_HW``: a ``doca_compress`` task."""
    SW = "zlib"
    """``COMPRESS_DEFLATE_SW``: zlib in this process (compression only)."""


def dst_size(task: CompressTaskType, src_len: int, max_buf_size: int) -> int:
    """The destination buffer size the C app allocates for *src_len* input bytes."""
    if task is CompressTaskType.COMPRESS_DEFLATE:
        return min(max(src_len + 16, src_len * 2), max_buf_size)
    return min(max_buf_size, DECOMPRESS_RATIO * src_len)


def compress_sw(data: bytes | bytearray | memoryview, limit: int) -> tuple[bytes, int]:
    """Raw DEFLATE of *data* with the C app's zlib settings, and the file checksum.

    ``DocaBadState`` (the C app's status) when the output would exceed *limit* bytes."""
    c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS, _MAX_MEM_LEVEL,
                         zlib.Z_DEFAULT_STRATEGY)
    out = c.compress(data) + c.flush(zlib.Z_FINISH)
    if len(out) > limit:
        raise lookup(ErrorCode.BAD_STATE)(f"failed to compress file: {len(out)} compressed bytes exceed the "
                                          f"{limit}-byte destination")
    return out, file_checksum(data)


def _find_device(task: CompressTaskType) -> d.Dev:
    for info in d.devinfo_create_list():
        if Compress.cap_task_is_supported(info, task):
            return info.open()
    raise DocaNotFound(f"no DOCA device supports the {task.value} task")


class DeflateWorker:
    """The compress resources of one side: a device, a ``Compress`` ctx and its ``Pe`` (or zlib).

    ``DeflateWorker.open(task)`` picks the method as the C app does; `run` processes a whole file
    and returns the output with the checksum of the *uncompressed* data (Adler-32 << 32 | CRC-32).
    """

    def __init__(self, task: CompressTaskType, dev: d.Dev | None) -> None:
        self.task = task
        """``COMPRESS_DEFLATE`` (client) or ``DECOMPRESS_DEFLATE`` (server)."""
        self.method = Method.SW if dev is None else Method.HW
        """Where the work runs."""
        self._dev = dev
        self._pe: d.Pe | None = None
        self._compress: Compress | None = None
        self._result: dict[str, Any] = {}
        self.max_buf_size = SW_MAX_FILE_SIZE
        """Largest input and output (``max_compress_file_len`` of the C app)."""
        if dev is None:
            return
        try:
            self.max_buf_size = Compress.cap_task_get_max_buf_size(dev.as_devinfo(), task)
            self._pe = d.Pe()
            self._compress = Compress(dev)
            self._pe.connect_ctx(self._compress)
            if task is CompressTaskType.COMPRESS_DEFLATE:
                self._compress.task_compress_deflate_set_conf(self._done, self._failed, 1)
            else:
                self._compress.task_decompress_deflate_set_conf(self._done, self._failed, 1)
            self._compress.start()
        except BaseException:
            self.close()
            raise

    @classmethod
    def open(cls, task: CompressTaskType) -> DeflateWorker:
        """The C app's ``init_compress_resources``: the first device with *task*; without one, zlib for
        compression and ``DocaNotFound`` for decompression."""
        try:
            dev = _find_device(task)
        except DocaNotFound:
            if task is not CompressTaskType.COMPRESS_DEFLATE:
                raise
            log.info("Failed to find device for compress task, running SW compress with zlib")
            return cls(task, None)
        try:
            return cls(task, dev)
        except BaseException:
            dev.close()
            raise

    def _done(self, task: Any, user_data: Any, ctx_user_data: Any) -> None:
        # The checksums are the task's results: read them before the task is freed.
        self._result.update(status=ErrorCode.SUCCESS, crc=task.get_crc_cs(), adler=task.get_adler_cs())
        task.free()

    def _failed(self, task: Any, user_data: Any, ctx_user_data: Any) -> None:
        self._result.update(status=task.get_status(), error=task.exception())
        task.free()

    def run(self, data: bytearray) -> tuple[bytes, int]:
        """Compress or decompress all of *data*: ``(output, checksum of the uncompressed bytes)``.

        Raises the task's ``DocaError`` (``DocaTooBig`` when the output does not fit,
        ``DocaInvalidValue`` for a corrupt stream …)."""
        limit = dst_size(self.task, len(data), self.max_buf_size)
        if not data:
            raise lookup(ErrorCode.INVALID_VALUE)("nothing to process: the input is empty")
        if len(data) > self.max_buf_size:
            raise lookup(ErrorCode.INVALID_VALUE)(f"input of {len(data)} bytes exceeds the {self.max_buf_size}-byte "
                                                  f"maximum of {self.method.value}")
        if self.method is Method.SW:
            return compress_sw(data, limit)
        return self._run_task(data, limit)

    def _run_task(self, data: bytearray, limit: int) -> tuple[bytes, int]:
        dev, pe, comp = self._dev, self._pe, self._compress
        assert dev is not None and pe is not None and comp is not None
        dst = bytearray(limit)
        self._result = {}
        with d.Mmap() as src_mm, d.Mmap() as dst_mm, d.BufInventory(2) as inv:
            for mm, mem in ((src_mm, data), (dst_mm, dst)):
                mm.set_memrange(mem)
                mm.add_dev(dev)
                mm.start()
            src = inv.buf_get_by_data(src_mm, src_mm.get_memrange()[0], len(data))
            dbuf = inv.buf_get_by_addr(dst_mm, dst_mm.get_memrange()[0], limit)
            try:
                if self.task is CompressTaskType.COMPRESS_DEFLATE:
                    task: Any = comp.task_compress_deflate_alloc_init(src, dbuf)
                else:
                    task = comp.task_decompress_deflate_alloc_init(src, dbuf)
                try:
                    task.submit()
                except DocaError:
                    task.free()
                    raise
                self._wait(pe)
                status = self._result["status"]
                if status != ErrorCode.SUCCESS:
                    self._restart(comp, pe)
                    err = self._result.get("error")
                    raise err if isinstance(err, DocaError) else lookup(status)(f"compress task failed: {status.name}")
                out = bytes(dbuf.data_view())
            finally:
                dbuf.dec_refcount()
                src.dec_refcount()
        return out, (self._result["adler"] << 32) | self._result["crc"]

    def _restart(self, comp: Compress, pe: d.Pe) -> None:
        # A failed task stops the ctx (DOCA moves it to STOPPING, then IDLE): start it again for the next file.
        deadline = time.monotonic() + TASK_TIMEOUT
        while comp.get_state() is d.CtxState.STOPPING and time.monotonic() < deadline:
            pe.wait(0.1)
        if comp.get_state() is d.CtxState.IDLE:
            comp.start()

    def _wait(self, pe: d.Pe) -> None:
        deadline = time.monotonic() + TASK_TIMEOUT
        while "status" not in self._result:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DocaTimeout(f"the {self.task.value} task did not complete within {TASK_TIMEOUT} s")
            pe.wait(min(left, 0.1))

    def close(self) -> None:
        """Stop and destroy the ctx, its Pe and the device."""
        if self._compress is not None:
            try:
                self._compress.stop(wait=5.0)
            except DocaError as exc:
                log.debug("stopping the compress ctx: %s", exc)
            self._compress.close()
            self._compress = None
        if self._pe is not None:
            self._pe.close()
            self._pe = None
        if self._dev is not None:
            self._dev.close()
            self._dev = None

    def __enter__(self) -> DeflateWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
