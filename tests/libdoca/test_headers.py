"""libdoca's C headers: each compiles on its own, and each prototype is the function its table exports."""

from __future__ import annotations

import ctypes
import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from doca_py.errors import ErrorCode
from doca_py.libdoca import cgen, headers, prototypes
from doca_py.libdoca.build import BuildError, find_compiler, parse_version
from doca_py.types import AccessFlag, CtxState, MtuSize

from .env import lib_dir

VERSIONS = ("2.6", "3.0", "3.2")
STRICT = ("-Wall", "-Wextra", "-Werror")


@pytest.fixture(scope="module")
def cc() -> str:
    found = find_compiler()
    if found is None:
        pytest.skip("no C compiler")
    return found


@pytest.fixture(scope="module", params=VERSIONS)
def include(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    version: str = request.param
    d = tmp_path_factory.mktemp(f"include-{version}")
    headers.write(d, parse_version(version))
    return version, d


def _compile(cc: str, sources: list[Path], include: Path, *flags: str) -> None:
    proc = subprocess.run([cc, "-fsyntax-only", *STRICT, *flags, "-I", str(include), *map(str, sources)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_every_header_compiles_on_its_own(cc: str, include: tuple[str, Path], tmp_path: Path) -> None:
    version, d = include
    names = sorted(p.name for p in d.glob("doca_*.h"))
    assert "doca_dma.h" in names and "doca_log.h" in names
    sources = []
    for name in names:  # one translation unit per header: each must bring what it needs
        src = tmp_path / f"only_{name}.c"
        src.write_text(f"#include <{name}>\ntypedef int translation_unit_not_empty;\n")
        sources.append(src)
    _compile(cc, sources, d, "-std=c11", "-pedantic")


def test_all_headers_compile_together_in_c_and_cxx(cc: str, include: tuple[str, Path], tmp_path: Path) -> None:
    _, d = include
    text = "".join(f"#include <{p.name}>\n" for p in sorted(d.glob("doca_*.h")))
    (tmp_path / "all.c").write_text(text)
    _compile(cc, [tmp_path / "all.c"], d, "-DDOCA_ALLOW_EXPERIMENTAL_API")
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx:
        (tmp_path / "all.cpp").write_text(text)
        _compile(cxx, [tmp_path / "all.cpp"], d)


_DECL = re.compile(r"^(?:DOCA_STABLE|DOCA_EXPERIMENTAL|DOCA_DEPRECATED)\n(?P<ret>[^\n(]*?)\b(?P<name>doca_\w+)"
                   r"\((?P<params>[^)]*)\)", re.M)


def _declared(d: Path) -> dict[str, tuple[str, list[str]]]:
    """Every exported prototype of the headers in *d*: name → (header, parameters); read from the text."""
    out: dict[str, tuple[str, list[str]]] = {}
    for h in d.glob("doca_*.h"):
        for m in _DECL.finditer(h.read_text()):
            params = [p.strip() for p in m["params"].split(",")]
            out[m["name"]] = (h.name, [] if params == ["void"] else params)
    return out


def test_the_headers_declare_exactly_what_the_libraries_export(include: tuple[str, Path]) -> None:
    version, d = include
    declared = _declared(d)
    exported = {e.name: e for entries in cgen.exported(parse_version(version)).values() for e in entries}
    assert set(declared) == set(exported)
    for name, entry in exported.items():
        header, params = declared[name]
        if entry.decl.variadic:
            assert params[-1] == "...", name
            params = params[:-1]
        assert len(params) == len(entry.argtypes), f"{name} in {header}: {params} vs {entry.argtypes}"


def test_each_prototype_passes_its_arguments_as_the_table_says(include: tuple[str, Path]) -> None:
    version, d = include
    declared = _declared(d)
    for entries in cgen.exported(parse_version(version)).values():
        for e in entries:
            header, params = declared[e.name]
            text = f"{e.name}({', '.join(params)})"
            proto = headers.parse(f"int {text}")
            for i, (p, t) in enumerate(zip(proto.params, e.argtypes)):
                assert headers.abi_matches(p.ctype, t), f"{e.name} parameter {i}: {p.ctype} vs {t}"


def test_enum_values_are_doca_pys(cc: str, include: tuple[str, Path], tmp_path: Path) -> None:
    version, d = include
    checks = [(c.c_name, int(c)) for c in ErrorCode if version != "2.6" or c < ErrorCode.AUTHENTICATION]
    checks += [(f"DOCA_ACCESS_FLAG_{m.name}", int(m)) for m in AccessFlag]
    checks += [(f"DOCA_CTX_STATE_{m.name}", int(m)) for m in CtxState]
    checks += [(m.c_name, int(m)) for m in MtuSize]
    src = tmp_path / "values.c"
    src.write_text("#include <doca_error.h>\n#include <doca_types.h>\n#include <doca_ctx.h>\n"
                   + "".join(f'_Static_assert({n} == {v}, "{n}");\n' for n, v in checks))
    _compile(cc, [src], d, "-std=c11")


def test_doca_2_6_presents_libdoca_cc_its_abi_and_its_log_macros(include: tuple[str, Path]) -> None:
    version, d = include
    names = {p.name for p in d.glob("doca_*.h")}
    libs = set(cgen.exported(parse_version(version)))
    declared = _declared(d)
    if version == "2.6":
        assert {"doca_cc.h", "doca_cc_consumer.h", "doca_cc_producer.h"} <= names and "doca_comch.h" not in names
        assert "cc" in libs and "comch" not in libs  # DOCA 2.6 ships libdoca_cc only
        assert len(declared["doca_rdma_export"][1]) == 3  # no connection out-parameter yet
        assert "double *" in declared["doca_devinfo_get_active_rate"][1][1]
        assert "DOCA_ERROR_SKIPPED" not in (d / "doca_error.h").read_text()
        assert "doca_log(DOCA_LOG_LEVEL_##level" in (d / "doca_log.h").read_text()  # DOCA_LOG(INFO, ...)
    else:
        assert "doca_comch.h" in names and "doca_cc.h" not in names
        assert "comch" in libs and "cc" not in libs
        assert len(declared["doca_rdma_export"][1]) == 4
        assert "DOCA_ERROR_SKIPPED = 30" in (d / "doca_error.h").read_text()


def test_the_header_inline_helpers_are_static_inline(include: tuple[str, Path]) -> None:
    _, d = include
    inv = (d / "doca_buf_inventory.h").read_text()
    assert "static inline doca_error_t doca_buf_inventory_buf_get_by_addr(" in inv
    assert "static inline doca_error_t doca_buf_inventory_buf_get_by_data(" in inv
    assert "static inline const char *doca_version(void)" in (d / "doca_version.h").read_text()


def test_the_callback_typedefs_are_declared_even_when_no_prototype_names_them(include: tuple[str, Path]) -> None:
    _, d = include  # doca_task_completion_cb_t: programs declare their generic callbacks with it
    assert "typedef void (*doca_task_completion_cb_t)(struct doca_task *task, union doca_data task_user_data, " \
           "union doca_data ctx_user_data);" in (d / "doca_pe.h").read_text()
    assert "typedef void (*doca_ctx_state_changed_callback_t)(" in (d / "doca_ctx.h").read_text()


def test_a_spelling_that_disagrees_with_its_table_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = tuple(r.replace("doca_dma_create(struct doca_dev *dev, struct doca_dma **dma)",
                           "doca_dma_create(struct doca_dev *dev, uint32_t flags, struct doca_dma **dma)")
                 for r in prototypes.PROTOTYPES["doca_dma.h"])
    assert rows != prototypes.PROTOTYPES["doca_dma.h"]
    monkeypatch.setitem(prototypes.PROTOTYPES, "doca_dma.h", rows)
    headers._render.cache_clear()
    try:
        with pytest.raises(headers.HeaderError, match="doca_dma_create: 3 parameters in C, 2 in the table"):
            headers.render((3, 2))
        with pytest.raises(BuildError, match="doca_dma_create"):  # a build refuses it too
            importlib.import_module("doca_py.libdoca.build")._headers((3, 2))
    finally:
        headers._render.cache_clear()


def test_check_compares_every_parameter_and_callback() -> None:
    proto = headers.parse("DOCA_STABLE doca_error_t f(const struct doca_buf *buf, uint32_t *n)")
    assert headers.check(proto, ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]) == []
    wrong = headers.check(proto, ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)])
    assert wrong == ["f: parameter 1 (uint32_t * n) is LP_c_ulong in the table"]
    assert headers.check(proto, None, [ctypes.c_void_p, ctypes.c_void_p]) == [
        "f: returns 'doca_error_t' in C, None in the table"]
    cb = headers.parse("typedef void (*my_cb_t)(struct doca_task *task, union doca_data a, union doca_data b)")
    uses = headers.parse("doca_error_t g(my_cb_t cb)")
    good = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
    bad = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64)
    assert headers.check(uses, ctypes.c_int, [good], {"my_cb_t": cb}) == []
    assert headers.check(uses, ctypes.c_int, [bad], {"my_cb_t": cb}) == [
        "g: parameter 0: the typedef my_cb_t does not match the table's callback"]


def test_a_build_carries_the_headers_of_its_version() -> None:
    lib = lib_dir("3.2")
    inc = lib.parent / "include"
    assert {p.name: p.read_text() for p in inc.glob("doca_*.h")} == headers.render((3, 2))
