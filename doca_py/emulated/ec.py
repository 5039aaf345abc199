"""Emulated ``doca_ec``: Reed–Solomon over GF(2^8), bit-compatible with ISA-L.

Every EC task is one matrix multiplication ``out_r = XOR_i M[r][i] · src_i`` over
blocks: *create* with the coding matrix (m parity rows), *recover* with a recover
matrix (one row per missing block), *update* with an update matrix over
(old, new) block pairs and the old parity, *galois_mul* with any matrix. The
source is k_in blocks back to back (a buffer list may split it at block
boundaries); the output blocks are appended after the destination's data.
"""

from __future__ import annotations

from .._backend.protocols.core import BufHandle, DevHandle, DevInfoHandle
from ..errors import DocaInvalidValue, DocaNotPermitted, ErrorCode
from .buf import EmuBuf, data_views, room, tail_view
from .ctx import OFFLOAD, EmuCtx, EmuSrcDstTask, EmuTask, TaskPool, unreachable_ok
from ..engines import ec as kernels
from ..engines import gf256
from .mmap import dev_key

__all__ = ["EmuEc", "EmuEcMatrix", "EmuEcTask", "ec_create", "MAX_BLOCK_SIZE", "MAX_BUF_LIST_LEN",
           "cap_task_create_is_supported", "cap_task_recover_is_supported", "cap_task_update_is_supported",
           "cap_task_galois_mul_is_supported", "cap_get_max_block_size", "cap_get_max_buf_list_len"]

CAUCHY, VANDERMONDE = 1, 2
MAX_BLOCK_SIZE = 1 << 24
MAX_BUF_LIST_LEN = 16  # the storage recover task chains 2 source buffers
BLOCK_ALIGN = 64
_INVALID = int(ErrorCode.INVALID_VALUE)
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)


class EmuEcMatrix:
    """A coefficient matrix: ``rows`` is r_out × k_in bytes, row per output block."""

    __slots__ = ("ec", "rows", "k_in", "r_out", "k", "m", "encode", "destroyed")

    def __init__(self, ec: EmuEc, rows: bytes, k_in: int, r_out: int, k: int, m: int, encode: bytes | None) -> None:
        self.ec, self.rows, self.k_in, self.r_out = ec, rows, k_in, r_out
        self.k, self.m, self.encode = k, m, encode  # encode: the (k+m)×k generator of a coding matrix
        self.destroyed = False

    def destroy(self) -> None:
        if not self.destroyed:
            self.destroyed = True
            self.ec.matrices.discard(self)  # released, or every recover matrix made would pile up


def _check_km(k: int, m: int) -> None:
    if k < 1 or m < 1 or k + m > 255:
        raise DocaInvalidValue(f"need 1 <= k, 1 <= m and k + m <= 255 (got k={k}, m={m})")


