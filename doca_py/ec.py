"""``doca_ec``: erasure coding (Reed–Solomon over GF(2^8)).

```pycon
>>> ec = Ec(dev); pe.connect_ctx(ec)
>>> ec.task_create_set_conf(on_done, on_error, 16); ec.start()
>>> coding = ec.matrix_create(EcMatrixType.CAUCHY, k=4, m=2)
>>> ec.task_create_allocate_init(coding, data_blocks, parity).submit()   # parity grows by m blocks
>>> rec = ec.matrix_create_recover(coding, [1])                         # block 1 lost
>>> ec.task_recover_allocate_init(rec, survivors, out).submit()          # the first k survivors, in index order

```

Blocks are ``src data_len / k`` bytes, a multiple of 64 and at least 64. The
emulated backend is bit-compatible with ISA-L's ``gf_gen_rs_matrix``
(Vandermonde) and ``gf_gen_cauchy1_matrix`` (Cauchy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._args import caller, expect, wrong_type
from ._backend import backend
from ._backend.protocols.core import BufHandle
from ._backend.protocols.engines import EcHandle, EcMatrixHandle, EcTaskHandle
from ._lifetime import DocaObject
from .buf import Buf, freed_buf
from .ctx import Ctx, Task, TaskCallback
from .dev import Dev, DevInfo, devinfo_handle
from .errors import DocaInvalidValue, DocaTypeError
from .types import NamedIntEnum

__all__ = ["Ec", "EcMatrix", "EcMatrixType", "EcTaskCreate", "EcTaskRecover", "EcTaskUpdate", "EcTaskGaloisMul"]


class EcMatrixType(NamedIntEnum):
    """``enum doca_ec_matrix_type``."""

    CAUCHY = 1
    """``DOCA_EC_MATRIX_TYPE_CAUCHY``."""
    VANDERMONDE = 2
    """``DOCA_EC_MATRIX_TYPE_VANDERMONDE``."""


class EcMatrix(DocaObject):
    """``doca_ec_matrix``: closed with its ``Ec`` (or earlier with [`close`][doca_py.ec.EcMatrix.close])."""

    def __init__(self, handle: EcMatrixHandle, k_in: int, r_out: int) -> None:
        super().__init__()
        self._h = handle
        #: Input blocks the matrix multiplies and output blocks it produces.
        self.k_in, self.r_out = k_in, r_out

    @classmethod
    def from_handle(cls, ec: Ec, handle: EcMatrixHandle | int, k_in: int, r_out: int) -> EcMatrix:
        """Python-only: wrap an existing ``doca_ec_matrix`` of *ec* without taking ownership.

        *handle* is another wrapper's ``handle``: on the native backend the address of a C
        ``doca_ec_matrix`` (made by ``doca_ec_matrix_create`` on the ``doca_ec`` *ec* wraps), on the emulated
        backend the backend object. DOCA has no getter for a matrix's shape, so *k_in* (blocks it multiplies:
        k of a coding matrix) and *r_out* (blocks it produces: m) are arguments. The wrapper is borrowed:
        its ``close`` (or *ec*'s) never calls ``doca_ec_matrix_destroy``; the matrix's creator does.

        :raises DocaInvalidValue: when *k_in* or *r_out* is not positive, or *handle* is NULL.
        """
        ec._check_open()
        if k_in <= 0 or r_out <= 0:
            raise DocaInvalidValue(f"a matrix shape needs k_in, r_out > 0, got {k_in}, {r_out}")
        mat = cls(backend.borrow_ec_matrix(handle, ec._h) if isinstance(handle, int) else handle, k_in, r_out)
        mat._borrow()
        ec._adopt(mat)
        return mat

    def _close(self) -> None:
        self._h.destroy()


def _indices(where: str, name: str, values: Sequence[int]) -> list[int]:
    """Block indices: a sequence of ``int`` (``DocaTypeError`` naming *where* and *name* otherwise)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise DocaTypeError(f"{where}: {name} must be a sequence of block indices, not {type(values).__name__}")
    for i in values:
        if not isinstance(i, int):
            raise DocaTypeError(f"{where}: {name} must hold block indices (int), not {type(i).__name__}")
    return list(values)


class _EcTask(Task):
    __slots__ = ("_matrix", "_src", "_dst")
    _h: EcTaskHandle
    _matrix: EcMatrix
    _src: Buf
    _dst: Buf

    def _get_matrix(self) -> EcMatrix:
        return self._matrix

    # Re-aiming a task between runs (not while in flight), as DOCA's task setters do.
    def _set_matrix(self, matrix: EcMatrix) -> None:
        if not isinstance(matrix, EcMatrix):
            raise wrong_type(caller(), EcMatrix, matrix=matrix)
        self._h.set_matrix(matrix._h)
        self._matrix = matrix

    def _set_src(self, buf: Buf) -> None:
        if not isinstance(buf, Buf):
            raise wrong_type(caller(), Buf, buf=buf)
        if buf._closed:
            raise freed_buf(caller(), buf=buf)
        self._h.set_src(buf._h)
        self._src = buf

    def _set_dst(self, buf: Buf) -> None:
        if not isinstance(buf, Buf):
            raise wrong_type(caller(), Buf, buf=buf)
        if buf._closed:
            raise freed_buf(caller(), buf=buf)
        self._h.set_dst(buf._h)
        self._dst = buf


class EcTaskCreate(_EcTask):
    """``doca_ec_task_create``: m redundancy blocks from k data blocks."""

    __slots__ = ()

    def get_coding_matrix(self) -> EcMatrix:
        """``doca_ec_task_create_get_coding_matrix``: the coding matrix."""
        return self._get_matrix()

    def get_original_data_blocks(self) -> Buf:
        """``doca_ec_task_create_get_original_data_blocks``: the original data blocks."""
        return self._src

    def get_rdnc_blocks(self) -> Buf:
        """``doca_ec_task_create_get_rdnc_blocks``: the rdnc blocks."""
        return self._dst

    def set_coding_matrix(self, matrix: EcMatrix) -> None:
        """``doca_ec_task_create_set_coding_matrix``."""
        self._set_matrix(matrix)

    def set_original_data_blocks(self, buf: Buf) -> None:
        """``doca_ec_task_create_set_original_data_blocks``: the k data blocks, back to back."""
        self._set_src(buf)

    def set_rdnc_blocks(self, buf: Buf) -> None:
        """``doca_ec_task_create_set_rdnc_blocks``: where the m redundancy blocks are appended."""
        self._set_dst(buf)


class EcTaskRecover(_EcTask):
    """``doca_ec_task_recover``: missing blocks from k surviving ones."""

    __slots__ = ()

    def get_recover_matrix(self) -> EcMatrix:
        """``doca_ec_task_recover_get_recover_matrix``: the recover matrix."""
        return self._get_matrix()

    def get_available_blocks(self) -> Buf:
        """``doca_ec_task_recover_get_available_blocks``: the available blocks."""
        return self._src

    def get_recovered_data(self) -> Buf:
        """``doca_ec_task_recover_get_recovered_data``: the recovered data."""
        return self._dst

    def set_recover_matrix(self, matrix: EcMatrix) -> None:
        """``doca_ec_task_recover_set_recover_matrix``."""
        self._set_matrix(matrix)

    def set_available_blocks(self, buf: Buf) -> None:
        """``doca_ec_task_recover_set_available_blocks``: the k surviving blocks (a list may chain them)."""
        self._set_src(buf)

    def set_recovered_data(self, buf: Buf) -> None:
        """``doca_ec_task_recover_set_recovered_data_blocks``: where the missing blocks are appended."""
        self._set_dst(buf)


class EcTaskUpdate(_EcTask):
    """``doca_ec_task_update``: new redundancy from (old, new) block pairs and the old redundancy."""

    __slots__ = ()

    def get_update_matrix(self) -> EcMatrix:
        """``doca_ec_task_update_get_update_matrix``: the update matrix."""
        return self._get_matrix()

    def get_original_updated_and_rdnc_blocks(self) -> Buf:
        """``doca_ec_task_update_get_original_updated_and_rdnc_blocks``: the original updated and rdnc blocks."""
        return self._src

    def get_updated_rdnc_blocks(self) -> Buf:
        """``doca_ec_task_update_get_updated_rdnc_blocks``: the updated rdnc blocks."""
        return self._dst

    def set_update_matrix(self, matrix: EcMatrix) -> None:
        """``doca_ec_task_update_set_update_matrix``."""
        self._set_matrix(matrix)

    def set_original_updated_and_rdnc_blocks(self, buf: Buf) -> None:
        """``doca_ec_task_update_set_original_updated_and_rdnc_blocks``."""
        self._set_src(buf)

    def set_updated_rdnc_blocks(self, buf: Buf) -> None:
        """``doca_ec_task_update_set_updated_rdnc_blocks``."""
        self._set_dst(buf)


class EcTaskGaloisMul(_EcTask):
    """``doca_ec_task_galois_mul``: a raw GF(2^8) matrix product of blocks."""

    __slots__ = ()

    def get_coding_matrix(self) -> EcMatrix:
        """``doca_ec_task_galois_mul_get_coding_matrix``: the coding matrix."""
        return self._get_matrix()

    def get_src_buf(self) -> Buf:
        """``doca_ec_task_galois_mul_get_src_buf``: the src buf."""
        return self._src

    def get_dst_buf(self) -> Buf:
        """``doca_ec_task_galois_mul_get_dst_buf``: the dst buf."""
        return self._dst

    def set_coding_matrix(self, matrix: EcMatrix) -> None:
        """``doca_ec_task_galois_mul_set_coding_matrix``."""
        self._set_matrix(matrix)

    def set_src_buf(self, buf: Buf) -> None:
        """``doca_ec_task_galois_mul_set_src_buf``."""
        self._set_src(buf)

    def set_dst_buf(self, buf: Buf) -> None:
        """``doca_ec_task_galois_mul_set_dst_buf``."""
        self._set_dst(buf)


_ET = TypeVar("_ET", bound=_EcTask)


class Ec(Ctx):
    """``doca_ec`` context on *dev*. Matrices it creates close with it."""

    @classmethod
    def from_handle(cls, dev: Dev, handle: EcHandle | int, user_data: Any = None) -> Ec:
        """Python-only: wrap an existing ``doca_ec`` on *dev* without taking ownership (it keeps its state,
        configuration and Pe; connect this wrapper to that Pe's wrapper with ``Pe.connect_ctx`` only if it is not
        connected).

        *handle* is another wrapper's ``handle``: on the native backend
        the address of a C ``doca_ec`` (one made by C code, say), on the emulated backend the backend object.
        The wrapper is borrowed: its ``close`` closes the Python objects made through it but never
        destroys the DOCA object, which its creator destroys after closing this wrapper.
        """
        c = cls(dev, user_data, _handle=backend.borrow_ec(handle) if isinstance(handle, int) else handle)
        c._borrow()
        return c

    def __init__(self, dev: Dev, user_data: Any = None, *, _handle: EcHandle | None = None) -> None:
        expect("Ec", Dev, dev=dev)
        dev._check_open()
        self._h: EcHandle = backend.ec.ec_create(dev._h) if _handle is None else _handle
        super().__init__(self._h, user_data)
        dev._adopt(self)

    # -- matrices ---------------------------------------------------------------------------
    def _matrix(self, h: EcMatrixHandle, k_in: int, r_out: int) -> EcMatrix:
        mat = EcMatrix(h, k_in, r_out)
        self._adopt(mat)
        return mat

    def matrix_create(self, matrix_type: EcMatrixType, k: int, m: int) -> EcMatrix:
        """``doca_ec_matrix_create``: a coding matrix for *k* data and *m* redundancy blocks."""
        self._check_open()
        return self._matrix(self._h.matrix_create(int(matrix_type), k, m), k, m)

    def matrix_create_from_raw(self, data: bytes, k: int, m: int) -> EcMatrix:
        """``doca_ec_matrix_create_from_raw``: a coding matrix from ``k*m`` coefficients: k rows (one per data block)
        of m."""
        self._check_open()
        return self._matrix(self._h.matrix_create_from_raw(bytes(data), k, m), k, m)

    def matrix_create_recover(self, coding_matrix: EcMatrix, missing: Sequence[int]) -> EcMatrix:
        """``doca_ec_matrix_create_recover``: a recover matrix for the ascending block indices *missing* (data
        ``0..k-1``, redundancy ``k..k+m-1``). The recover task then takes the first k surviving blocks in index order
        and writes the missing ones in ascending order."""
        self._check_open()
        expect("Ec.matrix_create_recover", EcMatrix, coding_matrix=coding_matrix)
        idx = _indices("Ec.matrix_create_recover", "missing", missing)
        return self._matrix(self._h.matrix_create_recover(coding_matrix._h, idx), coding_matrix.k_in, len(idx))

    def matrix_create_update(self, coding_matrix: EcMatrix, updated: Sequence[int]) -> EcMatrix:
        """``doca_ec_matrix_create_update``: an update matrix for the ascending data block indices *updated*. The
        update task takes ``(old, new)`` per updated block, then the m old redundancy blocks."""
        self._check_open()
        expect("Ec.matrix_create_update", EcMatrix, coding_matrix=coding_matrix)
        idx = _indices("Ec.matrix_create_update", "updated", updated)
        m = coding_matrix.r_out
        return self._matrix(self._h.matrix_create_update(coding_matrix._h, idx), 2 * len(idx) + m, m)

    # -- tasks --------------------------------------------------------------------------------
    def task_create_set_conf(self, success: TaskCallback[EcTaskCreate], error: TaskCallback[EcTaskCreate],
                             num_tasks: int) -> None:
        """``doca_ec_task_create_set_conf``: configure the create tasks (before start): the completion and error
        callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.create, success, error, num_tasks)

    def task_recover_set_conf(self, success: TaskCallback[EcTaskRecover], error: TaskCallback[EcTaskRecover],
                           num_tasks: int) -> None:
        """``doca_ec_task_recover_set_conf``: configure the recover tasks (before start): the completion and error
        callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.recover, success, error, num_tasks)

    def task_update_set_conf(self, success: TaskCallback[EcTaskUpdate], error: TaskCallback[EcTaskUpdate],
                             num_tasks: int) -> None:
        """``doca_ec_task_update_set_conf``: configure the update tasks (before start): the completion and error
        callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.update, success, error, num_tasks)

    def task_galois_mul_set_conf(self, success: TaskCallback[EcTaskGaloisMul],
                           error: TaskCallback[EcTaskGaloisMul], num_tasks: int) -> None:
        """``doca_ec_task_galois_mul_set_conf``: configure the galois mul tasks (before start): the completion and
        error callbacks and the pool size.

        :raises DocaBadState: when the ctx is not idle.
        """
        self._set_conf(self._h.galois_mul, success, error, num_tasks)

    def _alloc(self, alloc: Callable[[EcMatrixHandle, BufHandle, BufHandle], EcTaskHandle], cls: type[_ET],
               matrix: EcMatrix, src: Buf, dst: Buf, user_data: Any) -> _ET:
        if not (isinstance(matrix, EcMatrix) and isinstance(src, Buf) and isinstance(dst, Buf)):
            where = caller()
            raise wrong_type(where, EcMatrix, matrix=matrix) if not isinstance(matrix, EcMatrix) else \
                wrong_type(where, Buf, src=src, dst=dst)
        if src._closed or dst._closed:
            raise freed_buf(caller(), src=src, dst=dst)
        if matrix.closed:
            raise DocaInvalidValue("the EC matrix is closed")
        t = self._wrap_task(alloc(matrix._h, src._h, dst._h), cls, user_data)
        t._matrix, t._src, t._dst = matrix, src, dst
        return t

    def task_create_allocate_init(self, coding_matrix: EcMatrix, original_data_blocks: Buf, rdnc_blocks: Buf,
                           user_data: Any = None) -> EcTaskCreate:
        """``doca_ec_task_create_allocate_init``: encode: *original_data_blocks* holds k blocks back to back; m blocks
        are appended after *rdnc_blocks*' data."""
        return self._alloc(self._h.task_create_allocate_init, EcTaskCreate, coding_matrix,
                           original_data_blocks, rdnc_blocks, user_data)

    def task_recover_allocate_init(self, recover_matrix: EcMatrix, available_blocks: Buf, recovered_data: Buf,
                           user_data: Any = None) -> EcTaskRecover:
        """``doca_ec_task_recover_allocate_init``: recover: *available_blocks* (a buffer or a list) holds k surviving
        blocks."""
        return self._alloc(self._h.task_recover_allocate_init, EcTaskRecover, recover_matrix,
                           available_blocks, recovered_data, user_data)

    def task_update_allocate_init(self, update_matrix: EcMatrix, original_updated_and_rdnc_blocks: Buf,
                           updated_rdnc_blocks: Buf, user_data: Any = None) -> EcTaskUpdate:
        """``doca_ec_task_update_allocate_init``: take a update task from the pool, initialised with the arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        return self._alloc(self._h.task_update_allocate_init, EcTaskUpdate, update_matrix,
                           original_updated_and_rdnc_blocks, updated_rdnc_blocks, user_data)

    def task_galois_mul_allocate_init(self, coding_matrix: EcMatrix, src_buf: Buf, dst_buf: Buf,
                           user_data: Any = None) -> EcTaskGaloisMul:
        """``doca_ec_task_galois_mul_allocate_init``: take a galois mul task from the pool, initialised with the
        arguments.

        :raises DocaNoMemory: when every task of the pool is in flight.
        :raises DocaBadState: when the ctx is not RUNNING or the task type is not configured.
        """
        return self._alloc(self._h.task_galois_mul_allocate_init, EcTaskGaloisMul,
                           coding_matrix, src_buf, dst_buf, user_data)

    # -- capabilities -------------------------------------------------------------------------
    @staticmethod
    def cap_task_create_is_supported(devinfo: DevInfo) -> bool:
        """``doca_ec_cap_task_create_is_supported``: whether *devinfo* supports task create."""
        return backend.ec.cap_task_create_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_task_recover_is_supported(devinfo: DevInfo) -> bool:
        """``doca_ec_cap_task_recover_is_supported``: whether *devinfo* supports task recover."""
        return backend.ec.cap_task_recover_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_task_update_is_supported(devinfo: DevInfo) -> bool:
        """``doca_ec_cap_task_update_is_supported``: whether *devinfo* supports task update."""
        return backend.ec.cap_task_update_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_task_galois_mul_is_supported(devinfo: DevInfo) -> bool:
        """``doca_ec_cap_task_galois_mul_is_supported``: whether *devinfo* supports task galois mul."""
        return backend.ec.cap_task_galois_mul_is_supported(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_block_size(devinfo: DevInfo) -> int:
        """``doca_ec_cap_get_max_block_size``: the largest block size *devinfo* supports."""
        return backend.ec.cap_get_max_block_size(devinfo_handle(devinfo))

    @staticmethod
    def cap_get_max_buf_list_len(devinfo: DevInfo) -> int:
        """``doca_ec_cap_get_max_buf_list_len``: the largest buf list len *devinfo* supports."""
        return backend.ec.cap_get_max_buf_list_len(devinfo_handle(devinfo))

    def __enter__(self) -> Ec:
        return self
