"""What a user reads: ``await task`` typed as the task's own class, error prefixes printed once, errors that
name the method called, and index errors that say "out of range"."""

from __future__ import annotations

from pathlib import Path

import pytest

import doca_py as d
from doca_py import errors as e

from .helpers import local_mmap, rig

ROOT = Path(__file__).resolve().parents[2]
emulated_only = pytest.mark.skipif(d.impl != "emulated", reason="the emulator's own messages")

USER_CODE = '''
import doca_py as d


async def copy(dma: d.Dma, src: d.Buf, dst: d.Buf) -> int:
    task = dma.task_memcpy_alloc_init(src, dst)
    task.submit()
    reveal_type(await task)
    done = await task
    return done.get_dst().get_data_len()  # DmaTaskMemcpy's own method: no cast needed
'''


def test_await_task_is_typed_as_the_task_class(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    (tmp_path / "user_await.py").write_text(USER_CODE)
    out, err, status = api.run(["--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"),
                                str(tmp_path / "user_await.py")])
    assert 'Revealed type is "doca_py.dma.DmaTaskMemcpy"' in out, out + err
    assert ": error: " not in out, out + err


@emulated_only
def test_a_failed_task_prints_its_error_prefix_once() -> None:
    """The emulator's reason no longer carries the ``DOCA_ERROR_X: description:`` its status adds again."""
    with rig(start=False) as r:
        ec = d.Ec(r.dev)
        r.pe.connect_ctx(ec)
        ec.task_create_set_conf(lambda *a: None, lambda *a: None, 1)
        ec.start()
        mm = local_mmap(r.dev)
        base = mm.get_memrange()[0]
        src = r.inv.buf_get_by_data(mm, base, 100)  # not k blocks of a multiple of 64 bytes
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = ec.task_create_allocate_init(ec.matrix_create(d.EcMatrixType.CAUCHY, 2, 1), src, dst)
        task.submit()
        while r.pe.progress() or ec.get_num_inflight_tasks():
            pass
        text = str(task.exception())
        assert text.count("DOCA_ERROR_INVALID_VALUE") == 1 and text.count("Invalid input") == 1, text
        assert text.startswith("DOCA_ERROR_INVALID_VALUE: Invalid input: EcTaskCreate failed: source of 100 bytes")
        task.free()
        ec.close()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


@emulated_only
def test_ec_index_errors_say_out_of_range() -> None:
    with d.Dev.open_by_pci_addr("03:00.0") as dev:
        ec = d.Ec(dev)
        coding = ec.matrix_create(d.EcMatrixType.CAUCHY, 4, 2)
        with pytest.raises(e.DocaInvalidValue, match=r"missing block index 6 out of range 0\.\.5 \(k=4 data and m=2"):
            ec.matrix_create_recover(coding, [1, 6])
        with pytest.raises(e.DocaInvalidValue, match=r"missing block index -1 out of range 0\.\.5"):
            ec.matrix_create_recover(coding, [-1])
        with pytest.raises(e.DocaInvalidValue, match=r"cannot recover 3 missing blocks \[0, 1, 2\] with m=2"):
            ec.matrix_create_recover(coding, [0, 1, 2])
        with pytest.raises(e.DocaInvalidValue, match=r"updated data block index 4 out of range 0\.\.3 \(k=4\)"):
            ec.matrix_create_update(coding, [0, 4])
        with pytest.raises(e.DocaTypeError, match=r"^Ec\.matrix_create_recover: missing must hold block indices "
                                                  r"\(int\), not str$"):
            ec.matrix_create_recover(coding, ["1"])  # type: ignore[list-item]
        with pytest.raises(e.DocaTypeError, match=r"^Ec\.matrix_create_update: updated must be a sequence"):
            ec.matrix_create_update(coding, 3)  # type: ignore[arg-type]
        ec.close()


@emulated_only
def test_configuration_errors_name_the_method_called() -> None:
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe:
        rdma = d.Rdma(dev)
        pe.connect_ctx(rdma)
        rdma.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
        rdma.task_receive_set_conf(lambda *a: None, lambda *a: None, 1)
        rdma.start()
        with pytest.raises(e.DocaBadState, match=r": task_receive_set_dst_buf_list_len: configure the ctx while"):
            rdma.task_receive_set_dst_buf_list_len(2)
        with pytest.raises(e.DocaBadState, match=r": Rdma\.task_send_set_conf: configure the ctx while it is idle"):
            rdma.task_send_set_conf(lambda *a: None, lambda *a: None, 1)
        rdma.stop()
        rdma.close()
        mm = local_mmap(dev)
        with pytest.raises(e.DocaBadState, match=r": Mmap\.allocate: set_memrange: mmap is started"):
            mm.allocate(4096)
        mm.close()
