"""Conformance: the Ec context (create, recover, update, galois_mul) on every backend."""

from __future__ import annotations

import itertools
import os

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.engines import gf256
from doca_py.engines import ec as kernels

from .conftest import Bench


def _ec(b: Bench, num: int = 8) -> d.Ec:
    ec = d.Ec(b.dev)
    b.pe.connect_ctx(ec)
    ok, err = b.callbacks()
    ec.task_create_set_conf(ok, err, num)
    ec.task_recover_set_conf(ok, err, num)
    ec.task_update_set_conf(ok, err, num)
    ec.task_galois_mul_set_conf(ok, err, num)
    ec.start()
    return ec


def _encode(b: Bench, ec: d.Ec, coding: d.EcMatrix, data: bytes, k: int, m: int, block: int) -> bytes:
    src = b.src(0, data)
    out = b.dst(1 << 20, m * block + 64)
    t = ec.task_create_allocate_init(coding, src, out)
    assert b.run(t) == "ok"
    assert out.get_data_len() == m * block
    parity = bytes(out.data_view())
    t.free()
    src.dec_refcount()
    out.dec_refcount()
    return parity


def test_vandermonde_single_parity_is_xor(bench: Bench) -> None:
    ec = _ec(bench)
    data = os.urandom(2 * 4096)
    parity = _encode(bench, ec, ec.matrix_create(d.EcMatrixType.VANDERMONDE, 2, 1), data, 2, 1, 4096)
    assert parity == bytes(a ^ b for a, b in zip(data[:4096], data[4096:]))


@pytest.mark.parametrize("mtype", list(d.EcMatrixType))
@pytest.mark.parametrize(("k", "m"), [(2, 1), (4, 2), (8, 3)])
def test_every_single_and_double_erasure_recovers(bench: Bench, mtype: d.EcMatrixType, k: int, m: int) -> None:
    ec = _ec(bench)
    block = 1024
    data = os.urandom(k * block)
    coding = ec.matrix_create(mtype, k, m)
    parity = _encode(bench, ec, coding, data, k, m, block)
    gen = gf256.gen_rs_matrix(k, m) if mtype is d.EcMatrixType.VANDERMONDE else gf256.gen_cauchy1_matrix(k, m)
    expect = bytearray(m * block)
    kernels.encode(gen[k * k:], [data[i * block:(i + 1) * block] for i in range(k)],
                   [memoryview(expect)[j * block:(j + 1) * block] for j in range(m)], block)
    assert parity == bytes(expect)  # bit-compatible with ISA-L's constructions
    blocks = [data[i * block:(i + 1) * block] for i in range(k)] + [parity[j * block:(j + 1) * block] for j in range(m)]
    for lost in itertools.chain(itertools.combinations(range(k + m), 1), itertools.combinations(range(k + m), min(2, m))):
        rec = ec.matrix_create_recover(coding, list(lost))
        survivors = [i for i in range(k + m) if i not in lost][:k]
        # Survivors as a buffer list: one buffer per block, chained, like the storage apps.
        head = bench.src(2 << 20, blocks[survivors[0]])
        for n, idx in enumerate(survivors[1:], 1):
            head.chain_list(bench.src((2 << 20) + n * block, blocks[idx]))
        out = bench.dst(3 << 20, len(lost) * block)
        t = ec.task_recover_allocate_init(rec, head, out)
        assert bench.run(t) == "ok", lost
        assert bytes(out.data_view()) == b"".join(blocks[i] for i in lost), lost
        t.free()
        head.dec_refcount()
        out.dec_refcount()
        rec.close()


def test_update_matches_a_fresh_encode(bench: Bench) -> None:
    ec = _ec(bench)
    k, m, block = 4, 2, 512
    coding = ec.matrix_create(d.EcMatrixType.CAUCHY, k, m)
    old = os.urandom(k * block)
    parity = _encode(bench, ec, coding, old, k, m, block)
    new1 = os.urandom(block)
    upd = ec.matrix_create_update(coding, [1])
    src = bench.src(2 << 20, old[block:2 * block] + new1 + parity)
    out = bench.dst(3 << 20, m * block)
    t = ec.task_update_allocate_init(upd, src, out)
    assert bench.run(t) == "ok"
    new_data = old[:block] + new1 + old[2 * block:]
    t.free()
    src.dec_refcount()
    new_parity = bytes(out.data_view())
    out.dec_refcount()
    assert new_parity == _encode(bench, ec, coding, new_data, k, m, block)


def test_galois_mul_and_raw_matrix(bench: Bench) -> None:
    ec = _ec(bench)
    raw = ec.matrix_create_from_raw(bytes([1, 2]), 2, 1)  # k=2 rows of m=1: p = d0 + 2*d1
    data = os.urandom(128)
    src = bench.src(0, data)
    out = bench.dst(1 << 20, 64)
    t = ec.task_galois_mul_allocate_init(raw, src, out)
    assert bench.run(t) == "ok"
    assert bytes(out.data_view()) == bytes(x ^ gf256.gf_mul(2, y) for x, y in zip(data[:64], data[64:]))
    t.free()
    src.dec_refcount()
    out.dec_refcount()