class EmuEcTask(EmuSrcDstTask):
    """Any EC task: multiply the source blocks by the task's matrix."""

    __slots__ = ("matrix",)
    offload_bytes = 8 << 20  # ISA-L encodes at tens of GB/s

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.matrix: EmuEcMatrix | None = None

    def set_matrix(self, matrix: object) -> None:
        self._settable("set_matrix")
        ec = self.ctx
        assert isinstance(ec, EmuEc)
        self.matrix = ec._mine(matrix)


    def _work_bytes(self) -> int:
        n, b = 0, self.src
        while b is not None:
            n, b = n + b.data_len, b.next
        return n

    def _plan(self) -> tuple[EmuEcMatrix, EmuBuf, EmuBuf, int]:
        m, src, dst = self.matrix, self.src, self.dst
        if m is None or m.destroyed or src is None or dst is None or not src.refcount or not dst.refcount:
            raise DocaInvalidValue("EC task needs a live matrix, a source and a destination")
        if src.get_list_len() > MAX_BUF_LIST_LEN or dst.next is not None:
            raise DocaInvalidValue(f"EC sources may chain up to {MAX_BUF_LIST_LEN} buffers; destinations 1")
        total = self._work_bytes()
        block, rest = divmod(total, m.k_in)
        if rest or block < BLOCK_ALIGN or block % BLOCK_ALIGN or block > MAX_BLOCK_SIZE:
            raise DocaInvalidValue(f"source of {total} bytes is not {m.k_in} blocks of a multiple of "
                                   f"{BLOCK_ALIGN} bytes (at least {BLOCK_ALIGN}, at most {MAX_BLOCK_SIZE})")
        if room(dst) < m.r_out * block:
            raise DocaInvalidValue(f"destination has {room(dst)} bytes free after its data, "
                                   f"{m.r_out} blocks of {block} bytes are needed")
        return m, src, dst, block

    def _validate(self) -> None:
        self._plan()

    def _execute(self) -> int:
        try:
            m, src, dst, block = self._plan()
        except DocaInvalidValue as exc:
            self.reason = exc.detail
            return _INVALID
        if not unreachable_ok(self, src, dst):
            return _NOT_PERMITTED
        if self._offload(m.k_in * block):
            return OFFLOAD
        if self._execute_addresses(m, src, dst, block):
            return 0
        blocks: list[memoryview | bytes] = []
        spill = b""
        for seg in data_views(src):
            if spill:  # a block split across list elements: join it (rare)
                need = block - len(spill)
                spill += bytes(seg[:need])
                seg = seg[need:]
                if len(spill) == block:
                    blocks.append(spill)
                    spill = b""
            whole = len(seg) // block * block
            blocks.extend(seg[i:i + block] for i in range(0, whole, block))
            if whole < len(seg):
                spill = bytes(seg[whole:])
        out = tail_view(dst, m.r_out * block)
        kernels.encode(m.rows, blocks, [out[i * block:(i + 1) * block] for i in range(m.r_out)], block)
        dst.data_len += m.r_out * block
        return 0


    @staticmethod
    def _execute_addresses(m: EmuEcMatrix, src: EmuBuf, dst: EmuBuf, block: int) -> bool:
        """ISA-L on checked raw addresses when every list element holds whole blocks."""
        srcs: list[int] = []
        b: EmuBuf | None = src
        while b is not None:
            n, mm = b.data_len, b.mmap
            if n % block:
                return False
            assert mm is not None
            # Started local maps: bounds precomputed, addresses are process addresses.
            base = b.data if mm.fast and mm.addr <= b.data and b.data + n <= mm.hi else mm.ptr(b.data, n, False)
            srcs.extend(range(base, base + n, block))
            b = b.next
        dm, n = dst.mmap, m.r_out * block
        assert dm is not None
        out = dst.data + dst.data_len
        if not (dm.fast and dm.writable and dm.addr <= out and out + n <= dm.hi):
            out = dm.ptr(out, n, True)
        if not kernels.encode_addresses(m.rows, srcs, range(out, out + m.r_out * block, block), block):
            return False
        dst.data_len += m.r_out * block
        return True


