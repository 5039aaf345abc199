"""Every DOCA C name in ``doca_py/native`` is spelled out, so ``grep`` finds it.

1. No f-string, ``%``/``.format`` or ``+`` builds a ``doca_*`` name, and no ``getattr``
   takes a name built on the spot (an AST scan of every module of the native backend).
2. Each declared C function has exactly one row in the raw layer, of the form
   ``_f("doca_x", …)`` (or ``_delta``/``_cc``), which ``grep -rn doca_x doca_py/native/capi``
   finds with its ``argtypes``/``restype`` and DOCA versions.
3. The per-task-type and per-side name tables of the object layer name declared functions.
4. The 3.x names are in the C API inventory (``capi_inventory``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from doca_py.native import capi
from doca_py.native.capi import dma as capi_dma
from doca_py.native.capi.common import BEYOND_INVENTORY
from doca_py.native import comch as ncomch
from doca_py.native import compress as ncompress
from doca_py.native import ec as nec
from doca_py.native import rdma as nrdma

from . import capi_inventory

NATIVE = Path(nrdma.__file__).parent
CAPI = NATIVE / "capi"
# "doca_" at the end of a literal part, not inside "libdoca_": the start of a built C name.
_DOCA_TAIL = re.compile(r"(?<![A-Za-z])doca_\w*$")


def _sources() -> list[Path]:
    # The fake-library helpers are test code (moving to tests/native/fakelib/).
    return sorted(p for p in NATIVE.rglob("*.py") if not p.name.startswith("_testlib"))


def _builds_doca_name(node: ast.AST) -> bool:
    """A string expression whose literal part ``…doca_x`` is followed by a computed part."""
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        return any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) and _DOCA_TAIL.search(a.value)
            and isinstance(b, ast.FormattedValue)
            for a, b in zip(parts, parts[1:])
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = node.left
        return isinstance(left, ast.Constant) and isinstance(left.value, str) and (
            bool(_DOCA_TAIL.search(left.value)) or (isinstance(node.op, ast.Mod) and "doca_%" in left.value))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = node.func.value
        return isinstance(base, ast.Constant) and isinstance(base.value, str) and "doca_{" in base.value
    return False


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if _builds_doca_name(node):
            out.append(f"{path.name}:{getattr(node, 'lineno', '?')}: builds a doca_* name")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[1], (ast.JoinedStr, ast.BinOp))):
            out.append(f"{path.name}:{node.lineno}: getattr with a name built on the spot")
    return out


def test_no_module_builds_a_doca_name() -> None:
    assert len(_sources()) > 20
    problems = [v for p in _sources() for v in _violations(p)]
    assert problems == []


@pytest.mark.parametrize("snippet", [
    'f"doca_comch_{side}_set_{name}"',
    '"doca_cc_" + name',
    '"doca_%s_create" % lib',
    '"doca_{}_create".format(lib)',
    'getattr(lib, f"{t}_as_task")',
])
def test_the_scan_catches_built_names(snippet: str, tmp_path: Path) -> None:
    # Guards the scan itself: each of these is how names used to be built.
    src = tmp_path / "m.py"
    src.write_text(f"x = {snippet}\n")
    assert _violations(src)


def test_the_scan_allows_messages_and_library_names(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('a = f"libdoca_{lib} (DOCA {v})"\nb = f"{what}: doca_rdma_connect failed"\nc = "doca_x"\n')
    assert _violations(src) == []


def _capi_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(CAPI.glob("*.py")))


def test_each_declared_function_has_one_literal_row() -> None:
    text = _capi_text()
    problems = []
    for lib, decls in capi.tables().items():
        for d in decls:
            rows = [line for line in text.splitlines() if re.match(rf'\s*_(?:f|delta|cc)\("{d.name}",', line)]
            if len(rows) != 1:
                problems.append(f"{lib}: {d.name} has {len(rows)} rows")
    assert problems == []


def test_grep_finds_a_row_with_signature_and_versions() -> None:
    rows = [line for line in _capi_text().splitlines() if "doca_rdma_set_connection_request_timeout" in line]
    assert rows == ['    _f("doca_rdma_set_connection_request_timeout", ERR, P, c_uint16, **_NEW),']
    rows = [line for line in _capi_text().splitlines() if '"doca_cc_server_get_device_repr"' in line]
    assert len(rows) == 1 and '"doca_comch_server_get_device_rep"' in rows[0] and "OUT" in rows[0]


def _declared(lib: str) -> set[str]:
    return {d.name for d in capi.tables()[lib]}


@pytest.mark.parametrize(("table", "lib"), [
    (nrdma.TASK_FNS, "rdma"),
    (nec.TASK_FNS, "erasure_coding"),
    (ncompress.TASK_FNS, "compress"),
])
def test_task_tables_name_declared_functions(table: dict[str, dict[str, str]], lib: str) -> None:
    names = {n for fns in table.values() for n in fns.values()}
    assert names and names <= _declared(lib)
    for fns in table.values():
        assert {"set_conf", "as_task"} <= fns.keys()


def test_task_tables_cover_every_task_type() -> None:
    assert set(nrdma.TASK_FNS) == set(nrdma.TASK_TYPES)
    assert set(ncompress.TASK_TYPES) | {ncompress.LEGACY_LZ4} == set(ncompress.TASK_FNS)
    # Each rdma task type's functions are exactly the declared ones of that type.
    for kind, fns in nrdma.TASK_FNS.items():
        prefix = f"doca_rdma_task_{kind}_"
        others = [k for k in nrdma.TASK_TYPES if k != kind and k.startswith(kind)]
        want = {n for n in _declared("rdma") if n.startswith(prefix)
                and not any(n.startswith(f"doca_rdma_task_{o}_") for o in others)}
        assert {n for n in fns.values() if n.startswith(prefix)} == want


def test_comch_side_table_and_rdma_settings_name_declared_functions() -> None:
    comch = _declared("comch")
    for side, fns in ncomch.SIDE_FNS.items():
        assert fns["name"] == f"doca_comch_{side}"
        assert {v for k, v in fns.items() if k != "name"} <= comch
        assert set(fns) == set(ncomch.SIDE_FNS["server"])
    rdma = _declared("rdma")
    assert {n for setter, getter, _ in nrdma._ATTRS.values() for n in (setter, getter)} <= rdma


def test_3x_names_are_in_the_inventory() -> None:
    listed = set(re.findall(r"\bdoca_\w+", capi_inventory.DOC.read_text(encoding="utf-8")))
    current = [d.name for decls in capi.tables().values() for d in decls
               if d.until is None and d.name not in BEYOND_INVENTORY | capi_dma.BEYOND_INVENTORY]
    assert len(current) > 500
    assert [n for n in current if n not in listed] == []
