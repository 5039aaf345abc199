"""The generated ``_raw.pyi`` stub: current with the tables, and useful to mypy."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from doca_py.native import capi
from doca_py.native.capi import Decl, gen_stubs, pre3


def test_checked_in_stub_matches_the_tables() -> None:
    # Stale after a table edit: run `python -m doca_py.native.capi.gen_stubs`.
    assert gen_stubs.STUB.read_text(encoding="utf-8") == gen_stubs.render()
    assert gen_stubs.main(["--check"]) == 0


def test_every_declared_function_is_in_its_protocol() -> None:
    text = gen_stubs.STUB.read_text(encoding="utf-8")
    for lib, decls in capi.tables().items():
        body = text.split(f"class {gen_stubs.PROTOCOLS[lib]}(Lib, Protocol):")[1].split("\nclass ")[0]
        assert [line.split(":")[0].strip() for line in body.splitlines() if line.startswith("    doca_")][:len(decls)] \
            == [d.name for d in decls]


def test_type_mapping() -> None:
    p, u32p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)
    table = {"rdma": (
        Decl("doca_a", ctypes.c_int, (p, u32p, ctypes.c_char_p, ctypes.c_uint16)),
        Decl("doca_b", ctypes.c_void_p, (p,)),
        Decl("doca_c", None, (p, capi.TaskCompletionCb, ctypes.c_double)),
        Decl("doca_d", ctypes.c_int, (p, p), variants=(pre3(ctypes.c_int, (p,)),)),
        Decl("doca_e", ctypes.c_char_p, ()),
    )}
    text = gen_stubs.render(table)
    assert "    doca_a: CFunc[[VoidP, Ptr, CharP, int], int]\n" in text
    assert "    doca_b: CFunc[[VoidP], int | None]\n" in text
    assert "    doca_c: CFunc[[VoidP, Callback, float], None]\n" in text
    assert "    doca_d: CFunc[..., int]\n" in text  # 2.6 and 3.x arities differ
    assert "    doca_e: CFunc[[], bytes | None]\n" in text
    with pytest.raises(ValueError, match="no protocol name"):
        gen_stubs.render({"newlib": ()})
    with pytest.raises(TypeError, match="no stub type"):
        gen_stubs.render({"dma": (Decl("doca_f", ctypes.c_int, (ctypes.c_float * 2,)),)})


def test_check_reports_a_stale_stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    stub = tmp_path / "_raw.pyi"
    stub.write_text("# old\n")
    monkeypatch.setattr(gen_stubs, "STUB", stub)
    assert gen_stubs.main(["--check"]) == 1
    assert "is stale" in capsys.readouterr().err
    assert gen_stubs.main([]) == 0
    assert stub.read_text() == gen_stubs.render()


@pytest.mark.slow
def test_mypy_checks_calls_through_the_protocols(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from doca_py.native.capi.rdma import load_rdma\n"
        "from doca_py.native.capi.comch import load_comch\n"
        "lib = load_rdma()\n"
        "lib.doca_rdma_set_mtu(None, 3)\n"  # fine
        "lib.doca_rdma_set_mtu(None)\n"  # line 5: arity
        "lib.doca_rdma_set_mtux(None, 1)\n"  # line 6: no such function
        "x: str = lib.doca_rdma_as_ctx(None)\n"  # line 7: returns an address
        "lib.doca_rdma_export(None, None, None)\n"  # fine: 2.6 and 3.x arities differ
        "load_comch().doca_comch_client_create(None, 'svc', None)\n"  # line 9: const char * wants bytes
    )
    out, _, status = api.run(["--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
                              str(snippet)])
    lines = sorted({int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line})
    assert status == 1 and lines == [5, 6, 7, 9], out
