"""Native ``doca_compress`` (libdoca_compress): DEFLATE and LZ4 tasks.

Same plumbing as :mod:`doca_py.native.dma`. Task handles expose the checksums and
the LZ4-stream flags as properties that call the library's getters and setters.

DOCA 2.6 has no ``…decompress_lz4_stream…``/``…lz4_block…`` functions, only
``doca_compress_*decompress_lz4*`` (``doca-c-api.md`` §6.3): no flags, CRC and
Adler-32 checksums. When the loaded library lacks the stream API but has the 2.6
one, the ``decompress_lz4_stream`` task type is served by the 2.6 functions for the
flags the storage apps use (no block checksums, independent blocks) — whether the
2.6 task reads exactly the same format is unverified — and other flags raise
:class:`~doca_py.errors.DocaNotSupported`, as does every ``decompress_lz4_block``
call on such a runtime. libdoca_compress is opened on first use, never at import.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from .._backend.protocols.core import BufHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotSupported, check
from .capi import format_version
from .capi.compress import load_compress
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, buf_ptr, devinfo_ptr, get_u32, get_u64, init_ctx, is_supported

if TYPE_CHECKING:
    from .capi._raw import CompressLib

__all__ = [
    "NativeCompress",
    "NativeCompressTask",
    "compress_create",
    "cap_task_is_supported",
    "cap_task_get_max_buf_size",
    "cap_task_get_max_buf_list_len",
    "uses_legacy_lz4",
    "TASK_TYPES",
]

_byref = ctypes.byref

TASK_TYPES = ("compress_deflate", "decompress_deflate", "decompress_lz4_stream", "decompress_lz4_block")
#: The DOCA 2.6 task type that stands in for ``decompress_lz4_stream``.
LEGACY_LZ4 = "decompress_lz4"
_STREAM_ALLOC = "doca_compress_task_decompress_lz4_stream_alloc_init"
_LEGACY_ALLOC = "doca_compress_task_decompress_lz4_alloc_init"
#: (has_block_checksum, are_blocks_independent) of every LZ4-stream task served by the 2.6 API.
_LEGACY_FLAGS = (False, True)
#: The second checksum each C task type reports.
_SECOND_CS = {"compress_deflate": "adler", "decompress_deflate": "adler", LEGACY_LZ4: "adler",
              "decompress_lz4_stream": "xxh", "decompress_lz4_block": "xxh"}
#: Per C task type (the 2.6 ``decompress_lz4`` included): operation → C function, spelled
#: out so ``grep`` finds each use (``cap_*`` are the device capability probes).
TASK_FNS: dict[str, dict[str, str]] = {
    "compress_deflate": {
        "cap_is_supported": "doca_compress_cap_task_compress_deflate_is_supported",
        "cap_get_max_buf_size": "doca_compress_cap_task_compress_deflate_get_max_buf_size",
        "cap_get_max_buf_list_len": "doca_compress_cap_task_compress_deflate_get_max_buf_list_len",
        "set_conf": "doca_compress_task_compress_deflate_set_conf",
        "alloc_init": "doca_compress_task_compress_deflate_alloc_init",
        "as_task": "doca_compress_task_compress_deflate_as_task",
        "set_src": "doca_compress_task_compress_deflate_set_src",
        "get_src": "doca_compress_task_compress_deflate_get_src",
        "set_dst": "doca_compress_task_compress_deflate_set_dst",
        "get_dst": "doca_compress_task_compress_deflate_get_dst",
        "get_crc_cs": "doca_compress_task_compress_deflate_get_crc_cs",
        "get_adler_cs": "doca_compress_task_compress_deflate_get_adler_cs",
    },
    "decompress_deflate": {
        "cap_is_supported": "doca_compress_cap_task_decompress_deflate_is_supported",
        "cap_get_max_buf_size": "doca_compress_cap_task_decompress_deflate_get_max_buf_size",
        "cap_get_max_buf_list_len": "doca_compress_cap_task_decompress_deflate_get_max_buf_list_len",
        "set_conf": "doca_compress_task_decompress_deflate_set_conf",
        "alloc_init": "doca_compress_task_decompress_deflate_alloc_init",
        "as_task": "doca_compress_task_decompress_deflate_as_task",
        "set_src": "doca_compress_task_decompress_deflate_set_src",
        "get_src": "doca_compress_task_decompress_deflate_get_src",
        "set_dst": "doca_compress_task_decompress_deflate_set_dst",
        "get_dst": "doca_compress_task_decompress_deflate_get_dst",
        "get_crc_cs": "doca_compress_task_decompress_deflate_get_crc_cs",
        "get_adler_cs": "doca_compress_task_decompress_deflate_get_adler_cs",
    },
    "decompress_lz4_stream": {
        "cap_is_supported": "doca_compress_cap_task_decompress_lz4_stream_is_supported",
        "cap_get_max_buf_size": "doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size",
        "cap_get_max_buf_list_len": "doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len",
        "set_conf": "doca_compress_task_decompress_lz4_stream_set_conf",
        "alloc_init": "doca_compress_task_decompress_lz4_stream_alloc_init",
        "as_task": "doca_compress_task_decompress_lz4_stream_as_task",
        "set_has_block_checksum": "doca_compress_task_decompress_lz4_stream_set_has_block_checksum",
        "get_has_block_checksum": "doca_compress_task_decompress_lz4_stream_get_has_block_checksum",
        "set_are_blocks_independent": "doca_compress_task_decompress_lz4_stream_set_are_blocks_independent",
        "get_are_blocks_independent": "doca_compress_task_decompress_lz4_stream_get_are_blocks_independent",
        "set_src": "doca_compress_task_decompress_lz4_stream_set_src",
        "get_src": "doca_compress_task_decompress_lz4_stream_get_src",
        "set_dst": "doca_compress_task_decompress_lz4_stream_set_dst",
        "get_dst": "doca_compress_task_decompress_lz4_stream_get_dst",
        "get_crc_cs": "doca_compress_task_decompress_lz4_stream_get_crc_cs",
        "get_xxh_cs": "doca_compress_task_decompress_lz4_stream_get_xxh_cs",
    },
    "decompress_lz4_block": {
        "cap_is_supported": "doca_compress_cap_task_decompress_lz4_block_is_supported",
        "cap_get_max_buf_size": "doca_compress_cap_task_decompress_lz4_block_get_max_buf_size",
        "cap_get_max_buf_list_len": "doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len",
        "set_conf": "doca_compress_task_decompress_lz4_block_set_conf",
        "alloc_init": "doca_compress_task_decompress_lz4_block_alloc_init",
        "as_task": "doca_compress_task_decompress_lz4_block_as_task",
        "set_src": "doca_compress_task_decompress_lz4_block_set_src",
        "get_src": "doca_compress_task_decompress_lz4_block_get_src",
        "set_dst": "doca_compress_task_decompress_lz4_block_set_dst",
        "get_dst": "doca_compress_task_decompress_lz4_block_get_dst",
        "get_crc_cs": "doca_compress_task_decompress_lz4_block_get_crc_cs",
        "get_xxh_cs": "doca_compress_task_decompress_lz4_block_get_xxh_cs",
    },
    "decompress_lz4": {
        "cap_is_supported": "doca_compress_cap_task_decompress_lz4_is_supported",
        "cap_get_max_buf_size": "doca_compress_cap_task_decompress_lz4_get_max_buf_size",
        "cap_get_max_buf_list_len": "doca_compress_cap_task_decompress_lz4_get_max_buf_list_len",
        "set_conf": "doca_compress_task_decompress_lz4_set_conf",
        "alloc_init": "doca_compress_task_decompress_lz4_alloc_init",
        "as_task": "doca_compress_task_decompress_lz4_as_task",
        "set_src": "doca_compress_task_decompress_lz4_set_src",
        "get_src": "doca_compress_task_decompress_lz4_get_src",
        "set_dst": "doca_compress_task_decompress_lz4_set_dst",
        "get_dst": "doca_compress_task_decompress_lz4_get_dst",
        "get_crc_cs": "doca_compress_task_decompress_lz4_get_crc_cs",
        "get_adler_cs": "doca_compress_task_decompress_lz4_get_adler_cs",
    },
}



def _cz() -> CompressLib:
    return load_compress()


def uses_legacy_lz4(l: CompressLib | None = None) -> bool:
    """Whether LZ4-stream tasks go through the DOCA 2.6 ``decompress_lz4`` functions."""
    l = l or _cz()
    return not l.has(_STREAM_ALLOC) and l.has(_LEGACY_ALLOC)


def _c_kind(l: CompressLib, task: str) -> str:
    """The C task type serving public *task* on the loaded library."""
    if task not in TASK_TYPES:
        raise DocaInvalidValue(f"unknown compress task type {task!r}; one of {', '.join(TASK_TYPES)}")
    if task == "decompress_lz4_stream" and uses_legacy_lz4(l):
        return LEGACY_LZ4
    return task


def _version(l: CompressLib) -> str:
    return format_version(l.version)


class NativeCompressTask(EngineTask):
    """A ``doca_compress_task_* *`` of any type; ``kind`` is its C task type."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return cast(EngineTaskPool, self.pool).kind

    def _call(self, what: str, *args: Any) -> Any:
        return getattr(_cz(), TASK_FNS[self.kind][what])(self.ptr, *args)

    def _checksum(self, name: str) -> int:
        if name != "crc" and _SECOND_CS[self.kind] != name:
            since = " (doca_compress_task_decompress_lz4_stream_get_xxh_cs exists from DOCA 3.0)" \
                if self.kind == LEGACY_LZ4 and name == "xxh" else ""
            raise DocaNotSupported(f"a {self.kind} task reports crc_cs and "
                                   f"{_SECOND_CS[self.kind]}_cs, not {name}_cs{since}")
        return int(self._call(f"get_{name}_cs"))

    @property
    def crc_cs(self) -> int:
        return self._checksum("crc")

    @property
    def adler_cs(self) -> int:
        return self._checksum("adler")

    @property
    def xxh_cs(self) -> int:
        return self._checksum("xxh")

    def _flag(self, index: int, name: str) -> bool:
        if self.kind == "decompress_lz4_stream":
            return bool(self._call(f"get_{name}"))
        if self.kind == LEGACY_LZ4:
            return _LEGACY_FLAGS[index]
        return False

    def _set_flag(self, index: int, name: str, value: bool) -> None:
        if self.kind == "decompress_lz4_stream":
            self._call(f"set_{name}", 1 if value else 0)
        elif self.kind == LEGACY_LZ4:
            if bool(value) != _LEGACY_FLAGS[index]:
                raise DocaNotSupported(f"{name} cannot change on DOCA {_version(_cz())}: its "
                                       "doca_compress_task_decompress_lz4 has no LZ4 stream flags (the LZ4 "
                                       f"stream task's setter of {name} exists from DOCA 3.0)")
        else:
            raise DocaNotSupported(f"a {self.kind} task has no {name} flag (LZ4 stream tasks only)")

    @property
    def has_block_checksum(self) -> bool:
        return self._flag(0, "has_block_checksum")

    @has_block_checksum.setter
    def has_block_checksum(self, value: bool) -> None:
        self._set_flag(0, "has_block_checksum", value)

    @property
    def are_blocks_independent(self) -> bool:
        return self._flag(1, "are_blocks_independent")

    @are_blocks_independent.setter
    def are_blocks_independent(self, value: bool) -> None:
        self._set_flag(1, "are_blocks_independent", value)

    def set_src(self, buf: BufHandle) -> None:
        self._call("set_src", buf_ptr(buf))

    def get_src(self) -> int | None:
        return cast("int | None", self._call("get_src"))

    def set_dst(self, buf: BufHandle) -> None:
        self._call("set_dst", buf_ptr(buf))

    def get_dst(self) -> int | None:
        return cast("int | None", self._call("get_dst"))


