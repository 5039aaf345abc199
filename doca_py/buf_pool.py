"""``doca_buf_pool``: a pool of ``doca_buf``, each fixed to its own element of one mmap.

```pycon
>>> pool = BufPool(64, 4096, mm)          # 64 elements of 4 KiB carved from mm (started)
>>> buf = pool.buf_alloc()                # points at a free element, data empty
>>> buf.dec_refcount()                    # back to the pool (or buf.close())

```
"""

from __future__ import annotations

from typing import Any

from ._args import expect
from ._backend import backend
from ._backend.protocols.core import BufPoolHandle
from ._lifetime import DocaObject
from .buf import Buf, wrap_buf
from .mmap import Mmap

__all__ = ["BufPool"]


class BufPool(DocaObject):
    """``doca_buf_pool``: *num_elements* buffers of *element_size* bytes carved from *mmap*.

    Started on creation (after [`set_element_alignment`][doca_py.buf_pool.BufPool.set_element_alignment]
    with *element_alignment*) unless ``start=False``; *mmap* must be started before the pool starts and
    cannot close while the pool is open.

    :raises DocaInvalidValue: for a zero count or size, or an mmap without a memory range.
    :raises DocaTypeError: for an argument of the wrong type (naming it).
    :raises DocaInitialization: (start) when the elements do not fit the mmap's range.
    """

    _warn_unclosed = True

    def __init__(self, num_elements: int, element_size: int, mmap: Mmap, *, element_alignment: int | None = None,
                 start: bool = True, user_data: Any = None) -> None:
        super().__init__()
        expect("BufPool", int, num_elements=num_elements, element_size=element_size)
        expect("BufPool", Mmap, mmap=mmap)
        expect("BufPool", (int, type(None)), element_alignment=element_alignment)
        mmap._check_open()
        self._h: BufPoolHandle = backend.buf_pool.buf_pool_create(num_elements, element_size, mmap._h)
        self._arm_finalizer(self._h.destroy)
        self._mmap = mmap
        self.user_data: Any = user_data
        """Any object (``doca_buf_pool_set_user_data``)."""
        mmap._adopt(self)  # the mmap closes after the pool
        try:
            if element_alignment is not None:
                self._h.set_element_alignment(element_alignment)
            if start:
                self._h.start()
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        """``doca_buf_pool_start``: allow allocation (the constructor starts the pool already).

        :raises DocaBadState: when the mmap is not started, or the pool is started.
        :raises DocaInitialization: when the elements do not fit the mmap's range.
        """
        self._check_open()
        self._h.start()

    def stop(self) -> None:
        """``doca_buf_pool_stop``.

        :raises DocaInUse: while buffers of the pool are held.
        :raises DocaBadState: when the pool is not started.
        """
        self._check_open()  # a destroyed pool's handle is freed memory on the native backend
        self._h.stop()

    def set_element_alignment(self, alignment: int) -> None:
        """``doca_buf_pool_set_element_alignment``: align every element to *alignment* bytes (a power of 2;
        before start).

        :raises DocaBadState: when the pool is started.
        :raises DocaInvalidValue: when *alignment* is not a power of 2.
        """
        expect("BufPool.set_element_alignment", int, alignment=alignment)
        self._check_open()
        self._h.set_element_alignment(alignment)

    def get_element_alignment(self) -> int:
        """``doca_buf_pool_get_element_alignment``: the element alignment (1 unless set)."""
        self._check_open()
        return self._h.get_element_alignment()

    def get_num_elements(self) -> int:
        """``doca_buf_pool_get_num_elements``: the number of elements given at creation."""
        self._check_open()
        return self._h.get_num_elements()

    def get_num_free_elements(self) -> int:
        """``doca_buf_pool_get_num_free_elements``: how many elements can be allocated now."""
        self._check_open()
        return self._h.get_num_free_elements()

    def buf_alloc(self) -> Buf:
        """``doca_buf_pool_buf_alloc``: a buffer over a free element, with empty data at its start. It returns to
        the pool when its reference count reaches 0 ([`Buf.dec_refcount`][doca_py.buf.Buf.dec_refcount],
        [`Buf.close`][doca_py.buf.Buf.close]).

        :raises DocaBadState: when the pool is not started.
        :raises DocaEmpty: when every element is allocated.
        """
        self._check_open()
        return wrap_buf(self._h.buf_alloc(), self, self._mmap)

    @property
    def mmap(self) -> Mmap:
        """Python-only: the [`Mmap`][doca_py.mmap.Mmap] the elements are carved from."""
        return self._mmap

    def _close(self) -> None:
        self._h.destroy()

    def _repr_facts(self) -> list[str]:
        return [f"elements={self._h.get_num_elements()}", f"free={self._h.get_num_free_elements()}"]

    def __enter__(self) -> BufPool:
        return self
