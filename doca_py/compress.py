"""``doca_compress``: DEFLATE compress/decompress and LZ4 stream/block decompress.

```pycon
>>> comp = Compress(dev); pe.connect_ctx(comp)
>>> comp.task_decompress_lz4_stream_set_conf(on_done, on_error, 16); comp.start()
>>> t = comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst)   # checksums? independent blocks?
>>> t.submit()     # later, in the callback: t.get_crc_cs(), t.get_xxh_cs(); dst data grew

```

The LZ4 *stream* is the body of an LZ4 frame (data blocks, no frame header, no
end mark) — what the DOCA storage apps store. DEFLATE is raw (no zlib wrapper).
Output that does not fit after the destination's data fails the task.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ._args import expect, wrong_type
from ._compat import StrEnum
from ._backend import backend
from ._backend.protocols.engines import CompressHandle, CompressTaskHandle
from .buf import Buf, freed_buf
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo, devinfo_handle

__all__ = ["Compress", "CompressTaskType", "CompressTaskCompressDeflate", "CompressTaskDecompressDeflate",
           "CompressTaskDecompressLz4Stream", "CompressTaskDecompressLz4Block", "TASK_TYPES"]


class CompressTaskType(StrEnum):
    """The compress task types, named as in DOCA's function names (``doca_compress_cap_task_<name>_…``)."""

    COMPRESS_DEFLATE = "compress_deflate"
    """``doca_compress_task_compress_deflate``."""
    DECOMPRESS_DEFLATE = "decompress_deflate"
    """``doca_compress_task_decompress_deflate``."""
    DECOMPRESS_LZ4_STREAM = "decompress_lz4_stream"
    """``doca_compress_task_decompress_lz4_stream``."""
    DECOMPRESS_LZ4_BLOCK = "decompress_lz4_block"
    """``doca_compress_task_decompress_lz4_block``."""


#: Task type names as they appear in DOCA's function names.
TASK_TYPES = tuple(t.value for t in CompressTaskType)
"""The task type names, as strings (the values of [`CompressTaskType`][doca_py.compress.CompressTaskType])."""


class _CompressTask(Task):
    __slots__ = ("_src", "_dst")
    _h: CompressTaskHandle
    _src: Buf
    _dst: Buf

    def get_src(self) -> Buf:
        """``doca_compress_task_<type>_get_src``: the src."""
        return self._src

    def get_dst(self) -> Buf:
        """``doca_compress_task_<type>_get_dst``: the dst."""
        return self._dst

    def set_src(self, buf: Buf) -> None:
        """``doca_compress_task_*_set_src``: re-aim the source between runs (not in flight)."""
        if not isinstance(buf, Buf):
            raise wrong_type(f"{type(self).__name__}.set_src", Buf, buf=buf)
        if buf._closed:
            raise freed_buf(f"{type(self).__name__}.set_src", buf=buf)
        self._h.set_src(buf._h)
        self._src = buf

    def set_dst(self, buf: Buf) -> None:
        """``doca_compress_task_*_set_dst``: output is appended after the destination's data."""
        if not isinstance(buf, Buf):
            raise wrong_type(f"{type(self).__name__}.set_dst", Buf, buf=buf)
        if buf._closed:
            raise freed_buf(f"{type(self).__name__}.set_dst", buf=buf)
        self._h.set_dst(buf._h)
        self._dst = buf

    def get_crc_cs(self) -> int:
        """``doca_compress_task_<type>_get_crc_cs``: CRC-32 of the uncompressed data (valid after success)."""
        return self._h.crc_cs


class CompressTaskCompressDeflate(_CompressTask):
    """``doca_compress_task_compress_deflate``."""

    __slots__ = ()

    def get_adler_cs(self) -> int:
        """``doca_compress_task_compress_deflate_get_adler_cs``: Adler-32 of the uncompressed data (valid after
        success)."""
        return self._h.adler_cs


class CompressTaskDecompressDeflate(_CompressTask):
    """``doca_compress_task_decompress_deflate``."""

    __slots__ = ()

    def get_adler_cs(self) -> int:
        """``doca_compress_task_decompress_deflate_get_adler_cs``: the adler cs."""
        return self._h.adler_cs


