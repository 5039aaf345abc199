"""``doca_graph``: run tasks of any ctx and Python callables in dependency order, as one unit of work.

```pycon
>>> graph = Graph(pe)
>>> copy = graph.node_create_from_ctx(dma)                 # a ctx node: one task of dma per instance
>>> check = graph.node_create_from_user(verify)             # a user node: verify(cookie), in progress()
>>> graph.add_dependency(copy, check)                      # check starts once copy completed
>>> graph.set_conf(on_done, on_error, num_instances=4)
>>> graph.start()                                          # dma must be running
>>> inst = graph.instance_create()
>>> inst.set_ctx_node_data(copy, dma.task_memcpy_alloc_init(src, dst))
>>> inst.set_user_node_data(check, cookie)
>>> inst.submit()                                          # on_done(inst, inst_user_data, graph_user_data)

```

A graph is built and configured while stopped and frozen by [`start`][doca_py.graph.Graph.start]; an
[instance][doca_py.graph.GraphInstance] holds the data of each node (a task, a cookie, a sub graph's
instance) and is submitted as often as wanted, one run at a time. A node starts when every node it depends
on completed; the tasks of ctx nodes run without their own completion callbacks. A failed node (a task
that fails, a user callback that raises [`DocaError`][doca_py.errors.DocaError]) fails the run: no further
node starts and the graph's *error* callback runs once the nodes in flight completed. Callbacks run inside
[`Pe.progress`][doca_py.pe.Pe.progress]. ``doca_graph.h`` is the same in DOCA 2.6 and 3.x (every function
experimental).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._args import expect, wrong_type
from ._backend import backend
from ._backend.protocols.graph import GraphHandle, GraphInstanceHandle, GraphNodeHandle
from ._lifetime import DocaObject
from .ctx import Ctx, Task
from .errors import DocaError, DocaTimeout, DocaUsageError
from .pe import Pe

__all__ = ["Graph", "GraphCallback", "GraphInstance", "GraphNode", "UserNodeCallback"]

GraphCallback = Callable[["GraphInstance", Any, Any], None]
"""``cb(instance, instance_user_data, graph_user_data)``, as ``doca_graph_completion_cb_t``."""

UserNodeCallback = Callable[[Any], None]
"""``cb(cookie)``, as ``doca_graph_user_node_cb_t``: return to complete the node, raise a
[`DocaError`][doca_py.errors.DocaError] to fail it with its code (any other exception fails it with
``UNEXPECTED`` and leaves ``Pe.progress()``)."""

#: How long closing an instance in flight progresses its Pe for the run to end.
CLOSE_TIMEOUT = 10.0


class GraphNode:
    """``doca_graph_node``: a node of one [`Graph`][doca_py.graph.Graph] (``kind``: ``"ctx"``, ``"user"`` or
    ``"sub graph"``). DOCA owns nodes: they live as long as their graph, with no destroy of their own."""

    __slots__ = ("_h", "graph", "kind", "target")

    def __init__(self, h: GraphNodeHandle, graph: Graph, kind: str, target: object) -> None:
        self._h = h
        self.graph = graph
        """The graph the node belongs to."""
        self.kind = kind
        """``"ctx"``, ``"user"`` or ``"sub graph"``."""
        self.target = target
        """The node's ctx, user callback or sub graph."""

    def __repr__(self) -> str:
        return f"<GraphNode {self.kind} of {type(self.target).__name__}>"


