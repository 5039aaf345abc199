"""Reed-Solomon erasure coding over buffers: ``dest[r] = sum_j rows[r][j] * source[j]`` in GF(2^8).

Three kernels produce identical bytes:

* ``isal`` -- ISA-L's ``ec_init_tables`` + ``ec_encode_data`` through ctypes (releases the
  GIL; SIMD/GFNI). Found in pyeclib's wheel (``pyeclib.libs/libisal*.so*``) or as a system
  ``libisal``.
* ``numpy`` -- per-coefficient 256-byte table lookup (``bytes.translate``) with numpy XOR.
* ``pure`` -- the same lookups with big-int XOR; no third-party code at all.

The kernel is the best available unless chosen by argument or by ``DOCA_PY_EC_KERNEL``
(``isal``, ``numpy`` or ``pure``). All arguments are validated before anything is
written, and nothing is written outside ``dest[:block_len]``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from doca_py.errors import DocaInvalidValue, DocaNotSupported

from . import byte_view, view_address, writable_view
from .gf256 import MUL_TABLE, decode_rows, default_survivors

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "KernelName",
    "KERNEL_ENV",
    "available_kernels",
    "select_kernel",
    "isal_library_path",
    "encode",
    "recover",
    "recover_rows",
    "reset_default_kernel",
]

KernelName = Literal["isal", "numpy", "pure"]
"""The EC kernels: ``"isal"``, ``"numpy"`` or ``"pure"``."""
KERNEL_ENV = "DOCA_PY_EC_KERNEL"
"""The environment variable that forces an EC kernel."""
_KERNELS: tuple[KernelName, ...] = ("isal", "numpy", "pure")
# ec_encode_data takes an int length; larger blocks are processed in slices.
_ISAL_MAX_LEN = 1 << 30
_PTR_SIZE = ctypes.sizeof(ctypes.c_void_p)


# --------------------------------------------------------------------------- ISA-L


def _isal_candidates() -> list[str]:
    found: list[str] = []
    spec = importlib.util.find_spec("pyeclib")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        # auditwheel puts the vendored libraries next to the package: pyeclib.libs/
        found += sorted(glob.glob(str(Path(loc).parent / "pyeclib.libs" / "libisal*.so*")))
    system = ctypes.util.find_library("isal")
    if system:
        found.append(system)
    found += ["libisal.so.2"]  # Debian's libisal2 ships no unversioned symlink
    return found


class _IsalLib:
    """The two ISA-L entry points we need, with argtypes set once."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        self.path = path
        self.init_tables = lib.ec_init_tables
        self.init_tables.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.init_tables.restype = None
        self.encode_data = lib.ec_encode_data
        self.encode_data.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        self.encode_data.restype = None


@functools.cache
def _isal() -> _IsalLib | None:
    for path in _isal_candidates():
        try:
            return _IsalLib(path)
        except (OSError, AttributeError):
            continue  # missing file or a build without the EC functions
    return None


def isal_library_path() -> str | None:
    """Path of the ISA-L library the ``isal`` kernel uses, or None if there is none."""
    lib = _isal()
    return lib.path if lib else None


_TABLES: dict[tuple[int, bytes], ctypes.Array[ctypes.c_ubyte]] = {}
_TABLES_MAX = 4096


def _isal_tables(k: int, rows: int, coefs: bytes) -> ctypes.Array[ctypes.c_ubyte]:
    # Expanded multiplication tables (32 bytes per coefficient; GFNI builds use fewer),
    # cached per matrix, which also covers decode rows per erasure pattern. A plain
    # dict: an lru_cache lookup costs as much as the ctypes call itself.
    key = (k, coefs)
    tbl = _TABLES.get(key)
    if tbl is None:
        lib = _isal()
        assert lib is not None
        tbl = (ctypes.c_ubyte * (32 * k * rows))()
        src = (ctypes.c_ubyte * len(coefs)).from_buffer_copy(coefs)
        lib.init_tables(k, rows, src, tbl)
        if len(_TABLES) >= _TABLES_MAX:
            _TABLES.clear()  # crude bound; real workloads use a handful of matrices
        _TABLES[key] = tbl  # a racing thread may rebuild the same tables: harmless
    return tbl


