"""Protocols of ``doca_graph`` (``doca_graph.h``, module ``doca_py.<impl>.graph``): a graph of nodes bound to a
progress engine, and its instances."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .core import CtxHandle, PeHandle, TaskHandle

#: A user node's work as a backend calls it: ``fn(cookie)`` inside ``Pe.progress``; a
#: [`DocaError`][doca_py.errors.DocaError] it raises fails the node with its code.
UserNodeFn = Callable[[object], None]
#: What a graph's completion and error callbacks are to a backend: called with the finished instance's owner.
RunDone = Callable[[object], None]


class GraphNodeHandle(Protocol):
    """``doca_graph_node``: owned by its graph (DOCA has no destroy for it)."""


class GraphInstanceHandle(Protocol):
    """``doca_graph_instance``."""

    owner: object
    """The public ``GraphInstance``, what the graph's callbacks receive."""

    @property
    def inflight(self) -> bool:
        """Submitted and its graph callback not run yet."""
    def set_user_data(self, data: int) -> None:
        """``doca_graph_instance_set_user_data``."""
    def set_ctx_node_data(self, node: GraphNodeHandle, task: TaskHandle) -> None:
        """``doca_graph_instance_set_ctx_node_data``."""
    def set_user_node_data(self, node: GraphNodeHandle, cookie: object) -> None:
        """``doca_graph_instance_set_user_node_data``."""
    def set_sub_graph_node_data(self, node: GraphNodeHandle, sub: GraphInstanceHandle) -> None:
        """``doca_graph_instance_set_sub_graph_node_data``."""
    def submit(self) -> None:
        """``doca_graph_instance_submit``."""
    def destroy(self) -> None:
        """``doca_graph_instance_destroy``."""


class GraphHandle(Protocol):
    """``doca_graph`` as a backend implements it."""

    def set_conf(self, completion: RunDone, error: RunDone, num_instances: int) -> None:
        """``doca_graph_set_conf``: the functions receive the finished instance's ``owner``."""
    def set_user_data(self, data: int) -> None:
        """``doca_graph_set_user_data``."""
    def node_create_from_ctx(self, ctx: CtxHandle) -> GraphNodeHandle:
        """``doca_graph_node_create_from_ctx``."""
    def node_create_from_user(self, fn: UserNodeFn) -> GraphNodeHandle:
        """``doca_graph_node_create_from_user``."""
    def node_create_from_graph(self, sub: GraphHandle) -> GraphNodeHandle:
        """``doca_graph_node_create_from_graph``."""
    def add_dependency(self, src: GraphNodeHandle, dst: GraphNodeHandle) -> None:
        """``doca_graph_add_dependency``: *dst* starts after *src* completed."""
    def start(self) -> None:
        """``doca_graph_start``."""
    def stop(self) -> None:
        """``doca_graph_stop``."""
    def instance_create(self) -> GraphInstanceHandle:
        """``doca_graph_instance_create``."""
    def destroy(self) -> None:
        """``doca_graph_destroy``."""


class GraphBackend(Protocol):
    """Module ``doca_py.<impl>.graph``."""

    def graph_create(self, pe: PeHandle) -> GraphHandle:
        """``doca_graph_create``."""
