"""Emulated ``doca_graph`` (``doca_graph.h``): nodes run on the graph's progress engine in dependency order.

What DOCA documents, and what this module does:

* A graph is created on a Pe, configured (``set_conf``: the completion and error callbacks and how many
  instances it may have) and built (nodes, dependencies) while stopped; ``start`` checks it has a ctx node
  and that every ctx node's ctx runs, and freezes it. Changing a started graph is ``DOCA_ERROR_BAD_STATE``
  (strict mode: a finding naming the rule). A dependency that closes a circle is ``NOT_PERMITTED``.
* An instance holds one datum per node (a task of the node's ctx, a user node's cookie, a sub graph's
  instance). ``submit`` starts the root nodes; a node starts once every node it depends on completed. A ctx
  node's task runs on its ctx as if submitted, but its own callbacks are not invoked (DOCA: "Task callbacks
  are not invoked when used in a graph"). A user node's function runs inside ``progress()``.
* A failed node fails the instance: no further node starts, and once the nodes in flight have completed the
  graph's error callback runs; otherwise its completion callback runs after the last node. Either way the
  instance can be submitted again (from the callback too). Submitting an instance in flight is
  ``DOCA_ERROR_IN_USE`` (strict mode: a finding).
* ``stop`` needs every instance destroyed (``IN_USE``), ``destroy`` a stopped graph (``BAD_STATE``), an
  instance's ``destroy`` an instance not in flight (``IN_USE``).

DOCA 2.6 and 3.x have the same ``doca_graph.h``: no version mode refuses any of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._backend.protocols.core import CtxHandle, PeHandle, TaskHandle
from .._backend.protocols.graph import GraphHandle, GraphInstanceHandle, GraphNodeHandle, RunDone, UserNodeFn
from ..errors import (DocaBadState, DocaError, DocaInUse, DocaInvalidValue, DocaNoMemory, DocaNotPermitted,
                      ErrorCode)
from . import strict
from .ctx import EmuCtx
from .pe import EmuPe
from .task import EmuTask

__all__ = ["EmuGraph", "EmuGraphInstance", "EmuGraphNode", "graph_create"]

_RUNNING = 2  # CtxState.RUNNING
_UNEXPECTED = int(ErrorCode.UNEXPECTED)
CTX, USER, SUB = "ctx", "user", "sub graph"


class EmuGraphNode:
    """``doca_graph_node``: a ctx, user or sub graph node of one graph."""

    __slots__ = ("graph", "index", "kind", "ctx", "fn", "sub", "after", "n_before")

    def __init__(self, graph: EmuGraph, kind: str, ctx: EmuCtx | None = None, fn: UserNodeFn | None = None,
                 sub: EmuGraph | None = None) -> None:
        self.graph = graph
        self.index = len(graph.nodes)
        self.kind = kind
        self.ctx = ctx
        self.fn = fn
        self.sub = sub
        self.after: list[int] = []  # the nodes that depend on this one
        self.n_before = 0  # how many nodes this one depends on (0: a root)

    def __repr__(self) -> str:
        return f"<graph node {self.index} ({self.kind})>"


class EmuGraph:
    """Emulated ``doca_graph``."""

    def __init__(self, pe: EmuPe) -> None:
        self.pe = pe
        self.nodes: list[EmuGraphNode] = []
        self.started = False
        self.success: RunDone | None = None
        self.error: RunDone | None = None
        self.num_instances = 0
        self.instances: list[EmuGraphInstance] = []
        self.user_data = 0
        self.destroyed = False

    def __repr__(self) -> str:
        return f"<EmuGraph {len(self.nodes)} nodes {'started' if self.started else 'stopped'}>"

    def _changeable(self, fn: str) -> None:
        if self.destroyed:
            raise DocaInvalidValue(f"{fn}: the graph was destroyed")
        if self.started:
            if strict.STRICT:
                raise strict.violation(self, f"{fn} on a started graph; a graph is built and configured before "
                                             f"doca_graph_start (stop it, after destroying its instances, to "
                                             f"change it)")
            raise DocaBadState(f"{fn}: the graph is started")

    def set_conf(self, completion: RunDone, error: RunDone, num_instances: int) -> None:
        self._changeable("doca_graph_set_conf")
        if num_instances <= 0:
            raise DocaInvalidValue("doca_graph_set_conf: num_instances must be positive")
        self.success, self.error, self.num_instances = completion, error, num_instances

    def set_user_data(self, data: int) -> None:
        self._changeable("doca_graph_set_user_data")
        self.user_data = data

    def _add(self, node: EmuGraphNode) -> EmuGraphNode:
        self.nodes.append(node)
        return node

    def node_create_from_ctx(self, ctx: CtxHandle) -> GraphNodeHandle:
        self._changeable("doca_graph_node_create_from_ctx")
        if not isinstance(ctx, EmuCtx):
            raise DocaInvalidValue("doca_graph_node_create_from_ctx: not a ctx of this backend")
        return self._add(EmuGraphNode(self, CTX, ctx=ctx))

    def node_create_from_user(self, fn: UserNodeFn) -> GraphNodeHandle:
        self._changeable("doca_graph_node_create_from_user")
        if not callable(fn):
            raise DocaInvalidValue("doca_graph_node_create_from_user: the callback is not callable")
        return self._add(EmuGraphNode(self, USER, fn=fn))

    def node_create_from_graph(self, sub: GraphHandle) -> GraphNodeHandle:
        self._changeable("doca_graph_node_create_from_graph")
        if not isinstance(sub, EmuGraph) or sub.destroyed:
            raise DocaInvalidValue("doca_graph_node_create_from_graph: not a live graph of this backend")
        if sub is self or sub._contains(self):
            raise DocaNotPermitted("doca_graph_node_create_from_graph: the sub graph forms a circle with the graph")
        if not sub.started:
            raise DocaBadState("doca_graph_node_create_from_graph: the sub graph is not started")
        return self._add(EmuGraphNode(self, SUB, sub=sub))

    def _contains(self, other: EmuGraph) -> bool:
        return any(n.sub is other or (n.sub is not None and n.sub._contains(other)) for n in self.nodes)

    def _node(self, node: object, fn: str) -> EmuGraphNode:
        if not isinstance(node, EmuGraphNode) or node.graph is not self:
            raise DocaInvalidValue(f"{fn}: the node is not a node of this graph")
        return node

    def add_dependency(self, src: GraphNodeHandle, dst: GraphNodeHandle) -> None:
        fn = "doca_graph_add_dependency"
        self._changeable(fn)
        a, b = self._node(src, fn), self._node(dst, fn)
        if b.index in a.after:
            return
        if a is b or self._reaches(b.index, a.index):
            raise DocaNotPermitted(f"{fn}: {a!r} -> {b!r} forms a circle in the graph")
        a.after.append(b.index)
        b.n_before += 1

    def _reaches(self, start: int, goal: int) -> bool:
        seen, todo = set(), [start]
        while todo:
            i = todo.pop()
            if i == goal:
                return True
            if i not in seen:
                seen.add(i)
                todo.extend(self.nodes[i].after)
        return False

    def start(self) -> None:
        if self.destroyed:
            raise DocaInvalidValue("doca_graph_start: the graph was destroyed")
        if self.started:
            return  # "DOCA_SUCCESS - in case of success or if the graph is already started"
        if self.success is None or self.error is None:
            raise DocaBadState("doca_graph_start: configure the graph (doca_graph_set_conf) before starting it")
        ctxs = [n for n in self.nodes if n.kind == CTX]
        if not ctxs:
            raise DocaBadState("doca_graph_start: a graph must contain at least one ctx node")
        for n in ctxs:
            assert n.ctx is not None
            if n.ctx.state != _RUNNING:
                raise DocaBadState(f"doca_graph_start: the ctx of {n!r} is not started (a graph starts only once "
                                   f"the ctxs of its ctx nodes run)")
        self.started = True

    def stop(self) -> None:
        if self.instances:
            raise DocaInUse(f"doca_graph_stop: {len(self.instances)} instance(s) of the graph are not destroyed")
        self.started = False

    def instance_create(self) -> GraphInstanceHandle:
        if not self.started:
            raise DocaBadState("doca_graph_instance_create: the graph is not started")
        if len(self.instances) >= self.num_instances:
            raise DocaNoMemory(f"doca_graph_instance_create: the graph has its {self.num_instances} instance(s) "
                               f"(doca_graph_set_conf's num_instances)")
        inst = EmuGraphInstance(self)
        self.instances.append(inst)
        return inst

    def destroy(self) -> None:
        if self.started:
            raise DocaBadState("doca_graph_destroy: the graph is not stopped")
        self.destroyed = True


class _NodeRoute:
    """A ctx node's task while it runs in a graph: its completion goes to the instance instead of the task's
    callbacks (DOCA calls no task callback in a graph), which are put back when it comes."""

    __slots__ = ("task", "run", "index", "success", "error")

    def __init__(self, task: EmuTask, run: EmuGraphInstance, index: int) -> None:
        self.task = task
        self.run = run
        self.index = index
        self.success, self.error = task.on_success, task.on_error
        task.on_success = task.on_error = self._done

    def _done(self, owner: object, task_user_data: object, ctx_user_data: object) -> None:
        task = self.task
        task.on_success, task.on_error = self.success, self.error
        self.run._node_done(self.index, task.status)


class EmuGraphInstance:
    """Emulated ``doca_graph_instance``."""

    def __init__(self, graph: EmuGraph) -> None:
        self.graph = graph
        self.owner: object = None
        self.user_data = 0
        self.data: list[Any] = [None] * len(graph.nodes)
        self.inflight = False
        self.destroyed = False
        self.parent: tuple[EmuGraphInstance, int] | None = None  # run as a sub graph node's data
        self.used_by: EmuGraphInstance | None = None
        self._waiting: list[int] = []
        self._running = 0
        self._finished = 0
        self.status = 0
        #: Python-only: which node failed the last run and why ("" when it succeeded).
        self.reason = ""

    def __repr__(self) -> str:
        return f"<EmuGraphInstance of {len(self.data)} nodes{' in flight' if self.inflight else ''}>"

    def _settable(self, fn: str, node: object, kind: str) -> EmuGraphNode:
        if self.destroyed:
            raise DocaInvalidValue(f"{fn}: the instance was destroyed")
        if not isinstance(node, EmuGraphNode) or node.graph is not self.graph:
            raise DocaNotPermitted(f"{fn}: the node does not belong to the graph that created the instance")
        if node.kind != kind:
            raise DocaNotPermitted(f"{fn}: {node!r} is not a {kind} node")
        if self.inflight:
            raise DocaBadState(f"{fn}: the instance is submitted")
        return node

    def set_user_data(self, data: int) -> None:
        if self.inflight:
            raise DocaInUse("doca_graph_instance_set_user_data: the instance is submitted")
        self.user_data = data

    def set_ctx_node_data(self, node: GraphNodeHandle, task: TaskHandle) -> None:
        fn = "doca_graph_instance_set_ctx_node_data"
        n = self._settable(fn, node, CTX)
        if not isinstance(task, EmuTask) or task.ctx is not n.ctx:
            raise DocaNotPermitted(f"{fn}: the task is not a task of the node's ctx")
        self.data[n.index] = task

    def set_user_node_data(self, node: GraphNodeHandle, cookie: object) -> None:
        n = self._settable("doca_graph_instance_set_user_node_data", node, USER)
        self.data[n.index] = cookie

    def set_sub_graph_node_data(self, node: GraphNodeHandle, sub: GraphInstanceHandle) -> None:
        fn = "doca_graph_instance_set_sub_graph_node_data"
        n = self._settable(fn, node, SUB)
        if not isinstance(sub, EmuGraphInstance) or sub.graph is not n.sub or sub.destroyed:
            raise DocaNotPermitted(f"{fn}: the instance was not created by the node's sub graph")
        if sub.inflight:
            raise DocaNotPermitted(f"{fn}: the sub graph instance is submitted")
        old = self.data[n.index]
        if isinstance(old, EmuGraphInstance):
            old.used_by = None
        sub.used_by = self
        self.data[n.index] = sub

    # -- a run ---------------------------------------------------------------------------------------

    def _check_ready(self) -> None:
        for node, datum in zip(self.graph.nodes, self.data):
            if node.kind == USER:
                continue  # a user node's cookie may be NULL
            if datum is None:
                raise DocaInvalidValue(f"doca_graph_instance_submit: {node!r} has no data "
                                       f"(doca_graph_instance_set_{'ctx' if node.kind == CTX else 'sub_graph'}"
                                       f"_node_data)")
            if node.kind == CTX:
                if not datum.allocated:
                    raise DocaInvalidValue(f"doca_graph_instance_submit: the task of {node!r} was freed")
                if datum.inflight:
                    raise DocaInUse(f"doca_graph_instance_submit: the task of {node!r} is in flight")
            else:
                datum._check_submittable()

    def _check_submittable(self) -> None:
        if self.destroyed:
            raise DocaInvalidValue("doca_graph_instance_submit: the instance was destroyed")
        if self.inflight:
            if strict.STRICT:
                raise strict.violation(self, "a graph instance was submitted while in flight; DOCA owns it until "
                                             "its graph's completion or error callback starts")
            raise DocaInUse("doca_graph_instance_submit: the instance is already submitted")
        self._check_ready()

    def submit(self) -> None:
        self._check_submittable()
        self._begin()

    def _begin(self) -> None:
        nodes = self.graph.nodes
        self._waiting = [n.n_before for n in nodes]
        self._running = self._finished = 0
        self.status = 0
        self.reason = ""
        self.inflight = True
        for n in nodes:
            if n.n_before == 0:
                try:
                    self._start(n.index)
                except DocaError as exc:
                    self._fail(n.index, exc.code, exc.detail)
                    if self._running == 0:
                        self.inflight = False
                        raise
                    return

    def _start(self, i: int) -> None:
        node = self.graph.nodes[i]
        datum = self.data[i]
        self._running += 1
        try:
            if node.kind == CTX:
                task: EmuTask = datum
                route = _NodeRoute(task, self, i)  # before the submit: a task may complete within it
                try:
                    task.submit()
                except BaseException:
                    task.on_success, task.on_error = route.success, route.error
                    raise
            elif node.kind == USER:
                self.graph.pe.post(self._run_user, i)
            else:
                sub: EmuGraphInstance = datum
                sub.parent = (self, i)
                sub._begin()
        except BaseException:
            self._running -= 1
            raise

    def _run_user(self, i: int) -> None:
        fn = self.graph.nodes[i].fn
        assert fn is not None
        try:
            fn(self.data[i])
        except DocaError as exc:
            self._node_done(i, exc.code, exc.detail or "its user callback failed")
        except BaseException as exc:
            self._node_done(i, _UNEXPECTED, f"its user callback raised {exc!r}")
            raise
        else:
            self._node_done(i, 0)

    def _fail(self, i: int, status: int, why: str) -> None:
        if not self.status:
            self.status = status or _UNEXPECTED
            name = ErrorCode(self.status).name
            self.reason = f"{self.graph.nodes[i]!r} failed with {name}" + (f": {why}" if why else "")

    def _node_done(self, i: int, status: int, why: str = "") -> None:
        self._running -= 1
        self._finished += 1
        if status:
            if not why and self.graph.nodes[i].kind == CTX:
                why = self.data[i].reason
            self._fail(i, status, why)
        elif not self.status:
            for j in self.graph.nodes[i].after:
                self._waiting[j] -= 1
                if self._waiting[j] == 0:
                    try:
                        self._start(j)
                    except DocaError as exc:
                        self._fail(j, exc.code, exc.detail)
        if self._running == 0 and (self.status or self._finished == len(self.data)):
            self._finish()

    def _finish(self) -> None:
        self.inflight = False
        parent = self.parent
        if parent is not None:  # a sub graph node's run: its node completes, the sub graph's callbacks do not run
            self.parent = None
            run, i = parent
            run._node_done(i, self.status, self.reason)
            return
        graph = self.graph
        cb: Callable[[object], None] | None = graph.error if self.status else graph.success
        assert cb is not None  # start needs set_conf
        cb(self.owner)

    def destroy(self) -> None:
        if self.inflight:
            raise DocaInUse("doca_graph_instance_destroy: the instance is submitted")
        if self.used_by is not None and not self.used_by.destroyed:
            raise DocaInUse("doca_graph_instance_destroy: the instance is a sub graph node's data")
        for datum in self.data:
            if isinstance(datum, EmuGraphInstance):
                datum.used_by = None
        self.destroyed = True
        if self in self.graph.instances:
            self.graph.instances.remove(self)


def graph_create(pe: PeHandle) -> EmuGraph:
    """``doca_graph_create`` on an emulated Pe."""
    if not isinstance(pe, EmuPe):
        raise DocaInvalidValue("doca_graph_create: not a progress engine of this backend")
    return EmuGraph(pe)
