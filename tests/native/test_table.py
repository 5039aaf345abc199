"""The libdoca_common declaration table against the C API inventory (``capi_inventory``)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from doca_py.native.capi import COMMON, INLINE, Decl
from doca_py.native.capi.common import BEYOND_INVENTORY

from . import capi_inventory

SECTIONS = {f"2.{i}" for i in range(1, 9)}
TABLE = {d.name: d for d in COMMON}
# Private bases, but the only way to ask "is this a POINTER(...) / CFUNCTYPE(...) type".
POINTER_BASE: Any = ctypes._Pointer  # noqa: SLF001
CFUNC_BASE: Any = getattr(ctypes, "_CFuncPtr")


@dataclass
class Row:
    name: str
    returns: str
    params: list[str]
    variadic: bool
    stability: str
    v26: str


def _rows() -> list[Row]:
    rows = [Row(cells[1].strip("`"), cells[2].strip("`"), capi_inventory.params(cells[3]),
                cells[3].endswith("..."), cells[4], cells[5])
            for _, cells in capi_inventory.function_rows(capi_inventory.lines(), SECTIONS)]
    assert len(rows) > 150, "the inventory format changed; update this parser"
    return rows


def test_every_exported_function_is_declared_with_its_arity() -> None:
    problems = []
    exported = [r for r in _rows() if r.stability != "I"]
    for row in exported:
        decl = TABLE.get(row.name)
        if decl is None:
            problems.append(f"{row.name}: no Decl")
        elif len(decl.argtypes) != len(row.params) or decl.variadic != row.variadic:
            problems.append(f"{row.name}: {len(decl.argtypes)} argtypes, doc has {len(row.params)}")
    assert problems == []
    later = {"doca_buf_inventory_buf_reuse_by_addr", "doca_buf_inventory_buf_reuse_by_data",
             "doca_buf_inventory_buf_reuse_by_args", "doca_mmap_get_mkey",
             "doca_devinfo_get_pci_func_type", "doca_devinfo_get_sf_index"}  # §2.17
    assert set(TABLE) == {r.name for r in exported} | later | BEYOND_INVENTORY
    assert len(exported) == 155


def test_inline_rows_are_not_declared_but_replaced() -> None:
    inline = {r.name for r in _rows() if r.stability == "I"}
    assert inline == set(INLINE)
    assert not inline & set(TABLE)


def _expected_restype(text: str) -> Any:
    simple: dict[str, Any] = {
        "doca_error_t": ctypes.c_int, "void": None, "const char*": ctypes.c_char_p,
        "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32,
        "doca_data (BY VALUE)": ctypes.c_uint64,
    }  # fmt: skip
    if text in simple:
        return simple[text]
    assert text.startswith("doca_") and text.endswith("*"), text
    return ctypes.c_void_p


def _param_ok(text: str, argtype: Any) -> bool:
    if text.startswith(("→", "↔")):
        return isinstance(argtype, type) and issubclass(argtype, POINTER_BASE)
    exact: dict[str, Any] = {
        "doca_data⟨val⟩": ctypes.c_uint64, "size_t": ctypes.c_size_t, "int": ctypes.c_int,
        "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "const char*": ctypes.c_char_p,
        "doca_error_t": ctypes.c_int, "const doca_data*": ctypes.POINTER(ctypes.c_uint64),
    }  # fmt: skip
    if text in exact:
        return bool(argtype is exact[text])
    if text.startswith("enum "):
        return bool(argtype is ctypes.c_int)
    if text.endswith("_cb_t*") or text.endswith("_callback_t") or text == "log_flush_callback":
        return isinstance(argtype, type) and issubclass(argtype, CFUNC_BASE)
    if text == "doca_notification_handle_t":
        return argtype in (ctypes.c_int, ctypes.c_void_p)  # fd on Linux, HANDLE on Windows
    if text == "char*" or text.endswith("**"):  # caller buffer, or an array of handles
        return isinstance(argtype, type) and issubclass(argtype, POINTER_BASE)
    # Opaque struct pointers, FILE*, void*: c_void_p.
    return text.endswith("*") and argtype is ctypes.c_void_p


def test_types_follow_the_mapping_rules() -> None:
    problems = []
    for row in _rows():
        decl = TABLE.get(row.name)
        if decl is None:
            continue
        if decl.restype is not _expected_restype(row.returns):
            problems.append(f"{row.name}: restype {decl.restype} for {row.returns}")
        for i, (text, argtype) in enumerate(zip(row.params, decl.argtypes, strict=True)):
            if not _param_ok(text, argtype):
                problems.append(f"{row.name} arg {i}: {argtype} for {text}")
    assert problems == []


def test_version_markers_follow_the_26_column() -> None:
    for row in _rows():
        decl: Decl | None = TABLE.get(row.name)
        if decl is None:
            continue
        assert (decl.since == (3, 0)) == (row.v26 == "—"), row.name
        assert bool(decl.variants) == (row.v26 == "Δ"), row.name
