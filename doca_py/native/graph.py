"""Native ``doca_graph`` (``doca_graph.h``, libdoca_common; the same in DOCA 2.6 and 3.x).

DOCA calls three kinds of C callbacks while ``doca_pe_progress`` runs: a user node's (it must return the
node's ``doca_error_t`` at once, so the Python function runs inside the call), and the graph's completion
and error callbacks (recorded, then run by :meth:`NativePe.progress` after the C call, as task completions
are). User data and cookies crossing C are keys into this module's tables, never Python addresses.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

from .._backend.protocols.core import CtxHandle, PeHandle, TaskHandle
from .._backend.protocols.graph import GraphHandle, GraphInstanceHandle, GraphNodeHandle, RunDone, UserNodeFn
from ..errors import DocaError, DocaInvalidValue, ErrorCode, check
from ._common import lib
from .capi import GraphCompletionCb, GraphUserNodeCb
from .ctx import NativeCtx
from .pe import NativePe

__all__ = ["NativeGraph", "NativeGraphInstance", "NativeGraphNode", "graph_create"]

_UNEXPECTED = int(ErrorCode.UNEXPECTED)
_keys = itertools.count(1)
_graphs: dict[int, NativeGraph] = {}  # graph user data -> graph
_cookies: dict[int, object] = {}  # user node cookie key -> the Python cookie


def _ended(ok: bool) -> Any:
    def trampoline(inst_ptr: int | None, inst_ud: int, graph_ud: int) -> None:
        g = _graphs.get(graph_ud)
        inst = g.instances.get(inst_ptr or 0) if g is not None else None
        if g is not None and inst is not None:
            inst.inflight = False
            g.pending.append((inst, ok))

    return trampoline


#: Registered with every ``doca_graph_set_conf``; alive for the process.
GRAPH_COMPLETION_CB = GraphCompletionCb(_ended(True))
GRAPH_ERROR_CB = GraphCompletionCb(_ended(False))


class NativeGraphNode:
    """``doca_graph_node *`` (owned by its graph)."""

    __slots__ = ("ptr", "graph", "fn")

    def __init__(self, ptr: int | None, graph: NativeGraph, fn: Any = None) -> None:
        self.ptr = ptr
        self.graph = graph
        self.fn = fn  # a user node's GraphUserNodeCb: alive as long as the graph


class NativeGraph:
    """``doca_graph *``."""

    def __init__(self, ptr: int | None, pe: NativePe) -> None:
        self.ptr = ptr
        self.pe = pe
        self.key = next(_keys)
        self.started = False
        self.success: RunDone | None = None
        self.error: RunDone | None = None
        self.instances: dict[int, NativeGraphInstance] = {}
        self.nodes: list[NativeGraphNode] = []
        self.pending: list[tuple[NativeGraphInstance, bool]] = []
        _graphs[self.key] = self
        pe.graphs.append(self)
        # Graph callbacks find the graph by its user data; the public layer's value is kept in Python.
        check(lib().doca_graph_set_user_data(ptr, self.key), "doca_graph_set_user_data")

    def set_conf(self, completion: RunDone, error: RunDone, num_instances: int) -> None:
        check(lib().doca_graph_set_conf(self.ptr, GRAPH_COMPLETION_CB, GRAPH_ERROR_CB, num_instances),
              "doca_graph_set_conf")
        self.success, self.error = completion, error

    def set_user_data(self, data: int) -> None:
        # DOCA's state rule (BAD_STATE once started) with the graph's own key: the callbacks need it.
        check(lib().doca_graph_set_user_data(self.ptr, self.key), "doca_graph_set_user_data")

    def _node(self, rc: int, fn_name: str, out: ctypes.c_void_p, fn: Any = None) -> NativeGraphNode:
        check(rc, fn_name)
        node = NativeGraphNode(out.value, self, fn)
        self.nodes.append(node)
        return node

    def node_create_from_ctx(self, ctx: CtxHandle) -> GraphNodeHandle:
        if not isinstance(ctx, NativeCtx):
            raise DocaInvalidValue("doca_graph_node_create_from_ctx: not a native ctx")
        out = ctypes.c_void_p()
        rc = lib().doca_graph_node_create_from_ctx(self.ptr, ctx.ctx_ptr, ctypes.byref(out))
        return self._node(rc, "doca_graph_node_create_from_ctx", out)

    def node_create_from_user(self, fn: UserNodeFn) -> GraphNodeHandle:
        pe = self.pe

        def run(cookie: int | None) -> int:
            try:
                fn(_cookies.get(cookie or 0))
            except DocaError as exc:
                return exc.code or _UNEXPECTED
            except BaseException as exc:  # noqa: BLE001 - C cannot take it: fail the node, raise it after progress
                pe.raised.append(exc)
                return _UNEXPECTED
            return 0

        cb = GraphUserNodeCb(run)
        out = ctypes.c_void_p()
        rc = lib().doca_graph_node_create_from_user(self.ptr, cb, ctypes.byref(out))
        return self._node(rc, "doca_graph_node_create_from_user", out, cb)

    def node_create_from_graph(self, sub: GraphHandle) -> GraphNodeHandle:
        if not isinstance(sub, NativeGraph):
            raise DocaInvalidValue("doca_graph_node_create_from_graph: not a native graph")
        out = ctypes.c_void_p()
        rc = lib().doca_graph_node_create_from_graph(self.ptr, sub.ptr, ctypes.byref(out))
        return self._node(rc, "doca_graph_node_create_from_graph", out)

    def add_dependency(self, src: GraphNodeHandle, dst: GraphNodeHandle) -> None:
        check(lib().doca_graph_add_dependency(self.ptr, _node_ptr(src), _node_ptr(dst)), "doca_graph_add_dependency")

    def start(self) -> None:
        check(lib().doca_graph_start(self.ptr), "doca_graph_start")
        self.started = True

    def stop(self) -> None:
        check(lib().doca_graph_stop(self.ptr), "doca_graph_stop")
        self.started = False

    def instance_create(self) -> GraphInstanceHandle:
        out = ctypes.c_void_p()
        check(lib().doca_graph_instance_create(self.ptr, ctypes.byref(out)), "doca_graph_instance_create")
        inst = NativeGraphInstance(out.value, self)
        self.instances[out.value or 0] = inst
        return inst

    def dispatch(self) -> None:
        """Run the Python side of the recorded graph callbacks; called by the Pe."""
        pending, self.pending = self.pending, []
        for i, (inst, ok) in enumerate(pending):
            cb = self.success if ok else self.error
            try:
                assert cb is not None  # DOCA calls back only a configured graph
                cb(inst.owner)
            except BaseException:
                self.pending[:0] = pending[i + 1:]
                raise

    def destroy(self) -> None:
        check(lib().doca_graph_destroy(self.ptr), "doca_graph_destroy")
        _graphs.pop(self.key, None)
        if self in self.pe.graphs:
            self.pe.graphs.remove(self)


def _node_ptr(node: GraphNodeHandle) -> int | None:
    if not isinstance(node, NativeGraphNode):
        raise DocaInvalidValue("not a native graph node")
    return node.ptr


class NativeGraphInstance:
    """``doca_graph_instance *``."""

    def __init__(self, ptr: int | None, graph: NativeGraph) -> None:
        self.ptr = ptr
        self.graph = graph
        self.owner: object = None
        self.inflight = False
        self.cookies: dict[int, int] = {}  # node ptr -> cookie key

    def set_user_data(self, data: int) -> None:
        check(lib().doca_graph_instance_set_user_data(self.ptr, data), "doca_graph_instance_set_user_data")

    def set_ctx_node_data(self, node: GraphNodeHandle, task: TaskHandle) -> None:
        task_ptr = getattr(task, "task_ptr", None)
        check(lib().doca_graph_instance_set_ctx_node_data(self.ptr, _node_ptr(node), task_ptr),
              "doca_graph_instance_set_ctx_node_data")

    def set_user_node_data(self, node: GraphNodeHandle, cookie: object) -> None:
        nptr = _node_ptr(node) or 0
        key = next(_keys)
        check(lib().doca_graph_instance_set_user_node_data(self.ptr, nptr, key),
              "doca_graph_instance_set_user_node_data")
        old = self.cookies.get(nptr)
        if old is not None:
            _cookies.pop(old, None)
        self.cookies[nptr] = key
        _cookies[key] = cookie

    def set_sub_graph_node_data(self, node: GraphNodeHandle, sub: GraphInstanceHandle) -> None:
        if not isinstance(sub, NativeGraphInstance):
            raise DocaInvalidValue("doca_graph_instance_set_sub_graph_node_data: not a native graph instance")
        check(lib().doca_graph_instance_set_sub_graph_node_data(self.ptr, _node_ptr(node), sub.ptr),
              "doca_graph_instance_set_sub_graph_node_data")

    def submit(self) -> None:
        check(lib().doca_graph_instance_submit(self.ptr), "doca_graph_instance_submit")
        self.inflight = True

    def destroy(self) -> None:
        check(lib().doca_graph_instance_destroy(self.ptr), "doca_graph_instance_destroy")
        self.graph.instances.pop(self.ptr or 0, None)
        for key in self.cookies.values():
            _cookies.pop(key, None)
        self.cookies.clear()


def graph_create(pe: PeHandle) -> NativeGraph:
    """``doca_graph_create`` on a native Pe."""
    if not isinstance(pe, NativePe):
        raise DocaInvalidValue("doca_graph_create: not a native progress engine")
    out = ctypes.c_void_p()
    check(lib().doca_graph_create(pe.ptr, ctypes.byref(out)), "doca_graph_create")
    return NativeGraph(out.value, pe)