@functools.cache
def _ptr_array(n: int) -> type[ctypes.Array[ctypes.c_void_p]]:
    return ctypes.c_void_p * n


def _encode_isal(coefs: bytes, srcs: list[memoryview], dsts: list[memoryview], n: int) -> None:
    lib = _isal()
    assert lib is not None
    k, rows = len(srcs), len(dsts)
    tbl = _isal_tables(k, rows, coefs)
    addrs = [view_address(v) for v in srcs]
    addrs += [view_address(v) for v in dsts]
    for off in range(0, n, _ISAL_MAX_LEN):
        # One array for both pointer lists (data first, coding after): one ctypes object
        # per call instead of two. Addresses stay valid: the views pin their buffers.
        ptrs = _ptr_array(k + rows)(*[a + off for a in addrs] if off else addrs)
        base = ctypes.addressof(ptrs)
        lib.encode_data(min(_ISAL_MAX_LEN, n - off), k, rows, tbl, base, base + k * _PTR_SIZE)


_PTRS: dict[int, ctypes.Array[ctypes.c_void_p]] = {}


def encode_addresses(coefs: bytes, src_addrs: Sequence[int], dst_addrs: Sequence[int], n: int) -> bool:
    """ISA-L fast path on raw addresses (already bounds-checked by the caller).

    For callers that know their block addresses (the emulated Ec context): no
    memoryview or address lookups per call. Returns False, doing nothing, when the
    default kernel is not ISA-L, so the caller falls back to [`encode`][doca_py.engines.ec.encode].
    """
    if _default_impl() is not _encode_isal or not 0 < n <= _ISAL_MAX_LEN:
        return False
    lib = _isal()
    assert lib is not None
    k, rows = len(src_addrs), len(dst_addrs)
    if len(coefs) != k * rows or k < 1 or rows < 1:
        raise DocaInvalidValue(f"matrix has {len(coefs)} coefficients but {rows} dest x {k} source blocks")
    tbl = _isal_tables(k, rows, coefs)
    # One pointer array per thread and size would be ideal; per size plus a fresh
    # array when another thread may hold it keeps this simple and race-free.
    ptrs = _PTRS.pop(k + rows, None) or _ptr_array(k + rows)()
    ptrs[:k] = list(src_addrs)
    ptrs[k:] = list(dst_addrs)
    base = ctypes.addressof(ptrs)
    lib.encode_data(n, k, rows, tbl, base, base + k * _PTR_SIZE)
    _PTRS[k + rows] = ptrs
    return True


# --------------------------------------------------------------------------- numpy / pure


def _encode_numpy(coefs: bytes, srcs: list[memoryview], dsts: list[memoryview], n: int) -> None:
    k = len(srcs)
    arrays: list[npt.NDArray[np.uint8]] = [np.frombuffer(v, np.uint8, n) for v in srcs]
    raw: list[bytes | None] = [None] * k  # bytes copies for translate, made on demand
    for r, dv in enumerate(dsts):
        out = np.frombuffer(dv, np.uint8, n)
        first = True
        for j in range(k):
            c = coefs[r * k + j]
            if c == 0:
                continue
            if c == 1:
                term = arrays[j]
            else:
                # bytes.translate is a tight C table lookup, faster than np.take on uint8
                # (which widens the indices); it needs a bytes source, copied once.
                sb = raw[j]
                if sb is None:
                    sb = raw[j] = srcs[j][:n].tobytes()
                term = np.frombuffer(sb.translate(MUL_TABLE[c]), np.uint8)
            if first:
                np.copyto(out, term)
                first = False
            else:
                np.bitwise_xor(out, term, out=out)
        if first:
            out.fill(0)


