"""Reed-Solomon kernels: parity, recovery of every erasure pattern, kernel agreement, validation."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from doca_py.engines import ec, gf256
from doca_py.errors import DocaInvalidValue, DocaNotSupported

KERNELS = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(
            name not in ec.available_kernels(), reason="no ISA-L library with ec_encode_data found"
        ),
    )
    for name in ("isal", "numpy", "pure")
]
MATRICES: dict[str, Callable[[int, int], bytes]] = {
    "vandermonde": gf256.gen_rs_matrix,
    "cauchy": gf256.gen_cauchy1_matrix,
}
SHAPES = [(2, 1), (4, 2), (8, 3)]


def _data(k: int, n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(n) for _ in range(k)]


def _encode_all(k: int, m: int, enc: bytes, data: list[bytes], kernel: str | None = None) -> list[bytes]:
    parity = [bytearray(len(data[0])) for _ in range(m)]
    ec.encode(enc[k * k :], data, parity, kernel=kernel)
    return data + [bytes(p) for p in parity]


@pytest.mark.parametrize("kernel", KERNELS)
def test_fixed_parity(kernel: str) -> None:
    # 4+2 Vandermonde over constant blocks 1,2,3,4: row 1 = 1^2^3^4, row 2 = 1*1^2*2^4*3^8*4.
    enc = gf256.gen_rs_matrix(4, 2)
    data = [bytes([v]) * 64 for v in (1, 2, 3, 4)]
    out = [bytearray(64), bytearray(64)]
    ec.encode(enc[16:], data, out, kernel=kernel)
    assert out == [bytearray([0x04]) * 64, bytearray([0x29]) * 64]
    # 2+1 Vandermonde parity is XOR; 2+1 Cauchy of (1, 1) is inv(2) ^ inv(3).
    a, b = os.urandom(128), os.urandom(128)
    p = bytearray(128)
    ec.encode(gf256.gen_rs_matrix(2, 1)[4:], [a, b], [p], kernel=kernel)
    assert p == bytes(x ^ y for x, y in zip(a, b))
    ec.encode(gf256.gen_cauchy1_matrix(2, 1)[4:], [b"\x01" * 64, b"\x01" * 64], [p], 64, kernel=kernel)
    assert p[:64] == b"\x7a" * 64 and p[64:] == bytes(x ^ y for x, y in zip(a, b))[64:]


def _erasures(k: int, m: int) -> list[tuple[int, ...]]:
    return [e for r in range(1, min(m, 2) + 1) for e in itertools.combinations(range(k + m), r)]


@pytest.mark.parametrize("mtype", sorted(MATRICES))
@pytest.mark.parametrize("km", SHAPES, ids=lambda km: f"{km[0]}+{km[1]}")
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n", [64, 4096, 65536])
def test_recover_every_single_and_double_erasure(kernel: str, km: tuple[int, int], mtype: str, n: int) -> None:
    k, m = km
    enc = MATRICES[mtype](k, m)
    blocks = _encode_all(k, m, enc, _data(k, n, seed=k * 100 + n), kernel)
    for missing in _erasures(k, m):
        avail = {i: b for i, b in enumerate(blocks) if i not in missing}
        out = [bytearray(n) for _ in missing]
        used = ec.recover(enc, k, avail, missing, out, kernel=kernel)
        assert len(used) == k and not set(used) & set(missing)
        assert [bytes(o) for o in out] == [blocks[i] for i in missing], missing


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4096, 65537])
def test_all_kernels_identical(n: int) -> None:
    rng = random.Random(n)
    k, rows = 5, 4
    coefs = bytes(rng.choice([0, 1, 2, rng.randrange(256)]) for _ in range(k * rows))
    data = [rng.randbytes(n) for _ in range(k)]
    results = {}
    for kernel in ec.available_kernels():
        out = [bytearray(n) for _ in range(rows)]
        ec.encode(coefs, data, out, kernel=kernel)
        results[kernel] = out
    ref = results["pure"]
    for kernel, out in results.items():
        assert out == ref, kernel
    # A matrix as an ndarray and sources as numpy arrays / memoryviews give the same bytes.
    out = [bytearray(n) for _ in range(rows)]
    srcs: list[Any] = [np.frombuffer(d, np.uint8) if i % 2 else memoryview(d) for i, d in enumerate(data)]
    ec.encode(np.frombuffer(coefs, np.uint8).reshape(rows, k), srcs, out)
    assert out == ref
    # Read-only slices (not whole objects) and writable sources take other address paths.
    out = [bytearray(n) for _ in range(rows)]
    ro = [memoryview(b"ab" + d)[2:] if i % 2 else bytearray(d) for i, d in enumerate(data)]
    for kernel in ec.available_kernels():
        ec.encode(coefs, ro, out, kernel=kernel)
        assert out == ref, kernel


def test_zero_row_and_offsets() -> None:
    # An all-zero row zeroes its destination; only dest[:block_len] is written.
    data = [os.urandom(100), os.urandom(100)]
    for kernel in ec.available_kernels():
        out = bytearray(b"\xaa" * 80)
        ec.encode(bytes([0, 0]), data, [memoryview(out)[8:72]], 64, kernel=kernel)
        assert out == b"\xaa" * 8 + bytes(64) + b"\xaa" * 8


@pytest.mark.parametrize("kernel", KERNELS)
def test_invalid_arguments_write_nothing(kernel: str) -> None:
    data = [os.urandom(64), os.urandom(64)]
    rows = gf256.gen_rs_matrix(2, 1)[4:]
    buf = bytearray(b"\x55" * 256)

    def attempt(*args: object, **kw: object) -> None:
        with pytest.raises(DocaInvalidValue):
            ec.encode(*args, kernel=kernel, **kw)  # type: ignore[arg-type]
        assert buf == b"\x55" * 256

    attempt(rows, data, [memoryview(buf)[:63]])  # destination too small
    attempt(rows, data, [memoryview(buf)[:64], memoryview(buf)[64:128]])  # matrix shape vs block counts
    attempt(rows, [data[0], data[1][:32]], [memoryview(buf)[:64]])  # unequal sources
    attempt(rows, data, [memoryview(buf)[:64]], 65)  # block_len beyond the sources
    attempt(rows, data, [bytes(64)])  # read-only destination
    attempt(rows, [], [memoryview(buf)[:64]])  # no sources
    attempt(np.array([[1, 300]]), data, [memoryview(buf)[:64]])  # coefficient out of range
    attempt(rows, data, [memoryview(buf)[:128:2]])  # non-contiguous destination
    attempt(rows, data, [memoryview(buf)[:64]], -1)


def test_recover_invalid() -> None:
    enc = gf256.gen_rs_matrix(4, 2)
    blocks = _encode_all(4, 2, enc, _data(4, 64, 1))
    with pytest.raises(DocaInvalidValue):  # three losses with two parity blocks
        ec.recover(enc, 4, {i: blocks[i] for i in (0, 4, 5)}, [1, 2, 3], [bytearray(64)] * 3)
    with pytest.raises(DocaInvalidValue):  # destinations vs missing
        ec.recover(enc, 4, {i: blocks[i] for i in (1, 2, 3, 4)}, [0], [])
    with pytest.raises(DocaInvalidValue):
        ec.recover(enc[:-1], 4, {}, [0], [bytearray(64)])


def test_kernel_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ec.KERNEL_ENV, raising=False)
    assert ec.select_kernel() == ec.available_kernels()[0]
    monkeypatch.setenv(ec.KERNEL_ENV, "pure")
    assert ec.select_kernel() == "pure"
    assert ec.select_kernel("numpy") == "numpy"  # the argument wins over the environment
    monkeypatch.setenv(ec.KERNEL_ENV, "bogus")
    with pytest.raises(DocaInvalidValue):
        ec.select_kernel()
    if "isal" not in ec.available_kernels():
        with pytest.raises(DocaNotSupported):
            ec.select_kernel("isal")
