"""libdoca_common's ``doca_buf_pool`` served by the emulator."""

from __future__ import annotations

from ...emulated import buf_pool as emu
from ...emulated.buf_pool import EmuBufPool
from ...emulated.mmap import EmuMmap
from ...errors import DocaInvalidValue
from ._core import forget, handle, impl, obj, out_ptr, out_u32, out_u64

_user_data: dict[int, int] = {}


def _pool(p: int | None) -> EmuBufPool:
    return obj(p, EmuBufPool, "doca_buf_pool")


@impl("doca_buf_pool_create")
def _create(num: int, size: int, m: int | None, out: int | None) -> None:
    mm = obj(m, EmuMmap, "doca_mmap")
    if not out:
        raise DocaInvalidValue("NULL output pointer for the buf pool")
    out_ptr(out, handle(emu.buf_pool_create(num, size, mm)))


@impl("doca_buf_pool_destroy")
def _destroy(p: int | None) -> None:
    pool = _pool(p)
    pool.destroy()  # refused while a buf is out: every descriptor is home
    _user_data.pop(id(pool), None)
    for b in pool.free:
        forget(b)
    forget(pool)


@impl("doca_buf_pool_start")
def _start(p: int | None) -> None:
    _pool(p).start()


@impl("doca_buf_pool_stop")
def _stop(p: int | None) -> None:
    _pool(p).stop()


@impl("doca_buf_pool_buf_alloc")
def _alloc(p: int | None, out: int | None) -> None:
    pool = _pool(p)
    if not out:
        raise DocaInvalidValue("NULL output pointer for the buf")
    out_ptr(out, handle(pool.buf_alloc()))


@impl("doca_buf_pool_set_user_data")
def _set_ud(p: int | None, ud: int) -> None:
    _user_data[id(_pool(p))] = ud


@impl("doca_buf_pool_get_user_data")
def _get_ud(p: int | None, out: int | None) -> None:
    out_u64(out, _user_data.get(id(_pool(p)), 0))


@impl("doca_buf_pool_set_element_alignment")
def _set_align(p: int | None, alignment: int) -> None:
    _pool(p).set_element_alignment(alignment)


@impl("doca_buf_pool_get_element_alignment")
def _get_align(p: int | None, out: int | None) -> None:
    out_u64(out, _pool(p).get_element_alignment())


@impl("doca_buf_pool_get_num_elements")
def _num(p: int | None, out: int | None) -> None:
    out_u32(out, _pool(p).get_num_elements())


@impl("doca_buf_pool_get_num_free_elements")
def _num_free(p: int | None, out: int | None) -> None:
    out_u32(out, _pool(p).get_num_free_elements())
