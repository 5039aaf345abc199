"""libdoca_compress served by the emulator: DEFLATE, the LZ4 stream and block tasks, and DOCA 2.6's LZ4 task.

DOCA 2.6's ``doca_compress_*decompress_lz4*`` (no LZ4 flags; CRC and Adler-32 checksums) is served by the
emulator's LZ4-stream pool with the flags the 2.6 task implies: no block checksums, independent blocks
(the same reading :mod:`doca_py.native.compress` gives it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...emulated import compress as emu
from ...emulated.compress import EmuCompress, EmuCompressTask
from ...emulated.ctx import TaskPool
from ...emulated.dev import EmuDev, EmuDevInfo
from ...errors import DocaInvalidValue, DocaNotSupported
from ._core import handle, impl, obj, out_ptr, out_u32, out_u64
from .common import alloc_or_fail, buf_of, ctx_extra, forget_ctx, task_set_conf

#: The emulator's task type behind each C task type (2.6's ``decompress_lz4`` is the stream task).
KINDS = {"compress_deflate": "compress_deflate", "decompress_deflate": "decompress_deflate",
         "decompress_lz4_stream": "decompress_lz4_stream", "decompress_lz4_block": "decompress_lz4_block",
         "decompress_lz4": "decompress_lz4_stream"}
#: (has_block_checksum, are_blocks_independent) of DOCA 2.6's ``decompress_lz4`` task.
LEGACY_LZ4_FLAGS = (False, True)
#: The second checksum getter of each C task type.
SECOND_CS = {"compress_deflate": "adler", "decompress_deflate": "adler", "decompress_lz4": "adler",
             "decompress_lz4_stream": "xxh", "decompress_lz4_block": "xxh"}


def _compress(p: int | None) -> EmuCompress:
    return obj(p, EmuCompress, "doca_compress")


def _devinfo(p: int | None) -> EmuDevInfo:
    return obj(p, EmuDevInfo, "doca_devinfo")


def _pool(c: EmuCompress, kind: str) -> TaskPool[Any]:
    pool: TaskPool[Any] = getattr(c, KINDS[kind])
    return pool


@impl("doca_compress_create")
def _create(dev: int | None, out: int | None) -> None:
    c = emu.compress_create(obj(dev, EmuDev, "doca_dev"))
    out_ptr(out, ctx_extra(c).handle)


@impl("doca_compress_destroy")
def _destroy(p: int | None) -> None:
    c = _compress(p)
    c.destroy()
    forget_ctx(c)


@impl("doca_compress_as_ctx")
def _as_ctx(p: int | None) -> int:
    return handle(_compress(p))


@impl("doca_compress_cap_get_max_num_tasks")
def _cap_max_tasks(p: int | None, out: int | None) -> None:
    out_u32(out, _compress(p).cap_get_max_num_tasks())


def _serve_kind(kind: str) -> None:
    """Register every C function of task type *kind* (``doca_compress_*_<kind>_*``)."""
    emu_kind = KINDS[kind]

    def task(p: int | None) -> EmuCompressTask:
        t = obj(p, EmuCompressTask, f"doca_compress_task_{kind}")
        if t.pool.kind != emu_kind:
            raise DocaInvalidValue(f"doca_compress_task_{kind}: the task is a {t.pool.kind} task")
        return t

    def cap_is_supported(info: int | None) -> None:
        if not emu.cap_task_is_supported(_devinfo(info), emu_kind):
            raise DocaNotSupported(f"the device has no {kind} task")

    def cap_max_buf_size(info: int | None, out: int | None) -> None:
        out_u64(out, emu.cap_task_get_max_buf_size(_devinfo(info), emu_kind))

    def cap_max_list_len(info: int | None, out: int | None) -> None:
        out_u32(out, emu.cap_task_get_max_buf_list_len(_devinfo(info), emu_kind))

    def set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
        task_set_conf(_pool(_compress(p), kind), ok, err, num)

    def as_task(p: int | None) -> int:
        return handle(task(p))

    def set_src(p: int | None, b: int | None) -> None:
        task(p).set_src(buf_of(b))

    def set_dst(p: int | None, b: int | None) -> None:
        task(p).set_dst(buf_of(b))

    def get_src(p: int | None) -> int | None:
        b = task(p).src
        return handle(b) if b is not None else None

    def get_dst(p: int | None) -> int | None:
        b = task(p).dst
        return handle(b) if b is not None else None

    def checksum(name: str) -> Callable[[int | None], int]:
        def get(p: int | None) -> int:
            return int(getattr(task(p), f"{name}_cs"))
        return get

    pre = f"doca_compress_task_{kind}"
    cap = f"doca_compress_cap_task_{kind}"
    impl(f"{cap}_is_supported")(cap_is_supported)
    impl(f"{cap}_get_max_buf_size")(cap_max_buf_size)
    impl(f"{cap}_get_max_buf_list_len")(cap_max_list_len)
    impl(f"{pre}_set_conf")(set_conf)
    impl(f"{pre}_as_task")(as_task)
    impl(f"{pre}_set_src")(set_src)
    impl(f"{pre}_get_src")(get_src)
    impl(f"{pre}_set_dst")(set_dst)
    impl(f"{pre}_get_dst")(get_dst)
    impl(f"{pre}_get_crc_cs")(checksum("crc"))
    impl(f"{pre}_get_{SECOND_CS[kind]}_cs")(checksum(SECOND_CS[kind]))

    if kind == "decompress_lz4_stream":
        def flag(name: str) -> None:
            def setter(p: int | None, value: int) -> None:
                t = task(p)
                t._settable(f"{pre}_set_{name}")
                setattr(t, name, bool(value))

            def getter(p: int | None) -> int:
                return int(bool(getattr(task(p), name)))

            impl(f"{pre}_set_{name}")(setter)
            impl(f"{pre}_get_{name}")(getter)

        flag("has_block_checksum")
        flag("are_blocks_independent")


for _kind in KINDS:
    _serve_kind(_kind)


@impl("doca_compress_task_compress_deflate_alloc_init")
def _alloc_deflate(p: int | None, src: int | None, dst: int | None, ud: int, out: int | None) -> None:
    c, s, d = _compress(p), buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: c.task_compress_deflate_alloc_init(s, d), ud, out)


@impl("doca_compress_task_decompress_deflate_alloc_init")
def _alloc_inflate(p: int | None, src: int | None, dst: int | None, ud: int, out: int | None) -> None:
    c, s, d = _compress(p), buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: c.task_decompress_deflate_alloc_init(s, d), ud, out)


@impl("doca_compress_task_decompress_lz4_stream_alloc_init")
def _alloc_lz4_stream(p: int | None, has_block_checksum: int, are_blocks_independent: int, src: int | None,
                      dst: int | None, ud: int, out: int | None) -> None:
    c, s, d = _compress(p), buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: c.task_decompress_lz4_stream_alloc_init(bool(has_block_checksum),
                                                                  bool(are_blocks_independent), s, d), ud, out)


@impl("doca_compress_task_decompress_lz4_block_alloc_init")
def _alloc_lz4_block(p: int | None, src: int | None, dst: int | None, ud: int, out: int | None) -> None:
    c, s, d = _compress(p), buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: c.task_decompress_lz4_block_alloc_init(s, d), ud, out)


@impl("doca_compress_task_decompress_lz4_alloc_init")
def _alloc_lz4_26(p: int | None, src: int | None, dst: int | None, ud: int, out: int | None) -> None:
    c, s, d = _compress(p), buf_of(src), buf_of(dst)
    alloc_or_fail(lambda: c.task_decompress_lz4_stream_alloc_init(*LEGACY_LZ4_FLAGS, s, d), ud, out)
