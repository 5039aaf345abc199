"""GF(2^8) arithmetic and the ISA-L matrix constructions (known answers, written out)."""

from __future__ import annotations

import ctypes
import itertools
import random

import pytest

from doca_py.engines import ec, gf256
from doca_py.errors import DocaInvalidValue


def test_field_basics() -> None:
    assert gf256.gf_mul(2, 0x80) == 0x1D  # x^8 reduces by 0x11D
    assert gf256.gf_mul(3, 7) == 9  # carry-less: 0b11 * 0b111 = 0b1001
    assert gf256.gf_inv(0) == 0
    assert gf256.gf_inv(2) == 0x8E and gf256.gf_inv(3) == 0xF4
    for a in range(1, 256):
        assert gf256.gf_mul(a, gf256.gf_inv(a)) == 1
        assert gf256.MUL_TABLE[a][gf256.INV[a]] == 1


# Parity rows derived by hand from ISA-L's constructions:
#   gf_gen_rs_matrix: row i>=k is gen^j with gen = 2^(i-k): 1s, then powers of 2, then of 4.
#   gf_gen_cauchy1_matrix: row i>=k is inv(i ^ j).
RS_PARITY = {
    (2, 1): [[1, 1]],
    (4, 2): [[1, 1, 1, 1], [1, 2, 4, 8]],
    (3, 3): [[1, 1, 1], [1, 2, 4], [1, 4, 16]],
    (8, 3): [
        [1, 1, 1, 1, 1, 1, 1, 1],
        [1, 2, 4, 8, 16, 32, 64, 128],
        [1, 4, 16, 64, 0x1D, 0x74, 0xCD, 0x13],
    ],
}
CAUCHY_PARITY = {
    (2, 1): [[0x8E, 0xF4]],  # inv(2), inv(3)
    (4, 2): [[0x47, 0xA7, 0x7A, 0xBA], [0xA7, 0x47, 0xBA, 0x7A]],  # inv(4..7), inv(5,4,7,6)
}


def _identity(k: int) -> list[list[int]]:
    return [[int(i == j) for j in range(k)] for i in range(k)]


def _flat(rows: list[list[int]]) -> bytes:
    return bytes(itertools.chain.from_iterable(rows))


@pytest.mark.parametrize("km", sorted(RS_PARITY))
def test_rs_matrix_known_answer(km: tuple[int, int]) -> None:
    k, m = km
    assert gf256.gen_rs_matrix(k, m) == _flat(_identity(k) + RS_PARITY[km])


@pytest.mark.parametrize("km", sorted(CAUCHY_PARITY))
def test_cauchy_matrix_known_answer(km: tuple[int, int]) -> None:
    k, m = km
    assert gf256.gen_cauchy1_matrix(k, m) == _flat(_identity(k) + CAUCHY_PARITY[km])


def test_bad_shapes() -> None:
    with pytest.raises(DocaInvalidValue):
        gf256.gen_rs_matrix(0, 1)
    with pytest.raises(DocaInvalidValue):
        gf256.gen_cauchy1_matrix(200, 57)
    with pytest.raises(DocaInvalidValue):
        gf256.invert_matrix(b"\x01\x02\x03", 2)


def test_invert_known_and_singular() -> None:
    # [[1,1],[1,2]]^-1 = (1/(2^1)) [[2,1],[1,1]] = inv(3) * ...
    inv = gf256.invert_matrix(bytes([1, 1, 1, 2]), 2)
    assert inv == bytes([gf256.gf_mul(0xF4, 2), 0xF4, 0xF4, 0xF4])
    assert gf256.matrix_mul(bytes([1, 1, 1, 2]), inv, 2, 2, 2) == bytes([1, 0, 0, 1])
    with pytest.raises(DocaInvalidValue, match="singular"):
        gf256.invert_matrix(bytes([1, 1, 1, 1]), 2)
    with pytest.raises(DocaInvalidValue, match="singular"):
        gf256.invert_matrix(bytes([0, 0, 0, 0]), 2)


def test_decode_rows_for_data_and_parity() -> None:
    k, m = 4, 2
    enc = gf256.gen_rs_matrix(k, m)
    surv = gf256.default_survivors(k, m, [1, 4])
    assert surv == (0, 2, 3, 5)
    rows = gf256.decode_rows(enc, k, surv, [1, 4])
    # (decode rows) x (survivor rows of enc) must give the wanted rows of enc.
    sub = b"".join(enc[r * k : (r + 1) * k] for r in surv)
    assert gf256.matrix_mul(rows, sub, 2, k, k) == enc[1 * k : 2 * k] + enc[4 * k : 5 * k]
    with pytest.raises(DocaInvalidValue):
        gf256.default_survivors(k, m, [0, 1, 2])


def _isal_lib() -> ctypes.CDLL:
    path = ec.isal_library_path()
    if path is None:
        pytest.skip("no ISA-L library with the erasure-code functions")
    return ctypes.CDLL(path)


def test_bit_exact_against_isal_library() -> None:
    lib = _isal_lib()
    for k in range(1, 12):
        for m in range(0, 5):
            a = (ctypes.c_ubyte * ((k + m) * k))()
            lib.gf_gen_rs_matrix(a, k + m, k)
            assert bytes(a) == gf256.gen_rs_matrix(k, m)
            lib.gf_gen_cauchy1_matrix(a, k + m, k)
            assert bytes(a) == gf256.gen_cauchy1_matrix(k, m)
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 6)
        src = bytes(rng.choice([0, 1, rng.randrange(256)]) for _ in range(n * n))
        inp = (ctypes.c_ubyte * (n * n)).from_buffer_copy(src)
        out = (ctypes.c_ubyte * (n * n))()
        rc = lib.gf_invert_matrix(inp, out, n)
        if rc == 0:
            assert gf256.invert_matrix(src, n) == bytes(out)
        else:
            with pytest.raises(DocaInvalidValue):
                gf256.invert_matrix(src, n)