class CompressTaskDecompressLz4Stream(_CompressTask):
    """``doca_compress_task_decompress_lz4_stream``."""

    __slots__ = ()

    def get_xxh_cs(self) -> int:
        """``doca_compress_task_decompress_lz4_stream_get_xxh_cs``: xxHash-32 of the uncompressed data (valid after
        success)."""
        return self._h.xxh_cs

    def get_has_block_checksum(self) -> bool:
        """``doca_compress_task_decompress_lz4_stream_get_has_block_checksum``: the has block checksum."""
        return self._h.has_block_checksum

    def set_has_block_checksum(self, value: bool) -> None:
        """``doca_compress_task_decompress_lz4_stream_set_has_block_checksum``: set the has block checksum to
        *value*.
        """
        self._h.has_block_checksum = bool(value)

    def get_are_blocks_independent(self) -> bool:
        """``doca_compress_task_decompress_lz4_stream_get_are_blocks_independent``: the are blocks independent."""
        return self._h.are_blocks_independent

    def set_are_blocks_independent(self, value: bool) -> None:
        """``doca_compress_task_decompress_lz4_stream_set_are_blocks_independent``: set the are blocks independent
        to *value*.
        """
        self._h.are_blocks_independent = bool(value)


class CompressTaskDecompressLz4Block(_CompressTask):
    """``doca_compress_task_decompress_lz4_block``."""

    __slots__ = ()

    def get_xxh_cs(self) -> int:
        """``doca_compress_task_decompress_lz4_block_get_xxh_cs``: the xxh cs."""
        return self._h.xxh_cs


_CT = TypeVar("_CT", bound=_CompressTask)


