"""Native ``doca_ec`` (libdoca_erasure_coding): matrices and the four EC task types.

Same plumbing as :mod:`doca_py.native.dma` (one :class:`~doca_py.native.dma.EngineTaskPool`
per task type). Matrices are :class:`NativeEcMatrix` objects with ``destroy()``; a task
keeps a reference to its matrix so the Python object outlives the C pointer it uses.
libdoca_erasure_coding is opened on first use, never at import.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from .._backend.protocols.core import BufHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotPermitted, check
from .capi.erasure_coding import load_ec
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, buf_ptr, devinfo_ptr, get_u32, get_u64, init_ctx, is_supported

if TYPE_CHECKING:
    from .capi._raw import ErasureCodingLib

__all__ = [
    "NativeEc",
    "NativeEcMatrix",
    "NativeEcTask",
    "ec_create",
    "cap_task_create_is_supported",
    "cap_task_recover_is_supported",
    "cap_task_update_is_supported",
    "cap_task_galois_mul_is_supported",
    "cap_get_max_block_size",
    "cap_get_max_buf_list_len",
]

_byref = ctypes.byref

#: Per task type: operation → C function (the matrix, source and destination fields are named
#: differently per type; spelled out so ``grep`` finds each use).
TASK_FNS: dict[str, dict[str, str]] = {
    "create": {
        "cap_is_supported": "doca_ec_cap_task_create_is_supported",
        "set_conf": "doca_ec_task_create_set_conf",
        "allocate_init": "doca_ec_task_create_allocate_init",
        "as_task": "doca_ec_task_create_as_task",
        "set_matrix": "doca_ec_task_create_set_coding_matrix",
        "get_matrix": "doca_ec_task_create_get_coding_matrix",
        "set_src": "doca_ec_task_create_set_original_data_blocks",
        "get_src": "doca_ec_task_create_get_original_data_blocks",
        "set_dst": "doca_ec_task_create_set_rdnc_blocks",
        "get_dst": "doca_ec_task_create_get_rdnc_blocks",
    },
    "recover": {
        "cap_is_supported": "doca_ec_cap_task_recover_is_supported",
        "set_conf": "doca_ec_task_recover_set_conf",
        "allocate_init": "doca_ec_task_recover_allocate_init",
        "as_task": "doca_ec_task_recover_as_task",
        "set_matrix": "doca_ec_task_recover_set_recover_matrix",
        "get_matrix": "doca_ec_task_recover_get_recover_matrix",
        "set_src": "doca_ec_task_recover_set_available_blocks",
        "get_src": "doca_ec_task_recover_get_available_blocks",
        "set_dst": "doca_ec_task_recover_set_recovered_data_blocks",
        "get_dst": "doca_ec_task_recover_get_recovered_data",
    },
    "update": {
        "cap_is_supported": "doca_ec_cap_task_update_is_supported",
        "set_conf": "doca_ec_task_update_set_conf",
        "allocate_init": "doca_ec_task_update_allocate_init",
        "as_task": "doca_ec_task_update_as_task",
        "set_matrix": "doca_ec_task_update_set_update_matrix",
        "get_matrix": "doca_ec_task_update_get_update_matrix",
        "set_src": "doca_ec_task_update_set_original_updated_and_rdnc_blocks",
        "get_src": "doca_ec_task_update_get_original_updated_and_rdnc_blocks",
        "set_dst": "doca_ec_task_update_set_updated_rdnc_blocks",
        "get_dst": "doca_ec_task_update_get_updated_rdnc_blocks",
    },
    "galois_mul": {
        "cap_is_supported": "doca_ec_cap_task_galois_mul_is_supported",
        "set_conf": "doca_ec_task_galois_mul_set_conf",
        "allocate_init": "doca_ec_task_galois_mul_allocate_init",
        "as_task": "doca_ec_task_galois_mul_as_task",
        "set_matrix": "doca_ec_task_galois_mul_set_coding_matrix",
        "get_matrix": "doca_ec_task_galois_mul_get_coding_matrix",
        "set_src": "doca_ec_task_galois_mul_set_src_buf",
        "get_src": "doca_ec_task_galois_mul_get_src_buf",
        "set_dst": "doca_ec_task_galois_mul_set_dst_buf",
        "get_dst": "doca_ec_task_galois_mul_get_dst_buf",
    },
}


def _ec() -> ErasureCodingLib:
    return load_ec()


class NativeEcMatrix:
    """``doca_ec_matrix *``; *keep* holds memory the matrix was created from."""

    __slots__ = ("ptr", "ec", "_keep")

    def __init__(self, ptr: int | None, ec: NativeEc, keep: object = None) -> None:
        self.ptr = ptr
        self.ec = ec
        self._keep = keep

    def destroy(self) -> None:
        """``doca_ec_matrix_destroy`` (idempotent)."""
        ptr, self.ptr = self.ptr, None
        if ptr:
            check(_ec().doca_ec_matrix_destroy(ptr), "doca_ec_matrix_destroy")


def _fn(kind: str, what: str) -> Any:
    return getattr(_ec(), TASK_FNS[kind][what])


class NativeEcTask(EngineTask):
    """A ``doca_ec_task_{create,recover,update,galois_mul} *``."""

    __slots__ = ("matrix",)

    def __init__(self, ptr: int, pool: EngineTaskPool) -> None:
        super().__init__(ptr, pool)
        self.matrix: NativeEcMatrix | None = None

    @property
    def kind(self) -> str:
        return cast(EngineTaskPool, self.pool).kind

    def set_matrix(self, matrix: object) -> None:
        m = _matrix_ptr(matrix)
        _fn(self.kind, "set_matrix")(self.ptr, m)
        self.matrix = cast(NativeEcMatrix, matrix)

    def get_matrix(self) -> int | None:
        return cast("int | None", _fn(self.kind, "get_matrix")(self.ptr))

    def set_src(self, buf: BufHandle) -> None:
        _fn(self.kind, "set_src")(self.ptr, buf_ptr(buf))

    def get_src(self) -> int | None:
        return cast("int | None", _fn(self.kind, "get_src")(self.ptr))

    def set_dst(self, buf: BufHandle) -> None:
        _fn(self.kind, "set_dst")(self.ptr, buf_ptr(buf))

    def get_dst(self) -> int | None:
        return cast("int | None", _fn(self.kind, "get_dst")(self.ptr))


def _matrix_ptr(matrix: object) -> int:
    if not isinstance(matrix, NativeEcMatrix) or not matrix.ptr:
        raise DocaInvalidValue("expected a live native EC matrix")
    return matrix.ptr


class NativeEc(NativeCtx):
    """``doca_ec *`` and its ctx."""

    def __init__(self, ptr: int | None) -> None:
        l = _ec()
        self.ptr = ptr
        init_ctx(self, ptr, l.doca_ec_as_ctx, l.doca_ec_destroy, "doca_ec")
        pools: dict[str, EngineTaskPool] = {}
        for kind, fns in TASK_FNS.items():
            pools[kind] = EngineTaskPool(self, partial(getattr(l, fns["set_conf"]), ptr), fns["set_conf"],
                                         getattr(l, fns["as_task"]), NativeEcTask, kind)
        self.create = pools["create"]
        self.recover = pools["recover"]
        self.update = pools["update"]
        self.galois_mul = pools["galois_mul"]
        self._allocs = {kind: getattr(l, fns["allocate_init"]) for kind, fns in TASK_FNS.items()}

    # -- matrices ------------------------------------------------------------------------------
    def _new_matrix(self, rc: int, out: ctypes.c_void_p, what: str, keep: object = None) -> NativeEcMatrix:
        check(rc, what)
        return NativeEcMatrix(out.value, self, keep)

    def _mine(self, matrix: object) -> int:
        ptr = _matrix_ptr(matrix)
        if cast(NativeEcMatrix, matrix).ec is not self:
            raise DocaNotPermitted("the matrix belongs to another Ec context")
        return ptr

    def matrix_create(self, matrix_type: int, k: int, m: int) -> NativeEcMatrix:
        out = ctypes.c_void_p()
        rc = _ec().doca_ec_matrix_create(self.ptr, matrix_type, k, m, _byref(out))
        return self._new_matrix(rc, out, "doca_ec_matrix_create")

    def matrix_create_from_raw(self, data: bytes, k: int, m: int) -> NativeEcMatrix:
        if len(data) != k * m:
            raise DocaInvalidValue(f"raw matrix has {len(data)} bytes, k*m = {k * m}")
        raw = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        out = ctypes.c_void_p()
        rc = _ec().doca_ec_matrix_create_from_raw(self.ptr, raw, k, m, _byref(out))
        return self._new_matrix(rc, out, "doca_ec_matrix_create_from_raw", raw)

    def _derived(self, fn_name: str, coding: object, indices: Sequence[int]) -> NativeEcMatrix:
        c = self._mine(coding)
        idx = (ctypes.c_uint32 * len(indices))(*indices)
        out = ctypes.c_void_p()
        rc = getattr(_ec(), fn_name)(self.ptr, c, idx, len(indices), _byref(out))
        return self._new_matrix(rc, out, fn_name)

    def matrix_create_recover(self, coding: Any, missing: list[int]) -> NativeEcMatrix:
        return self._derived("doca_ec_matrix_create_recover", coding, missing)

    def matrix_create_update(self, coding: Any, updated: list[int]) -> NativeEcMatrix:
        return self._derived("doca_ec_matrix_create_update", coding, updated)

    # -- tasks ---------------------------------------------------------------------------------
    def _alloc(self, kind: str, pool: EngineTaskPool, matrix: object, src: BufHandle, dst: BufHandle) -> NativeEcTask:
        m = self._mine(matrix)
        rc = self._allocs[kind](self.ptr, m, buf_ptr(src), buf_ptr(dst), 0, _byref(pool.out))
        t = cast(NativeEcTask, pool.take(rc, TASK_FNS[kind]["allocate_init"]))
        t.matrix = cast(NativeEcMatrix, matrix)
        return t

    def task_create_allocate_init(self, matrix: Any, src: BufHandle, dst: BufHandle) -> NativeEcTask:
        return self._alloc("create", self.create, matrix, src, dst)

    def task_recover_allocate_init(self, matrix: Any, src: BufHandle, dst: BufHandle) -> NativeEcTask:
        return self._alloc("recover", self.recover, matrix, src, dst)

    def task_update_allocate_init(self, matrix: Any, src: BufHandle, dst: BufHandle) -> NativeEcTask:
        return self._alloc("update", self.update, matrix, src, dst)

    def task_galois_mul_allocate_init(self, matrix: Any, src: BufHandle, dst: BufHandle) -> NativeEcTask:
        return self._alloc("galois_mul", self.galois_mul, matrix, src, dst)


def ec_create(dev: object) -> NativeEc:
    """``doca_ec_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(_ec().doca_ec_create(getattr(dev, "ptr"), _byref(out)), "doca_ec_create")
    return NativeEc(out.value)


def cap_task_create_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_ec().doca_ec_cap_task_create_is_supported, devinfo)


def cap_task_recover_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_ec().doca_ec_cap_task_recover_is_supported, devinfo)


def cap_task_update_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_ec().doca_ec_cap_task_update_is_supported, devinfo)


def cap_task_galois_mul_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_ec().doca_ec_cap_task_galois_mul_is_supported, devinfo)


def cap_get_max_block_size(devinfo: DevInfoHandle) -> int:
    return get_u64(_ec().doca_ec_cap_get_max_block_size, devinfo_ptr(devinfo))


def cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return get_u32(_ec().doca_ec_cap_get_max_buf_list_len, devinfo_ptr(devinfo))