class NativeCompress(NativeCtx):
    """``doca_compress *`` and its ctx."""

    def __init__(self, ptr: int | None) -> None:
        l = _cz()
        self.ptr = ptr
        init_ctx(self, ptr, l.doca_compress_as_ctx, l.doca_compress_destroy, "doca_compress")
        self.legacy_lz4 = uses_legacy_lz4(l)
        pools: dict[str, EngineTaskPool] = {}
        for task in TASK_TYPES:
            kind = _c_kind(l, task)
            fns = TASK_FNS[kind]
            pools[task] = EngineTaskPool(self, partial(getattr(l, fns["set_conf"]), ptr), fns["set_conf"],
                                         getattr(l, fns["as_task"]), NativeCompressTask, kind)
        self.compress_deflate = pools["compress_deflate"]
        self.decompress_deflate = pools["decompress_deflate"]
        self.decompress_lz4_stream = pools["decompress_lz4_stream"]
        self.decompress_lz4_block = pools["decompress_lz4_block"]

    def _alloc(self, pool: EngineTaskPool, *args: Any) -> NativeCompressTask:
        what = TASK_FNS[pool.kind]["alloc_init"]
        rc = getattr(_cz(), what)(self.ptr, *args, 0, _byref(pool.out))
        return cast(NativeCompressTask, pool.take(rc, what))

    def task_compress_deflate_alloc_init(self, src: BufHandle, dst: BufHandle) -> NativeCompressTask:
        return self._alloc(self.compress_deflate, buf_ptr(src), buf_ptr(dst))

    def task_decompress_deflate_alloc_init(self, src: BufHandle, dst: BufHandle) -> NativeCompressTask:
        return self._alloc(self.decompress_deflate, buf_ptr(src), buf_ptr(dst))

    def task_decompress_lz4_stream_alloc_init(self, has_block_checksum: bool, are_blocks_independent: bool,
                                              src: BufHandle, dst: BufHandle) -> NativeCompressTask:
        pool = self.decompress_lz4_stream
        if pool.kind == LEGACY_LZ4:
            flags = (bool(has_block_checksum), bool(are_blocks_independent))
            if flags != _LEGACY_FLAGS:
                raise DocaNotSupported(
                    f"LZ4 stream flags has_block_checksum={flags[0]}, are_blocks_independent={flags[1]} need "
                    f"doca_compress_task_decompress_lz4_stream (DOCA 3.0+); the loaded DOCA "
                    f"{_version(_cz())} has only doca_compress_task_decompress_lz4, used here for "
                    "has_block_checksum=False, are_blocks_independent=True")
            return self._alloc(pool, buf_ptr(src), buf_ptr(dst))
        return self._alloc(pool, 1 if has_block_checksum else 0, 1 if are_blocks_independent else 0,
                           buf_ptr(src), buf_ptr(dst))

    def task_decompress_lz4_block_alloc_init(self, src: BufHandle, dst: BufHandle) -> NativeCompressTask:
        return self._alloc(self.decompress_lz4_block, buf_ptr(src), buf_ptr(dst))

    def cap_get_max_num_tasks(self) -> int:
        return get_u32(_cz().doca_compress_cap_get_max_num_tasks, self.ptr)


def compress_create(dev: object) -> NativeCompress:
    """``doca_compress_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(_cz().doca_compress_create(getattr(dev, "ptr"), _byref(out)), "doca_compress_create")
    return NativeCompress(out.value)


def cap_task_is_supported(devinfo: DevInfoHandle, task: str) -> bool:
    """``doca_compress_cap_task_<task>_is_supported``; ``False`` for a task type the
    loaded DOCA does not have (``decompress_lz4_block`` on 2.6)."""
    l = _cz()
    return is_supported(getattr(l, TASK_FNS[_c_kind(l, task)]["cap_is_supported"]), devinfo)


def cap_task_get_max_buf_size(devinfo: DevInfoHandle, task: str) -> int:
    l = _cz()
    return get_u64(getattr(l, TASK_FNS[_c_kind(l, task)]["cap_get_max_buf_size"]), devinfo_ptr(devinfo))


def cap_task_get_max_buf_list_len(devinfo: DevInfoHandle, task: str) -> int:
    l = _cz()
    return get_u32(getattr(l, TASK_FNS[_c_kind(l, task)]["cap_get_max_buf_list_len"]),
                   devinfo_ptr(devinfo))