@pytest.mark.parametrize("case", ["unaligned", "too_small", "short"])
def test_bad_shapes_fail_the_task_and_write_nothing(bench: Bench, case: str,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    ec = _ec(bench)
    coding = ec.matrix_create(d.EcMatrixType.VANDERMONDE, 2, 1)
    size = {"unaligned": 2 * 100, "too_small": 2 * 4096, "short": 2 * 32}[case]
    src = bench.src(0, os.urandom(size))
    room = 4095 if case == "too_small" else 8192
    sentinel_at = (1 << 20) + room
    bench.mm.buffer[sentinel_at:sentinel_at + 64] = b"\xa5" * 64
    out = bench.dst(1 << 20, room)
    t = ec.task_create_allocate_init(coding, src, out)
    with caplog.at_level("WARNING", logger="doca_py"):
        assert bench.run(t) == "err"
    assert t.get_status() == d.ErrorCode.INVALID_VALUE and out.get_data_len() == 0
    assert bytes(bench.mm.buffer[sentinel_at:sentinel_at + 64]) == b"\xa5" * 64
    assert ec.get_state() == d.CtxState.STOPPING  # a failed task stops the ctx
    if d.impl == "emulated":  # the failure says why, on the task, in its exception and once in the log
        why = {"unaligned": "multiple of 64", "too_small": "bytes free", "short": "multiple of 64"}[case]
        assert why in t.reason and why in str(t.exception())
        assert [r for r in caplog.records if why in r.getMessage()] and len(caplog.records) == 1
    t.free()
    src.dec_refcount()
    out.dec_refcount()


def test_matrix_arguments_are_checked(bench: Bench) -> None:
    ec = _ec(bench)
    with pytest.raises(e.DocaInvalidValue):
        ec.matrix_create(d.EcMatrixType.CAUCHY, 0, 1)
    with pytest.raises(e.DocaInvalidValue):
        ec.matrix_create_from_raw(b"\x01\x02\x03", 2, 1)
    coding = ec.matrix_create(d.EcMatrixType.CAUCHY, 4, 2)
    with pytest.raises(e.DocaInvalidValue):
        ec.matrix_create_recover(coding, [0, 1, 2])  # more erasures than parity
    with pytest.raises(e.DocaInvalidValue):
        ec.matrix_create_recover(coding, [3, 1])  # not ascending
    other = _ec(bench)
    with pytest.raises(e.DocaNotPermitted):
        other.matrix_create_recover(coding, [0])
    assert d.Ec.cap_get_max_buf_list_len(bench.dev.as_devinfo()) >= 2
    ec.close()
    assert coding.closed  # matrices close with their context


def test_closed_matrices_are_released(bench: Bench) -> None:
    # Regression: every recover matrix made stayed referenced by its Ec until the Ec closed.
    if d.impl != "emulated":
        pytest.skip("inspects the emulated Ec's live matrices")
    ec = _ec(bench)
    coding = ec.matrix_create(d.EcMatrixType.CAUCHY, 4, 2)
    live = ec._h.matrices  # type: ignore[attr-defined]
    assert len(live) == 1
    for missing in ([0], [1], [2, 5], [0, 3]) * 25:
        ec.matrix_create_recover(coding, missing).close()
    assert len(live) == 1
    coding.close()
    assert len(live) == 0


def test_setters_re_aim_create_and_recover_tasks(bench: Bench) -> None:
    ec = _ec(bench)
    k, m, block = 2, 1, 4096
    vander = ec.matrix_create(d.EcMatrixType.VANDERMONDE, k, m)
    cauchy = ec.matrix_create(d.EcMatrixType.CAUCHY, k, m)
    data = os.urandom(k * block)
    src = bench.src(0, data)
    out1 = bench.dst(1 << 20, block)
    t = ec.task_create_allocate_init(vander, src, out1)
    assert bench.run(t) == "ok"
    out2 = bench.dst(2 << 20, block)
    t.set_coding_matrix(cauchy)
    t.set_rdnc_blocks(out2)
    assert t.get_coding_matrix() is cauchy and t.get_rdnc_blocks() is out2
    assert bench.run(t) == "ok"
    assert bytes(out2.data_view()) == _encode(bench, ec, cauchy, data, k, m, block)
    # Recover block 0 from (block 1, parity) with a task re-aimed at another source.
    survivors = bench.src(3 << 20, data[block:] + bytes(out2.data_view()))
    lost = bench.dst((3 << 20) + (512 << 10), block)
    r = ec.task_recover_allocate_init(ec.matrix_create_recover(cauchy, [0]), src, lost)
    r.set_available_blocks(survivors)
    assert r.get_available_blocks() is survivors
    assert bench.run(r) == "ok" and bytes(lost.data_view()) == data[:block]