class Compress(Ctx):
    """``doca_compress`` context on *dev*."""

    @classmethod
    def from_handle(cls, dev: Dev, handle: CompressHandle | int, user_data: Any = None) -> Compress:
        """Python-only: wrap an existing ``doca_compress`` on *dev* without taking ownership (it keeps its state,
        configuration and Pe; connect this wrapper to that Pe's wrapper with ``Pe.connect_ctx`` only if it is not
        connected).

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_compress`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        c = cls(dev, user_data, _handle=backend.borrow_compress(handle) if isinstance(handle, int) else handle)
        c._borrow()
        return c

    def __init__(self, dev: Dev, user_data: Any = None, *, _handle: CompressHandle | None = None) -> None:
        expect("Compress", Dev, dev=dev)
        dev._check_open()
        self._h: CompressHandle = backend.compress.compress_create(dev._h) if _handle is None else _handle
        super().__init__(self._h, user_data)
        dev._adopt(self)

    def task_compress_deflate_set_conf(self, success: TaskCallback[CompressTaskCompressDeflate],
                                       error: TaskCallback[CompressTaskCompressDeflate], num_tasks: int) -> None:
        """``doca_compress_task_compress_deflate_set_conf``: configure the compress deflate tasks (before start):
        the completion and error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.compress_deflate, success, error, num_tasks)

    def task_decompress_deflate_set_conf(self, success: TaskCallback[CompressTaskDecompressDeflate],
                                         error: TaskCallback[CompressTaskDecompressDeflate], num_tasks: int) -> None:
        """``doca_compress_task_decompress_deflate_set_conf``: configure the decompress deflate tasks (before
        start): the completion and error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.decompress_deflate, success, error, num_tasks)

    def task_decompress_lz4_stream_set_conf(self, success: TaskCallback[CompressTaskDecompressLz4Stream],
                                            error: TaskCallback[CompressTaskDecompressLz4Stream],
                                            num_tasks: int) -> None:
        """``doca_compress_task_decompress_lz4_stream_set_conf``: configure the decompress lz4 stream tasks (before
        start): the completion and error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.decompress_lz4_stream, success, error, num_tasks)

    def task_decompress_lz4_block_set_conf(self, success: TaskCallback[CompressTaskDecompressLz4Block],
                                           error: TaskCallback[CompressTaskDecompressLz4Block],
                                           num_tasks: int) -> None:
        """``doca_compress_task_decompress_lz4_block_set_conf``: configure the decompress lz4 block tasks (before
        start): the completion and error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.decompress_lz4_block, success, error, num_tasks)

    def _wrap(self, h: CompressTaskHandle, cls: type[_CT], src: Buf, dst: Buf, user_data: Any) -> _CT:
        t = self._wrap_task(h, cls, user_data)
        t._src, t._dst = src, dst
        return t

    def task_compress_deflate_alloc_init(self, src: Buf, dst: Buf,
                                         user_data: Any = None) -> CompressTaskCompressDeflate:
        """``doca_compress_task_compress_deflate_alloc_init``: take a compress deflate task from the pool,
        initialised with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Compress.task_compress_deflate_alloc_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Compress.task_compress_deflate_alloc_init", src=src, dst=dst)
        h = self._h.task_compress_deflate_alloc_init(src._h, dst._h)
        return self._wrap(h, CompressTaskCompressDeflate, src, dst, user_data)

    def task_decompress_deflate_alloc_init(self, src: Buf, dst: Buf,
                                           user_data: Any = None) -> CompressTaskDecompressDeflate:
        """``doca_compress_task_decompress_deflate_alloc_init``: take a decompress deflate task from the pool,
        initialised with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Compress.task_decompress_deflate_alloc_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Compress.task_decompress_deflate_alloc_init", src=src, dst=dst)
        h = self._h.task_decompress_deflate_alloc_init(src._h, dst._h)
        return self._wrap(h, CompressTaskDecompressDeflate, src, dst, user_data)

    def task_decompress_lz4_stream_alloc_init(self, has_block_checksum: bool, are_blocks_independent: bool,
                                              src: Buf, dst: Buf,
                                              user_data: Any = None) -> CompressTaskDecompressLz4Stream:
        """``doca_compress_task_decompress_lz4_stream_alloc_init``: take a decompress lz4 stream task from the
        pool, initialised with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Compress.task_decompress_lz4_stream_alloc_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Compress.task_decompress_lz4_stream_alloc_init", src=src, dst=dst)
        h = self._h.task_decompress_lz4_stream_alloc_init(has_block_checksum, are_blocks_independent, src._h, dst._h)
        return self._wrap(h, CompressTaskDecompressLz4Stream, src, dst, user_data)

    def task_decompress_lz4_block_alloc_init(self, src: Buf, dst: Buf,
                                             user_data: Any = None) -> CompressTaskDecompressLz4Block:
        """``doca_compress_task_decompress_lz4_block_alloc_init``: take a decompress lz4 block task from the pool,
        initialised with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        if not (isinstance(src, Buf) and isinstance(dst, Buf)):
            raise wrong_type("Compress.task_decompress_lz4_block_alloc_init", Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf("Compress.task_decompress_lz4_block_alloc_init", src=src, dst=dst)
        h = self._h.task_decompress_lz4_block_alloc_init(src._h, dst._h)
        return self._wrap(h, CompressTaskDecompressLz4Block, src, dst, user_data)

    def cap_get_max_num_tasks(self) -> int:
        """``doca_compress_cap_get_max_num_tasks``: tasks of all types this context can hold (DOCA asks the ctx, not
        the device)."""
        return self._h.cap_get_max_num_tasks()

    @staticmethod
    def cap_task_is_supported(devinfo: DevInfo, task: CompressTaskType) -> bool:
        """``doca_compress_cap_task_<task>_is_supported``."""
        return backend.compress.cap_task_is_supported(devinfo_handle(devinfo), _task(task))

    @staticmethod
    def cap_task_get_max_buf_size(devinfo: DevInfo, task: CompressTaskType) -> int:
        """``doca_compress_cap_task_<task>_get_max_buf_size``."""
        return backend.compress.cap_task_get_max_buf_size(devinfo_handle(devinfo), _task(task))

    @staticmethod
    def cap_task_get_max_buf_list_len(devinfo: DevInfo, task: CompressTaskType) -> int:
        """``doca_compress_cap_task_<task>_get_max_buf_list_len``."""
        return backend.compress.cap_task_get_max_buf_list_len(devinfo_handle(devinfo), _task(task))

    def __enter__(self) -> Compress:
        return self


def _task(name: CompressTaskType | str) -> str:
    try:
        return CompressTaskType(name).value
    except ValueError:
        from .errors import DocaInvalidValue

        raise DocaInvalidValue(f"unknown compress task type {name!r}; one of {', '.join(TASK_TYPES)}") from None