class Graph(DocaObject):
    """``doca_graph`` on *pe*: closed with the Pe; closing it destroys its instances first, then stops it.

    ``user_data`` is the ``graph_user_data`` the callbacks receive (``doca_graph_set_user_data``)."""

    def __init__(self, pe: Pe, user_data: Any = None) -> None:
        """``doca_graph_create``: an empty, stopped graph bound to *pe*."""
        super().__init__()
        expect("Graph", Pe, pe=pe)
        pe._check_open()
        self._h: GraphHandle = backend.graph.graph_create(pe._h)
        self._pe = pe
        self._user_data: Any = None
        self._started = False
        self._nodes: list[GraphNode] = []
        self._arm_finalizer(_destroyer(self._h))
        pe._adopt(self)
        if user_data is not None:
            self.set_user_data(user_data)

    @property
    def pe(self) -> Pe:
        """Python-only: the Pe the graph was created on."""
        return self._pe

    @property
    def nodes(self) -> tuple[GraphNode, ...]:
        """Python-only: the nodes, in creation order."""
        return tuple(self._nodes)

    def set_conf(self, completion: GraphCallback, error: GraphCallback, num_instances: int) -> None:
        """``doca_graph_set_conf``: the callbacks of a run that completed and of one that failed, and how many
        instances the graph may have (before [`start`][doca_py.graph.Graph.start])."""
        self._check_open()
        if not (callable(completion) and callable(error)):
            raise wrong_type("Graph.set_conf", Callable, completion=completion, error=error)
        if not isinstance(num_instances, int) or isinstance(num_instances, bool):
            raise wrong_type("Graph.set_conf", int, num_instances=num_instances)

        def done(cb: GraphCallback) -> Callable[[object], None]:
            def call(inst: Any) -> None:
                cb(inst, inst._user_data, self._user_data)
            return call

        self._h.set_conf(done(completion), done(error), num_instances)

    def set_user_data(self, user_data: Any) -> None:
        """``doca_graph_set_user_data``: *user_data* becomes the callbacks' ``graph_user_data`` (before start)."""
        self._check_open()
        self._h.set_user_data(id(user_data))
        self._user_data = user_data

    def get_user_data(self) -> Any:
        """``doca_graph_get_user_data``: the graph's user data (``None`` when never set)."""
        return self._user_data

    def _node(self, h: GraphNodeHandle, kind: str, target: object) -> GraphNode:
        node = GraphNode(h, self, kind, target)
        self._nodes.append(node)
        return node

    def node_create_from_ctx(self, ctx: Ctx) -> GraphNode:
        """``doca_graph_node_create_from_ctx``: a node running one task of *ctx* per run (any library's ctx)."""
        self._check_open()
        expect("Graph.node_create_from_ctx", Ctx, ctx=ctx)
        ctx._check_open()
        return self._node(self._h.node_create_from_ctx(ctx._ctx_h), "ctx", ctx)

    def node_create_from_user(self, cb: UserNodeCallback) -> GraphNode:
        """``doca_graph_node_create_from_user``: a node running ``cb(cookie)`` inside ``Pe.progress()``, the
        cookie being the instance's (``GraphInstance.set_user_node_data``)."""
        self._check_open()
        if not callable(cb):
            raise wrong_type("Graph.node_create_from_user", Callable, cb=cb)
        return self._node(self._h.node_create_from_user(cb), "user", cb)

    def node_create_from_graph(self, sub_graph: Graph) -> GraphNode:
        """``doca_graph_node_create_from_graph``: a node running an instance of the started *sub_graph*."""
        self._check_open()
        expect("Graph.node_create_from_graph", Graph, sub_graph=sub_graph)
        sub_graph._check_open()
        return self._node(self._h.node_create_from_graph(sub_graph._h), "sub graph", sub_graph)

    def _own(self, where: str, node: object) -> GraphNode:
        if not isinstance(node, GraphNode):
            raise wrong_type(where, GraphNode, node=node)
        return node

    def add_dependency(self, from_node: GraphNode, to_node: GraphNode) -> None:
        """``doca_graph_add_dependency``: *to_node* starts only after *from_node* completed
        (``DocaNotPermitted`` when that closes a circle)."""
        self._check_open()
        a = self._own("Graph.add_dependency", from_node)
        b = self._own("Graph.add_dependency", to_node)
        self._h.add_dependency(a._h, b._h)

    def start(self) -> None:
        """``doca_graph_start``: validate and freeze the graph (it needs a ctx node, and every ctx node's ctx
        running); instances can be created from then on."""
        self._check_open()
        self._h.start()
        self._started = True

    def stop(self) -> None:
        """``doca_graph_stop``: back to building (``DocaInUse`` while an instance is not destroyed)."""
        self._check_open()
        self._h.stop()
        self._started = False

    def instance_create(self, user_data: Any = None) -> GraphInstance:
        """``doca_graph_instance_create``: a new instance of the started graph, with *user_data* as its
        ``instance_user_data`` (``DocaNoMemory`` beyond ``set_conf``'s *num_instances*)."""
        self._check_open()
        inst = GraphInstance(self, self._h.instance_create())
        if user_data is not None:
            inst.set_user_data(user_data)
        return inst

    def _close(self) -> None:
        if self._started:
            self._h.stop()
            self._started = False
        self._h.destroy()

    def _repr_facts(self) -> list[str]:
        return [f"nodes={len(self._nodes)}", "started" if self._started else "stopped", *super()._repr_facts()]

    def __enter__(self) -> Graph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class GraphInstance(DocaObject):
    """``doca_graph_instance``: the data of one run of a [`Graph`][doca_py.graph.Graph]; made by
    [`Graph.instance_create`][doca_py.graph.Graph.instance_create], closed with its graph."""

    def __init__(self, graph: Graph, h: GraphInstanceHandle) -> None:
        super().__init__()
        self._h = h
        h.owner = self
        self._graph = graph
        self._user_data: Any = None
        self._data: dict[int, object] = {}  # node -> task, cookie or sub instance: alive while set
        graph._adopt(self)

    @property
    def graph(self) -> Graph:
        """Python-only: the graph that created the instance."""
        return self._graph

    @property
    def inflight(self) -> bool:
        """Python-only: submitted, and the graph's callback for the run has not started yet."""
        return self._h.inflight

    def set_user_data(self, user_data: Any) -> None:
        """``doca_graph_instance_set_user_data``: the ``instance_user_data`` of the graph's callbacks
        (``DocaInUse`` while in flight)."""
        self._check_open()
        self._h.set_user_data(id(user_data))
        self._user_data = user_data

    def get_user_data(self) -> Any:
        """``doca_graph_instance_get_user_data``: the instance's user data (``None`` when never set)."""
        return self._user_data

    def _node(self, where: str, node: object) -> GraphNode:
        self._check_open()
        if not isinstance(node, GraphNode):
            raise wrong_type(where, GraphNode, node=node)
        return node

    def set_ctx_node_data(self, node: GraphNode, task: Task) -> None:
        """``doca_graph_instance_set_ctx_node_data``: the task the ctx *node* runs, a task of the node's ctx
        (``DocaNotPermitted`` otherwise). Its own completion callbacks do not run in a graph; it must stay
        allocated while the instance may run."""
        n = self._node("GraphInstance.set_ctx_node_data", node)
        if not isinstance(task, Task):
            raise wrong_type("GraphInstance.set_ctx_node_data", Task, task=task)
        if not task._allocated:
            raise DocaUsageError("GraphInstance.set_ctx_node_data: the task was freed")
        self._h.set_ctx_node_data(n._h, task._h)
        self._data[id(n)] = task

    def set_user_node_data(self, node: GraphNode, cookie: Any) -> None:
        """``doca_graph_instance_set_user_node_data``: the *cookie* the user *node*'s callback receives."""
        n = self._node("GraphInstance.set_user_node_data", node)
        self._h.set_user_node_data(n._h, cookie)
        self._data[id(n)] = cookie

    def set_sub_graph_node_data(self, node: GraphNode, sub_instance: GraphInstance) -> None:
        """``doca_graph_instance_set_sub_graph_node_data``: the instance (of the node's sub graph, not in
        flight) the sub graph *node* runs."""
        n = self._node("GraphInstance.set_sub_graph_node_data", node)
        expect("GraphInstance.set_sub_graph_node_data", GraphInstance, sub_instance=sub_instance)
        sub_instance._check_open()
        self._h.set_sub_graph_node_data(n._h, sub_instance._h)
        self._data[id(n)] = sub_instance
        # DOCA refuses to destroy an instance that is a sub graph node's data: closing it closes this one first.
        sub_instance._adopt(self)

    def submit(self) -> None:
        """``doca_graph_instance_submit``: start the root nodes; the graph's completion or error callback ends
        the run (``DocaInUse`` while the previous run is in flight)."""
        self._check_open()
        self._h.submit()

    def _close(self) -> None:
        if self._h.inflight:
            self._drain()
        self._h.destroy()

    def _drain(self) -> None:
        """Progress the graph's Pe until the run ends (a submitted run cannot be aborted)."""
        pe = self._graph._pe
        if pe.closed:
            raise DocaUsageError("cannot close a graph instance in flight: its Pe is closed")
        deadline = time.monotonic() + CLOSE_TIMEOUT
        while self._h.inflight:
            if not pe.progress():
                if time.monotonic() > deadline:
                    raise DocaTimeout(f"the graph instance did not complete within {CLOSE_TIMEOUT} s while closing")
                pe.wait(0.05)

    def _repr_facts(self) -> list[str]:
        return ["in flight" if self._h.inflight else "idle", *super()._repr_facts()]

    def __enter__(self) -> GraphInstance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _destroyer(h: Any) -> Callable[[], None]:
    """What a collected graph or instance runs: destroy it (a started graph is stopped first)."""

    def release() -> None:
        try:
            if hasattr(h, "started") and getattr(h, "started"):
                h.stop()
            h.destroy()
        except DocaError:
            pass

    return release

