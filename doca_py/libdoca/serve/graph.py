"""libdoca_common's ``doca_graph`` (``doca_graph.h``, DOCA 2.6 and 3.x) served by the emulator."""

from __future__ import annotations

import ctypes

from ...emulated import graph as emu
from ...emulated.graph import EmuGraph, EmuGraphInstance, EmuGraphNode
from ...emulated.pe import EmuPe
from ...errors import DocaInvalidValue, lookup
from ._core import c_function, forget, handle, impl, obj, out_ptr, out_u64
from .common import ctx_of, task_of

GraphCompletionFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
"""A C ``doca_graph_completion_cb_t`` to call."""
GraphUserNodeFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
"""A C ``doca_graph_user_node_cb_t`` to call."""


def _graph(p: int | None) -> EmuGraph:
    return obj(p, EmuGraph, "doca_graph")


def _node(p: int | None) -> EmuGraphNode:
    return obj(p, EmuGraphNode, "doca_graph_node")


def _inst(p: int | None) -> EmuGraphInstance:
    return obj(p, EmuGraphInstance, "doca_graph_instance")


@impl("doca_graph_create")
def _create(pe: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("doca_graph_create: NULL output pointer")
    out_ptr(out, handle(emu.graph_create(obj(pe, EmuPe, "doca_pe"))))


@impl("doca_graph_destroy")
def _destroy(p: int | None) -> None:
    g = _graph(p)
    g.destroy()
    for n in g.nodes:
        forget(n)
    forget(g)


@impl("doca_graph_set_conf")
def _set_conf(p: int | None, ok_cb: int | None, err_cb: int | None, num: int) -> None:
    g = _graph(p)
    ok = c_function(GraphCompletionFn, ok_cb)
    err = c_function(GraphCompletionFn, err_cb)
    if ok is None or err is None:
        raise DocaInvalidValue("doca_graph_set_conf needs a completion and an error callback")

    def success(inst: object) -> None:
        assert isinstance(inst, EmuGraphInstance)
        ok(handle(inst), inst.user_data, g.user_data)

    def error(inst: object) -> None:
        assert isinstance(inst, EmuGraphInstance)
        err(handle(inst), inst.user_data, g.user_data)

    g.set_conf(success, error, num)


@impl("doca_graph_set_user_data")
def _set_user_data(p: int | None, data: int) -> None:
    _graph(p).set_user_data(data)


@impl("doca_graph_get_user_data")
def _get_user_data(p: int | None, out: int | None) -> None:
    out_u64(out, _graph(p).user_data)


@impl("doca_graph_node_create_from_ctx")
def _node_from_ctx(p: int | None, ctx: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("doca_graph_node_create_from_ctx: NULL output pointer")
    out_ptr(out, handle(_graph(p).node_create_from_ctx(ctx_of(ctx))))


@impl("doca_graph_node_create_from_user")
def _node_from_user(p: int | None, cb: int | None, out: int | None) -> None:
    fn = c_function(GraphUserNodeFn, cb)
    if fn is None or not out:
        raise DocaInvalidValue("doca_graph_node_create_from_user: NULL callback or output pointer")

    def run(cookie: object) -> None:
        rc = int(fn(cookie))
        if rc:
            raise lookup(rc)("the user node callback failed", code=rc)

    out_ptr(out, handle(_graph(p).node_create_from_user(run)))


@impl("doca_graph_node_create_from_graph")
def _node_from_graph(p: int | None, sub: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("doca_graph_node_create_from_graph: NULL output pointer")
    out_ptr(out, handle(_graph(p).node_create_from_graph(_graph(sub))))


@impl("doca_graph_add_dependency")
def _add_dependency(p: int | None, src: int | None, dst: int | None) -> None:
    _graph(p).add_dependency(_node(src), _node(dst))


@impl("doca_graph_start")
def _start(p: int | None) -> None:
    _graph(p).start()


@impl("doca_graph_stop")
def _stop(p: int | None) -> None:
    _graph(p).stop()


@impl("doca_graph_instance_create")
def _instance_create(p: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("doca_graph_instance_create: NULL output pointer")
    inst = _graph(p).instance_create()
    assert isinstance(inst, EmuGraphInstance)
    inst.owner = inst  # the graph's callbacks get the instance: its handle and user data go to C
    out_ptr(out, handle(inst))


@impl("doca_graph_instance_destroy")
def _instance_destroy(p: int | None) -> None:
    inst = _inst(p)
    inst.destroy()
    forget(inst)


@impl("doca_graph_instance_set_user_data")
def _instance_set_user_data(p: int | None, data: int) -> None:
    _inst(p).set_user_data(data)


@impl("doca_graph_instance_get_user_data")
def _instance_get_user_data(p: int | None, out: int | None) -> None:
    out_u64(out, _inst(p).user_data)


@impl("doca_graph_instance_set_ctx_node_data")
def _set_ctx_node_data(p: int | None, node: int | None, task: int | None) -> None:
    _inst(p).set_ctx_node_data(_node(node), task_of(task))


@impl("doca_graph_instance_set_user_node_data")
def _set_user_node_data(p: int | None, node: int | None, cookie: int | None) -> None:
    _inst(p).set_user_node_data(_node(node), cookie)


@impl("doca_graph_instance_set_sub_graph_node_data")
def _set_sub_graph_node_data(p: int | None, node: int | None, sub: int | None) -> None:
    _inst(p).set_sub_graph_node_data(_node(node), _inst(sub))


@impl("doca_graph_instance_submit")
def _submit(p: int | None) -> None:
    _inst(p).submit()
