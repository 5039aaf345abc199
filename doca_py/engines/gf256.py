"""GF(2^8) arithmetic (polynomial x^8+x^4+x^3+x^2+1, 0x11D) and ISA-L compatible matrices.

Matrices are row-major ``bytes`` of ``rows * cols`` coefficients. The constructions
reproduce ISA-L's ``gf_gen_rs_matrix``, ``gf_gen_cauchy1_matrix`` and
``gf_invert_matrix`` bit for bit, so parity computed here equals parity computed by
ISA-L (and, by inference, by doca_ec; see storage-apps-spec §6.4).

``EXP`` (510 bytes, ``EXP[i]`` = 2^i, doubled so sums of logs need no modulo) and ``LOG``
(``LOG[a]`` = log₂ *a*, ``LOG[0]`` unused) are the exponent and logarithm tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from doca_py.errors import DocaInvalidValue

__all__ = [
    "POLY",
    "EXP",
    "LOG",
    "MUL_TABLE",
    "INV",
    "gf_mul",
    "gf_inv",
    "gen_rs_matrix",
    "gen_cauchy1_matrix",
    "invert_matrix",
    "matrix_mul",
    "decode_rows",
    "default_survivors",
]

POLY = 0x11D
"""The field's reduction polynomial, x⁸ + x⁴ + x³ + x² + 1 (as ISA-L and DOCA EC)."""


def _build_exp_log() -> tuple[bytes, bytes]:
    # 2 generates the multiplicative group for 0x11D, so exp/log tables cover it.
    exp = bytearray(510)
    log = bytearray(256)
    x = 1
    for i in range(255):
        exp[i] = x
        log[x] = i
        x <<= 1
        if x & 0x100:
            x ^= POLY
    exp[255:510] = exp[0:255]  # doubled, so exp[log a + log b] needs no modulo
    return bytes(exp), bytes(log)


EXP, LOG = _build_exp_log()


def gf_mul(a: int, b: int) -> int:
    """Product of two field elements."""
    if a == 0 or b == 0:
        return 0
    return EXP[LOG[a] + LOG[b]]


def gf_inv(a: int) -> int:
    """Multiplicative inverse; 0 maps to 0 as in ISA-L's ``gf_inv``."""
    if a == 0:
        return 0
    return EXP[255 - LOG[a]]


def _build_mul_table() -> tuple[bytes, ...]:
    # Row c is the 256-byte translation table "x -> c*x"; usable with bytes.translate.
    rows = [bytes(256)]
    for c in range(1, 256):
        lc = LOG[c]
        rows.append(bytes([0] + [EXP[lc + LOG[x]] for x in range(1, 256)]))
    return tuple(rows)


MUL_TABLE: tuple[bytes, ...] = _build_mul_table()
"""``MUL_TABLE[a][b]`` is ``a·b`` in GF(2⁸)."""
INV: bytes = bytes(gf_inv(a) for a in range(256))
"""``INV[a]`` is the multiplicative inverse of *a* (``INV[0]`` is 0)."""


def _check_km(k: int, m: int) -> None:
    if k < 1 or m < 0 or k + m > 256:
        raise DocaInvalidValue(f"invalid code shape k={k}, m={m} (need k >= 1, m >= 0, k+m <= 256)")


def _identity_rows(k: int) -> bytearray:
    a = bytearray(k * k)
    for i in range(k):
        a[k * i + i] = 1
    return a


def gen_rs_matrix(k: int, m: int) -> bytes:
    """ISA-L ``gf_gen_rs_matrix``: identity on top, parity row i has entries gen^j, gen = 2^i.

    The first parity row is all ones (plain XOR), which the storage apps rely on.
    Not every erasure pattern of this construction is invertible for large k+m.
    """
    _check_km(k, m)
    a = _identity_rows(k)
    gen = 1
    for _ in range(m):
        p = 1
        for _j in range(k):
            a.append(p)
            p = gf_mul(p, gen)
        gen = gf_mul(gen, 2)
    return bytes(a)


