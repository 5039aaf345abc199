"""Raw declarations of ``doca_graph.h`` (libdoca_common), in header order.

A DOCA graph runs an ordered set of nodes on a progress engine: ctx nodes (a task of a started ctx),
user nodes (a C callback taking a cookie) and sub graph nodes (an instance of another graph). The
2.6.0058 and 3.0.0058 headers declare the same 19 functions with the same signatures (every one
``DOCA_EXPERIMENTAL``), so no row has a version bound; NVIDIA's ``samples/doca_common/graph`` calls 15
of them (not the two ``get_user_data`` getters nor the sub graph pair). The graph's completion and
error callbacks are [`GraphCompletionCb`][doca_py.native.capi.GraphCompletionCb] instances, a user
node's callback a [`GraphUserNodeCb`][doca_py.native.capi.GraphUserNodeCb]. Part of
[`COMMON`][doca_py.native.capi.common.COMMON]: bind them with
[`load_common`][doca_py.native.capi.common.load_common].
"""

from __future__ import annotations

from ctypes import POINTER, c_int, c_uint32, c_uint64, c_void_p
from typing import Any

from ._decl import Decl, GraphCompletionCb, GraphUserNodeCb

__all__ = ["GRAPH"]

ERR = c_int  # doca_error_t
P = c_void_p  # opaque struct doca_x *, void *cookie
OUT = POINTER(c_void_p)  # T ** out-handle
DATA = c_uint64  # union doca_data by value
DATA_P = POINTER(c_uint64)  # union doca_data *
DONE = GraphCompletionCb
USER = GraphUserNodeCb


def _f(name: str, restype: Any, *argtypes: Any, **kw: Any) -> Decl:
    return Decl(name, restype, tuple(argtypes), **kw)


GRAPH: tuple[Decl, ...] = (
    _f("doca_graph_create", ERR, P, OUT),
    _f("doca_graph_destroy", ERR, P),
    _f("doca_graph_set_conf", ERR, P, DONE, DONE, c_uint32),
    _f("doca_graph_set_user_data", ERR, P, DATA),
    _f("doca_graph_get_user_data", ERR, P, DATA_P),
    _f("doca_graph_node_create_from_ctx", ERR, P, P, OUT),
    _f("doca_graph_node_create_from_user", ERR, P, USER, OUT),
    _f("doca_graph_node_create_from_graph", ERR, P, P, OUT),
    _f("doca_graph_add_dependency", ERR, P, P, P),
    _f("doca_graph_start", ERR, P),
    _f("doca_graph_stop", ERR, P),
    _f("doca_graph_instance_create", ERR, P, OUT),
    _f("doca_graph_instance_destroy", ERR, P),
    _f("doca_graph_instance_set_user_data", ERR, P, DATA),
    _f("doca_graph_instance_get_user_data", ERR, P, DATA_P),
    _f("doca_graph_instance_set_ctx_node_data", ERR, P, P, P),
    _f("doca_graph_instance_set_user_node_data", ERR, P, P, P),
    _f("doca_graph_instance_set_sub_graph_node_data", ERR, P, P, P),
    _f("doca_graph_instance_submit", ERR, P),
)
"""Every function of ``doca_graph.h`` (the same in DOCA 2.6 and 3.x)."""