def _encode_pure(coefs: bytes, srcs: list[memoryview], dsts: list[memoryview], n: int) -> None:
    k = len(srcs)
    raw = [v[:n].tobytes() for v in srcs]
    ints: list[int | None] = [None] * k
    for r, dv in enumerate(dsts):
        acc = 0
        for j in range(k):
            c = coefs[r * k + j]
            if c == 0:
                continue
            if c == 1:
                v = ints[j]
                if v is None:
                    v = ints[j] = int.from_bytes(raw[j], "little")
            else:
                v = int.from_bytes(raw[j].translate(MUL_TABLE[c]), "little")
            acc ^= v  # one big-int XOR per term instead of a per-byte loop
        dv[:n] = acc.to_bytes(n, "little")


_Impl = Callable[[bytes, list[memoryview], list[memoryview], int], None]
_IMPLS: dict[str, _Impl] = {"isal": _encode_isal, "numpy": _encode_numpy, "pure": _encode_pure}


# --------------------------------------------------------------------------- selection


@functools.cache
def available_kernels() -> tuple[KernelName, ...]:
    """Kernels usable in this process, fastest first."""
    return tuple(name for name in _KERNELS if name != "isal" or _isal() is not None)


def select_kernel(kernel: str | None = None) -> KernelName:
    """Resolve *kernel*: the argument, else ``$DOCA_PY_EC_KERNEL``, else the fastest available.

    An explicit choice that is unavailable raises [`DocaNotSupported`][doca_py.errors.DocaNotSupported]; an unknown
    name raises [`DocaInvalidValue`][doca_py.errors.DocaInvalidValue]. ([`encode`][doca_py.engines.ec.encode] reads the environment once,
    at its first call without a kernel argument; see [`reset_default_kernel`][doca_py.engines.ec.reset_default_kernel].)
    """
    name = kernel or os.environ.get(KERNEL_ENV) or None
    if name is None:
        return available_kernels()[0]
    if name not in _KERNELS:
        raise DocaInvalidValue(f"unknown EC kernel {name!r}; choose one of {', '.join(_KERNELS)}")
    if name not in available_kernels():
        raise DocaNotSupported(f"EC kernel {name!r} is not available (no ISA-L library with ec_encode_data found)")
    return name


@functools.cache
def _default_impl() -> _Impl:
    # Cached: an environment lookup per call costs as much as a small ISA-L encode.
    return _IMPLS[select_kernel()]


def reset_default_kernel() -> None:
    """Forget the cached default kernel so the next call re-reads ``$DOCA_PY_EC_KERNEL``."""
    _default_impl.cache_clear()


# --------------------------------------------------------------------------- API


def _coef_bytes(rows: Buffer | npt.ArrayLike) -> bytes:
    if type(rows) is bytes:
        return rows
    if isinstance(rows, np.ndarray):
        if rows.size and (rows.min() < 0 or rows.max() > 255):
            raise DocaInvalidValue("matrix coefficients must be in 0..255")
        return np.ascontiguousarray(rows, dtype=np.uint8).tobytes()
    if isinstance(rows, (bytes, bytearray, memoryview)):
        return bytes(byte_view(rows, "matrix"))
    raise DocaInvalidValue(f"matrix must be bytes-like or an ndarray, not {type(rows).__name__}")