def gen_cauchy1_matrix(k: int, m: int) -> bytes:
    """ISA-L ``gf_gen_cauchy1_matrix``: identity on top, parity ``a[i][j] = 1 / (i XOR j)``."""
    _check_km(k, m)
    a = _identity_rows(k)
    for i in range(k, k + m):
        a.extend(INV[i ^ j] for j in range(k))
    return bytes(a)


def invert_matrix(a: bytes | bytearray | memoryview, n: int) -> bytes:
    """Inverse of the n x n matrix *a* (Gauss-Jordan, as ISA-L ``gf_invert_matrix``).

    Raise [`DocaInvalidValue`][doca_py.errors.DocaInvalidValue] if *a* is singular.
    """
    if len(a) != n * n:
        raise DocaInvalidValue(f"matrix has {len(a)} entries, expected {n}x{n}")
    m = [bytearray(a[i * n : (i + 1) * n]) for i in range(n)]
    inv = [bytearray(n) for _ in range(n)]
    for i in range(n):
        inv[i][i] = 1
    for i in range(n):
        if m[i][i] == 0:  # find a lower row with a non-zero pivot and swap it in
            for r in range(i + 1, n):
                if m[r][i]:
                    break
            else:
                raise DocaInvalidValue("matrix is singular (erasure pattern not recoverable)")
            m[i], m[r] = m[r], m[i]
            inv[i], inv[r] = inv[r], inv[i]
        t = MUL_TABLE[INV[m[i][i]]]  # scale the pivot row to 1
        m[i] = m[i].translate(t)
        inv[i] = inv[i].translate(t)
        for r in range(n):
            c = m[r][i]
            if r == i or c == 0:
                continue
            t = MUL_TABLE[c]
            rm, ri = m[r], inv[r]
            pm, pi = m[i].translate(t), inv[i].translate(t)
            for j in range(n):
                rm[j] ^= pm[j]
                ri[j] ^= pi[j]
    return b"".join(bytes(row) for row in inv)


def matrix_mul(a: bytes, b: bytes, rows: int, inner: int, cols: int) -> bytes:
    """(rows x inner) * (inner x cols) over GF(2^8)."""
    out = bytearray(rows * cols)
    for i in range(rows):
        for j in range(cols):
            s = 0
            for t in range(inner):
                s ^= gf_mul(a[i * inner + t], b[t * cols + j])
            out[i * cols + j] = s
    return bytes(out)


def default_survivors(k: int, m: int, missing: Sequence[int]) -> tuple[int, ...]:
    """The first k block indices (data, then parity) that are not *missing*.

    This is the order the ISA-L examples and DOCA's recover task use for sources.
    """
    _check_km(k, m)
    gone = set(missing)
    avail = tuple(i for i in range(k + m) if i not in gone)
    if len(avail) < k:
        raise DocaInvalidValue(f"{len(gone)} blocks missing but only {m} parity blocks exist")
    return avail[:k]


def decode_rows(encode_matrix: bytes, k: int, survivors: Sequence[int], wanted: Sequence[int]) -> bytes:
    """Rows (len(wanted) x k) that rebuild blocks *wanted* from the k blocks *survivors*.

    *encode_matrix* is the (k+m) x k generator (identity on top). Data blocks come
    from the inverse of the survivors' rows; parity blocks from that inverse
    multiplied by their encode row, as ISA-L's ``gf_gen_decode_matrix_simple`` does.
    """
    total = len(encode_matrix) // k
    if total * k != len(encode_matrix) or total < k:
        raise DocaInvalidValue("encode matrix must be (k+m) x k")
    if len(survivors) != k or len(set(survivors)) != k:
        raise DocaInvalidValue(f"need exactly {k} distinct surviving blocks, got {list(survivors)}")
    for idx in (*survivors, *wanted):
        if not 0 <= idx < total:
            raise DocaInvalidValue(f"block index {idx} out of range 0..{total - 1}")
    b = b"".join(encode_matrix[r * k : (r + 1) * k] for r in survivors)
    inv = invert_matrix(b, k)
    out = bytearray()
    for w in wanted:
        # row w of (encode * inv): for data rows this is just row w of inv.
        out += matrix_mul(encode_matrix[w * k : (w + 1) * k], inv, 1, k, k)
    return bytes(out)
