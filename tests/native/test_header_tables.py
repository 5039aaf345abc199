"""The declarations of ``doca_mmap_advise.h``, ``doca_rdma_bridge.h`` and ``doca_graph.h`` (libdoca_common)
against the headers, and what an older runtime says about them.

The C API inventory (``capi_inventory``) does not list these headers, so the signatures below are copied
from the DOCA 3.0.0058 headers (``doca_rdma_bridge.h`` is the same in 2.6.0058 but for
``doca_rdma_bridge_get_mmap_mkey_from_pd``, which 2.6 lacks; 2.6 has no ``doca_mmap_advise.h``;
``doca_graph.h`` is the same in 2.6.0058 and 3.0.0058)."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

import pytest

import doca_py as d
from doca_py.native import capi
from doca_py.native.capi import COMMON, GraphCompletionCb, GraphUserNodeCb, MissingFunction, TaskCompletionCb
from doca_py.native.capi.common import BEYOND_INVENTORY
from doca_py.native.capi.graph import GRAPH
from doca_py.native.capi.mmap_advise import MMAP_ADVISE
from doca_py.native.capi.rdma_bridge import RDMA_BRIDGE

HEADERS = {
    "doca_mmap_advise.h": """
        doca_error_t doca_mmap_advise_create(struct doca_dev *dev, struct doca_mmap_advise **mmap_advise);
        doca_error_t doca_mmap_advise_destroy(struct doca_mmap_advise *mmap_advise);
        struct doca_ctx *doca_mmap_advise_as_ctx(struct doca_mmap_advise *mmap_advise);
        doca_error_t doca_mmap_advise_cap_task_cache_invalidate_is_supported(const struct doca_devinfo *devinfo);
        doca_error_t doca_mmap_advise_task_cache_invalidate_get_max_buf_size(const struct doca_devinfo *devinfo, uint64_t *buf_size);
        doca_error_t doca_mmap_advise_task_invalidate_cache_set_conf(struct doca_mmap_advise *mmap_advise, doca_mmap_advise_task_invalidate_cache_completion_cb_t completion_cb, doca_mmap_advise_task_invalidate_cache_completion_cb_t error_cb, uint32_t num_tasks);
        doca_error_t doca_mmap_advise_task_invalidate_cache_alloc_init(struct doca_mmap_advise *mmap_advise, struct doca_buf *buf, union doca_data user_data, struct doca_mmap_advise_task_invalidate_cache **task);
        struct doca_task *doca_mmap_advise_task_invalidate_cache_as_doca_task(struct doca_mmap_advise_task_invalidate_cache *task);
        void doca_mmap_advise_task_invalidate_cache_set_buf(struct doca_mmap_advise_task_invalidate_cache *task, struct doca_buf *buf);
        struct doca_buf *doca_mmap_advise_task_invalidate_cache_get_buf(const struct doca_mmap_advise_task_invalidate_cache *task);
    """,
    "doca_rdma_bridge.h": """
        doca_error_t doca_rdma_bridge_get_dev_pd(const struct doca_dev *dev, struct ibv_pd **pd);
        doca_error_t doca_rdma_bridge_open_dev_from_pd(struct ibv_pd *pd, struct doca_dev **dev);
        doca_error_t doca_rdma_bridge_get_buf_mkey(const struct doca_buf *buf, struct doca_dev *dev, uint32_t *mkey);
        doca_error_t doca_rdma_bridge_get_mmap_mkey_from_pd(const struct doca_mmap *mmap, struct ibv_pd *pd, uint32_t *mkey);
    """,
    "doca_graph.h": """
        doca_error_t doca_graph_create(struct doca_pe *pe, struct doca_graph **graph);
        doca_error_t doca_graph_destroy(struct doca_graph *graph);
        doca_error_t doca_graph_set_conf(struct doca_graph *graph, doca_graph_completion_cb_t graph_completion_cb, doca_graph_completion_cb_t graph_error_cb, uint32_t num_instances);
        doca_error_t doca_graph_set_user_data(struct doca_graph *graph, union doca_data user_data);
        doca_error_t doca_graph_get_user_data(const struct doca_graph *graph, union doca_data *user_data);
        doca_error_t doca_graph_node_create_from_ctx(struct doca_graph *graph, const struct doca_ctx *ctx, struct doca_graph_node **node);
        doca_error_t doca_graph_node_create_from_user(struct doca_graph *graph, doca_graph_user_node_cb_t cb, struct doca_graph_node **node);
        doca_error_t doca_graph_node_create_from_graph(struct doca_graph *graph, struct doca_graph *sub_graph, struct doca_graph_node **node);
        doca_error_t doca_graph_add_dependency(struct doca_graph *graph, struct doca_graph_node *from, struct doca_graph_node *to);
        doca_error_t doca_graph_start(struct doca_graph *graph);
        doca_error_t doca_graph_stop(struct doca_graph *graph);
        doca_error_t doca_graph_instance_create(const struct doca_graph *graph, struct doca_graph_instance **graph_instance);
        doca_error_t doca_graph_instance_destroy(struct doca_graph_instance *graph_instance);
        doca_error_t doca_graph_instance_set_user_data(struct doca_graph_instance *graph_instance, union doca_data user_data);
        doca_error_t doca_graph_instance_get_user_data(const struct doca_graph_instance *graph_instance, union doca_data *user_data);
        doca_error_t doca_graph_instance_set_ctx_node_data(struct doca_graph_instance *graph_instance, struct doca_graph_node *node, struct doca_task *task);
        doca_error_t doca_graph_instance_set_user_node_data(struct doca_graph_instance *graph_instance, struct doca_graph_node *node, void *cookie);
        doca_error_t doca_graph_instance_set_sub_graph_node_data(struct doca_graph_instance *graph_instance, struct doca_graph_node *node, struct doca_graph_instance *sub_graph_instance);
        doca_error_t doca_graph_instance_submit(struct doca_graph_instance *graph_instance);
    """,
}
TABLES = {"doca_mmap_advise.h": MMAP_ADVISE, "doca_rdma_bridge.h": RDMA_BRIDGE, "doca_graph.h": GRAPH}
# The callback typedefs of these headers (every other ``*_cb_t`` is a task completion callback).
CALLBACKS = {"doca_graph_completion_cb_t": GraphCompletionCb, "doca_graph_user_node_cb_t": GraphUserNodeCb}


def _ctype(text: str) -> Any:
    """The ctypes type of one C parameter or return type, by this project's conventions."""
    t = re.sub(r"\b(const|struct|union)\b", "", text).strip()
    t = re.sub(r"\s+\w+$", "", t) if not t.endswith("*") and " " in t else t  # drop the parameter name
    t = re.sub(r"\s*\*\s*\w+$", " *", t).replace(" ", "")  # "doca_dev *dev" -> "doca_dev*"
    if t.endswith("_cb_t"):
        return CALLBACKS.get(t, TaskCompletionCb)
    if t.endswith("**") or t in ("uint64_t*", "uint32_t*", "doca_data*"):
        return {"uint64_t*": ctypes.POINTER(ctypes.c_uint64), "doca_data*": ctypes.POINTER(ctypes.c_uint64),
                "uint32_t*": ctypes.POINTER(ctypes.c_uint32)}.get(t, ctypes.POINTER(ctypes.c_void_p))
    if t.endswith("*"):
        return ctypes.c_void_p
    return {"doca_error_t": ctypes.c_int, "void": None, "uint32_t": ctypes.c_uint32,
            "doca_data": ctypes.c_uint64}[t]


def _signatures(text: str) -> list[tuple[str, Any, list[Any]]]:
    out = []
    for m in re.finditer(r"^\s*(.+?)\b(doca_\w+)\((.*)\);$", text, re.M):
        ret, name, params = m.groups()
        out.append((name, _ctype(ret), [_ctype(p) for p in params.split(",")]))
    return out


@pytest.mark.parametrize("header", sorted(HEADERS))
def test_every_function_is_declared_as_the_header_says(header: str) -> None:
    sigs = _signatures(HEADERS[header])
    assert len(sigs) == HEADERS[header].count(";")
    table = TABLES[header]
    assert [d.name for d in table] == [name for name, _, _ in sigs]  # header order, nothing missing
    for decl, (name, restype, argtypes) in zip(table, sigs):
        assert (decl.restype, list(decl.argtypes)) == (restype, argtypes), name


def test_they_are_libdoca_common_s_beyond_the_inventory() -> None:
    names = {d.name for d in MMAP_ADVISE + RDMA_BRIDGE + GRAPH}
    assert names <= BEYOND_INVENTORY and names <= {d.name for d in COMMON}
    assert capi.tables()["common"] == COMMON


def test_versions_name_the_release_that_has_them() -> None:
    assert {d.since for d in MMAP_ADVISE} == {(2, 8)}
    assert {d.name: d.since for d in RDMA_BRIDGE} == {
        "doca_rdma_bridge_get_dev_pd": None, "doca_rdma_bridge_open_dev_from_pd": None,
        "doca_rdma_bridge_get_buf_mkey": None, "doca_rdma_bridge_get_mmap_mkey_from_pd": (3, 0)}
    assert {d.since for d in GRAPH} == {None} and {d.until for d in GRAPH} == {None}  # 2.6 and 3.x alike
    text = MissingFunction(MMAP_ADVISE[0], "common", (2, 6, 58)).message
    assert "doca_mmap_advise_create is not exported" in text and "from DOCA 2.8" in text


def test_a_2_6_runtime_has_no_mmap_advise(fake26_dir: Path, use_libdir: Any) -> None:
    """The fake 2.6 common exports no doca_mmap_advise.h: the object layer says which versions have it,
    and the capability is simply absent."""
    use_libdir(fake26_dir)
    lib = capi.load_common()
    assert "doca_mmap_advise_create" in lib.missing and "doca_rdma_bridge_get_dev_pd" not in lib.missing
    from doca_py import _backend

    with _backend.use("native"):
        with d.Dev.open_by_pci_addr("03:00.0") as dev:
            assert not d.MmapAdvise.cap_task_cache_invalidate_is_supported(dev.as_devinfo())
            with pytest.raises(d.errors.DocaNotSupported, match=r"doca_mmap_advise_create .* from DOCA 2\.8"):
                d.MmapAdvise(dev)
            assert dev.get_pd()  # doca_rdma_bridge.h is in 2.6