def encode(
    rows: Buffer | npt.NDArray[Any],
    sources: Sequence[Buffer],
    dests: Sequence[Buffer],
    block_len: int | None = None,
    *,
    kernel: str | None = None,
) -> None:
    """Write ``dests[r][:block_len] = XOR_j gf_mul(rows[r][j], sources[j])``.

    *rows* is ``len(dests) x len(sources)`` coefficients, row-major. Without
    *block_len* all sources must have the same length, which becomes the block
    length; with it, each source must hold at least *block_len* bytes. Every
    destination must be writable and at least *block_len* bytes long. Sources and
    destinations must not overlap.
    """
    impl = _IMPLS[select_kernel(kernel)] if kernel else _default_impl()
    coefs = rows if type(rows) is bytes else _coef_bytes(rows)
    k, r = len(sources), len(dests)
    if k < 1:
        raise DocaInvalidValue("need at least one source block")
    if len(coefs) != k * r:
        raise DocaInvalidValue(f"matrix has {len(coefs)} coefficients but {r} dest x {k} source blocks need {r * k}")
    srcs = [byte_view(s, "source block", i) for i, s in enumerate(sources)]
    if block_len is None:
        block_len = srcs[0].nbytes
        if any([v.nbytes != block_len for v in srcs]):
            raise DocaInvalidValue(f"source blocks differ in length: {[v.nbytes for v in srcs]}")
    elif block_len < 0:
        raise DocaInvalidValue(f"negative block length {block_len}")
    else:
        for i, v in enumerate(srcs):
            if v.nbytes < block_len:
                raise DocaInvalidValue(f"source block {i} has {v.nbytes} bytes, block length is {block_len}")
    dsts = [writable_view(d, "destination block", i) for i, d in enumerate(dests)]
    for i, v in enumerate(dsts):
        if v.nbytes < block_len:
            raise DocaInvalidValue(f"destination block {i} has {v.nbytes} bytes, block length is {block_len}")
    if r == 0 or block_len == 0:
        return
    impl(coefs, srcs, dsts, block_len)


def recover_rows(encode_matrix: bytes, k: int, survivors: Sequence[int], missing: Sequence[int]) -> bytes:
    """Decode rows for *missing* from *survivors*, cached per (matrix, erasure pattern)."""
    return _recover_rows(bytes(encode_matrix), k, tuple(survivors), tuple(missing))


@functools.lru_cache(maxsize=4096)
def _recover_rows(encode_matrix: bytes, k: int, survivors: tuple[int, ...], missing: tuple[int, ...]) -> bytes:
    return decode_rows(encode_matrix, k, survivors, missing)


def recover(
    encode_matrix: bytes,
    k: int,
    available: Mapping[int, Buffer],
    missing: Sequence[int],
    dests: Sequence[Buffer],
    block_len: int | None = None,
    *,
    kernel: str | None = None,
) -> tuple[int, ...]:
    """Regenerate blocks *missing* (data or parity indices) into *dests*, in that order.

    *encode_matrix* is the (k+m) x k generator from `.gf256`; *available* maps block
    index to buffer and must hold at least k blocks not in *missing*. The first k of
    them in index order are used (as ISA-L's examples and DOCA's recover task do);
    their indices are returned.
    """
    if len(dests) != len(missing):
        raise DocaInvalidValue(f"{len(missing)} missing blocks but {len(dests)} destinations")
    survivors, rows = _recover_plan(bytes(encode_matrix), k, tuple(sorted(available)), tuple(missing))
    encode(rows, [available[i] for i in survivors], dests, block_len, kernel=kernel)
    return survivors


@functools.lru_cache(maxsize=4096)
def _recover_plan(
    encode_matrix: bytes, k: int, available: tuple[int, ...], missing: tuple[int, ...]
) -> tuple[tuple[int, ...], bytes]:
    # Survivors and decode rows per (matrix, erasure pattern): inverting costs far more
    # than encoding a small stripe.
    total = len(encode_matrix) // k if k > 0 else 0
    if k < 1 or total * k != len(encode_matrix) or total < k:
        raise DocaInvalidValue(f"encode matrix of {len(encode_matrix)} bytes is not (k+m) x k for k={k}")
    lost = set(missing) | (set(range(total)) - set(available))
    survivors = default_survivors(k, total - k, sorted(lost))
    return survivors, decode_rows(encode_matrix, k, survivors, missing)