class EmuEc(EmuCtx):
    """Emulated ``doca_ec`` context."""

    def __init__(self) -> None:
        super().__init__()
        self.create = TaskPool(self, EmuEcTask, "ec_create")
        self.recover = TaskPool(self, EmuEcTask, "ec_recover")
        self.update = TaskPool(self, EmuEcTask, "ec_update")
        self.galois_mul = TaskPool(self, EmuEcTask, "ec_galois_mul")
        self.matrices: set[EmuEcMatrix] = set()  # live ones; destroy releases them

    def _mine(self, m: object) -> EmuEcMatrix:
        if not isinstance(m, EmuEcMatrix) or m.ec is not self or m.destroyed:
            raise DocaNotPermitted("the matrix belongs to another Ec context or was destroyed")
        return m

    def matrix_create(self, matrix_type: int, k: int, m: int) -> EmuEcMatrix:
        _check_km(k, m)
        if matrix_type == CAUCHY:
            enc = gf256.gen_cauchy1_matrix(k, m)
        elif matrix_type == VANDERMONDE:
            enc = gf256.gen_rs_matrix(k, m)
        else:
            raise DocaInvalidValue(f"unknown EC matrix type {matrix_type} (CAUCHY=1, VANDERMONDE=2)")
        mat = EmuEcMatrix(self, enc[k * k:], k, m, k, m, enc)
        self.matrices.add(mat)
        return mat

    def matrix_create_from_raw(self, data: bytes, k: int, m: int) -> EmuEcMatrix:
        _check_km(k, m)
        if len(data) != k * m:
            raise DocaInvalidValue(f"raw matrix has {len(data)} bytes, k*m = {k * m}")
        # Raw layout is k rows (data blocks) of m coefficients; we keep one row per output.
        rows = bytes(data[i * m + j] for j in range(m) for i in range(k))
        ident = bytes(1 if i == j else 0 for i in range(k) for j in range(k))
        mat = EmuEcMatrix(self, rows, k, m, k, m, ident + rows)
        self.matrices.add(mat)
        return mat

    def matrix_create_recover(self, coding: object, missing: list[int]) -> EmuEcMatrix:
        c = self._mine(coding)
        if c.encode is None:
            raise DocaInvalidValue("a recover matrix derives from a coding matrix")
        idx = sorted(set(missing))
        if not idx or len(idx) != len(missing) or idx != list(missing):
            raise DocaInvalidValue(f"missing block indices must be unique and ascending: {missing}")
        for i in (idx[0], idx[-1]):
            if not 0 <= i < c.k + c.m:
                raise DocaInvalidValue(f"missing block index {i} out of range 0..{c.k + c.m - 1} (k={c.k} data "
                                       f"and m={c.m} redundancy blocks)")
        if len(idx) > c.m:
            raise DocaInvalidValue(f"cannot recover {len(idx)} missing blocks {idx} with m={c.m} redundancy blocks")
        survivors = gf256.default_survivors(c.k, c.m, idx)
        rows = kernels.recover_rows(c.encode, c.k, survivors, idx)
        mat = EmuEcMatrix(self, rows, c.k, len(idx), c.k, c.m, None)
        self.matrices.add(mat)
        return mat

    def matrix_create_update(self, coding: object, updated: list[int]) -> EmuEcMatrix:
        c = self._mine(coding)
        if c.encode is None:
            raise DocaInvalidValue("an update matrix derives from a coding matrix")
        idx = sorted(set(updated))
        if not idx or idx != list(updated):
            raise DocaInvalidValue(f"updated data block indices must be unique and ascending: {updated}")
        for i in (idx[0], idx[-1]):
            if not 0 <= i < c.k:
                raise DocaInvalidValue(f"updated data block index {i} out of range 0..{c.k - 1} (k={c.k})")
        # Inputs: (old_i, new_i) per updated block, then the m old parity blocks.
        k_in = 2 * len(idx) + c.m
        rows = bytearray()
        for j in range(c.m):
            coef = c.encode[(c.k + j) * c.k:(c.k + j + 1) * c.k]
            for i in idx:
                rows += bytes((coef[i], coef[i]))
            rows += bytes(1 if t == j else 0 for t in range(c.m))
        mat = EmuEcMatrix(self, bytes(rows), k_in, c.m, c.k, c.m, None)
        self.matrices.add(mat)
        return mat

    def _alloc(self, pool: TaskPool[EmuTask], matrix: object, src: BufHandle, dst: BufHandle) -> EmuEcTask:
        mat = self._mine(matrix)
        t = pool.alloc()
        assert isinstance(t, EmuEcTask) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.matrix, t.src, t.dst = mat, src, dst
        return t

    def task_create_allocate_init(self, matrix: object, src: BufHandle, dst: BufHandle) -> EmuEcTask:
        return self._alloc(self.create, matrix, src, dst)

    def task_recover_allocate_init(self, matrix: object, src: BufHandle, dst: BufHandle) -> EmuEcTask:
        return self._alloc(self.recover, matrix, src, dst)

    def task_update_allocate_init(self, matrix: object, src: BufHandle, dst: BufHandle) -> EmuEcTask:
        return self._alloc(self.update, matrix, src, dst)

    def task_galois_mul_allocate_init(self, matrix: object, src: BufHandle, dst: BufHandle) -> EmuEcTask:
        return self._alloc(self.galois_mul, matrix, src, dst)


def ec_create(dev: DevHandle) -> EmuEc:
    """``doca_ec_create``."""
    ec = EmuEc()
    ec.dev_key = dev_key(dev)
    return ec


def cap_task_create_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


cap_task_recover_is_supported = cap_task_update_is_supported = cap_task_galois_mul_is_supported = \
    cap_task_create_is_supported


def cap_get_max_block_size(devinfo: DevInfoHandle) -> int:
    return MAX_BLOCK_SIZE


def cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN
