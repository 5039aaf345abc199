"""Port of the DOCA sample ``samples/doca_common/graph`` (``graph_main.c``, ``graph_sample.c``) to doca_py.

Builds a DOCA graph of two DMA nodes and one user node that depends on both::

        +-----+             +-----+
        | DMA |             | DMA |
        +--+--+             +-----+
           |                   |
           +---------+---------+
                     |
               +-----------+
               | User Node |
               +-----------+

The DMA nodes copy one source to two destinations; the user node (a Python function, the C sample's
``user_node_callback``) checks that both destinations hold the source's bytes. Ten graph instances, each
with its own source (filled with the instance's number plus one, as the C sample's ``memset``), its own two
destinations and DMA tasks, are submitted at once, then the Pe is polled until all ten completed::

    python examples/graph.py

Like the C sample it takes no argument (``graph_main.c`` parses none) and opens the first device with the
DMA memcpy task. Calls follow the C sample: a buffer for every source and destination → the device → an
mmap over the buffer (device added, local read/write, started) → a buffer inventory → a Pe → two DMA ctxs
(connected, one task per instance each; their task callbacks never run, as tasks in a graph report to the
graph) → both started → the graph (the user node, then each DMA node with its dependency, ``set_conf``
with ``NUM_GRAPH_INSTANCES``, the sample state as user data, started) → the instances (source
``get_by_data``, destinations ``get_by_addr``, a DMA task per DMA node, the instance's data as the user
node's cookie and as its user data) → every instance submitted → ``doca_pe_progress`` until all ten
completed → cleanup in reverse order. What the port adds: the C sample counts a failed instance as a
completed one (one callback for both); the port registers a separate error callback, so a failed instance
makes it exit with an error, and its user node logs the byte it verified.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import doca_py as d
from _common import run_sample, setup_logging

log = setup_logging("GRAPH::SAMPLE")

NUM_DMA_NODES = 2
NUM_GRAPH_INSTANCES = 10
DMA_BUFFER_SIZE = 1024
REQUIRED_ENTRY_SIZE = DMA_BUFFER_SIZE + DMA_BUFFER_SIZE * NUM_DMA_NODES
BUFFER_SIZE = REQUIRED_ENTRY_SIZE * NUM_GRAPH_INSTANCES
GRAPH_INSTANCE_NUM_BUFFERS = 1 + NUM_DMA_NODES  # one source, one destination per DMA node
BUF_INVENTORY_SIZE = GRAPH_INSTANCE_NUM_BUFFERS * NUM_GRAPH_INSTANCES


@dataclass
class GraphInstanceData:
    """``struct graph_instance_data``: what one instance runs on (tasks live as long as the instance)."""

    index: int
    buffer: bytearray  # the sample's buffer: the offsets below are the C sample's addresses into it
    graph_instance: d.GraphInstance | None = None
    source: d.Buf | None = None
    source_offset: int = 0
    dma_task: list[d.DmaTaskMemcpy] = field(default_factory=list)
    dma_dest: list[d.Buf] = field(default_factory=list)
    dma_dest_offset: list[int] = field(default_factory=list)


@dataclass
class GraphSampleState:
    """``struct graph_sample_state``."""

    buffer: bytearray = field(default_factory=bytearray)
    available_offset: int = 0  # the C sample's available_buffer, as an offset into buffer
    device: d.Dev | None = None
    mmap: d.Mmap | None = None
    inventory: d.BufInventory | None = None
    pe: d.Pe | None = None
    dma: list[d.Dma] = field(default_factory=list)
    graph: d.Graph | None = None
    dma_node: list[d.GraphNode] = field(default_factory=list)
    user_node: d.GraphNode | None = None
    instances: list[GraphInstanceData] = field(default_factory=list)
    num_completed_instances: int = 0
    num_failed_instances: int = 0


def allocate_buffer(state: GraphSampleState) -> None:
    log.info("Allocating buffer")
    state.buffer = bytearray(BUFFER_SIZE)
    state.available_offset = 0


def open_device(state: GraphSampleState) -> None:
    """``open_doca_device_with_capabilities(check_dev_dma_capable)``."""
    log.info("Opening device")
    for info in d.devinfo_create_list():
        if d.Dma.cap_task_memcpy_is_supported(info):
            state.device = info.open()
            return
    raise d.errors.DocaNotFound("no device supports the DMA memcpy task")


def create_mmap(state: GraphSampleState) -> None:
    log.info("Creating MMAP")
    assert state.device is not None
    state.mmap = d.Mmap()
    state.mmap.set_memrange(state.buffer)
    state.mmap.add_dev(state.device)
    state.mmap.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
    state.mmap.start()


def create_buf_inventory(state: GraphSampleState) -> None:
    log.info("Creating buf inventory")
    state.inventory = d.BufInventory(BUF_INVENTORY_SIZE)


def create_pe(state: GraphSampleState) -> None:
    log.info("Creating progress engine")
    state.pe = d.Pe()


def dma_task_completed_callback(task: d.DmaTaskMemcpy, task_user_data: Any, ctx_user_data: Any) -> None:
    """Mandatory for ``task_memcpy_set_conf``, never called: a task run by a graph reports to the graph."""


def create_dmas(state: GraphSampleState) -> None:
    assert state.device is not None and state.pe is not None
    for i in range(NUM_DMA_NODES):
        log.info("Creating DMA %d", i)
        dma = d.Dma(state.device)
        state.dma.append(dma)
        state.pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(dma_task_completed_callback, dma_task_completed_callback, NUM_GRAPH_INSTANCES)


def start_contexts(state: GraphSampleState) -> None:
    log.info("Starting contexts")
    for dma in state.dma:
        dma.start()


def user_node_callback(instance: GraphInstanceData) -> None:
    """``user_node_callback``: both destinations hold the source's bytes (raising fails the instance, as the
    C callback's ``DOCA_ERROR_BAD_STATE``)."""
    log.info("Instance %d user callback", instance.index)
    buf = instance.buffer
    src = buf[instance.source_offset:instance.source_offset + DMA_BUFFER_SIZE]
    for dest, offset in zip(instance.dma_dest, instance.dma_dest_offset):
        dma_length = dest.get_data_len()
        if dma_length != DMA_BUFFER_SIZE:
            log.error("DMA destination buffer length %d should be %d", dma_length, DMA_BUFFER_SIZE)
            raise d.errors.DocaBadState("a DMA destination has the wrong length")
        if buf[offset:offset + dma_length] != src:
            log.error("DMA source and destination mismatch")
            raise d.errors.DocaBadState("a DMA destination does not hold the source's bytes")
    first = instance.dma_dest_offset[0]
    log.info("Instance %d: both DMA destinations hold the source's %d bytes of 0x%02x", instance.index,
             DMA_BUFFER_SIZE, buf[first])


def graph_completion_callback(graph_instance: d.GraphInstance, instance_user_data: Any,
                              graph_user_data: Any) -> None:
    state: GraphSampleState = graph_user_data
    state.num_completed_instances += 1
    # Graph instance and tasks are destroyed at cleanup


def graph_error_callback(graph_instance: d.GraphInstance, instance_user_data: Any, graph_user_data: Any) -> None:
    """The port's addition: the C sample passes graph_completion_callback for failures too."""
    state: GraphSampleState = graph_user_data
    instance: GraphInstanceData = instance_user_data
    log.error("Instance %d failed", instance.index)
    state.num_completed_instances += 1
    state.num_failed_instances += 1


def create_graph(state: GraphSampleState) -> None:
    """``create_graph``: creating a node adds it to the roots; a dependency takes the dependent node out."""
    log.info("Creating graph")
    assert state.pe is not None
    graph = state.graph = d.Graph(state.pe)
    state.user_node = graph.node_create_from_user(user_node_callback)
    for dma in state.dma:
        node = graph.node_create_from_ctx(dma)
        state.dma_node.append(node)
        graph.add_dependency(node, state.user_node)
    graph.set_conf(graph_completion_callback, graph_error_callback, NUM_GRAPH_INSTANCES)
    graph.set_user_data(state)
    # A graph is started (and validated) before its instances are made.
    graph.start()


def create_graph_instance(state: GraphSampleState, index: int) -> None:
    assert state.graph is not None and state.inventory is not None and state.mmap is not None
    assert state.user_node is not None
    instance = GraphInstanceData(index, state.buffer)
    state.instances.append(instance)
    inst = instance.graph_instance = state.graph.instance_create()
    base = state.mmap.get_memrange()[0]

    off = state.available_offset
    instance.source = state.inventory.buf_get_by_data(state.mmap, base + off, DMA_BUFFER_SIZE)
    state.buffer[off:off + DMA_BUFFER_SIZE] = bytes([(index + 1) & 0xFF]) * DMA_BUFFER_SIZE
    instance.source_offset = off
    state.available_offset += DMA_BUFFER_SIZE

    for dma, node in zip(state.dma, state.dma_node):
        off = state.available_offset
        dest = state.inventory.buf_get_by_addr(state.mmap, base + off, DMA_BUFFER_SIZE)
        instance.dma_dest.append(dest)
        instance.dma_dest_offset.append(off)
        state.available_offset += DMA_BUFFER_SIZE
        task = dma.task_memcpy_alloc_init(instance.source, dest)
        instance.dma_task.append(task)
        inst.set_ctx_node_data(node, task)

    # The instance's data is the user node's cookie: from there it finds everything it checks.
    inst.set_user_node_data(state.user_node, instance)
    inst.set_user_data(instance)


def create_graph_instances(state: GraphSampleState) -> None:
    log.info("Creating graph instances")
    for i in range(NUM_GRAPH_INSTANCES):
        create_graph_instance(state, i)


def submit_instances(state: GraphSampleState) -> None:
    log.info("Submitting all graph instances")
    for instance in state.instances:
        assert instance.graph_instance is not None
        instance.graph_instance.submit()


def poll_for_completion(state: GraphSampleState) -> None:
    assert state.pe is not None
    state.num_completed_instances = 0
    log.info("Waiting until all instances are complete")
    while state.num_completed_instances < NUM_GRAPH_INSTANCES:
        state.pe.progress()
    log.info("All instances completed")


def cleanup(state: GraphSampleState) -> None:
    """Release everything in reverse order of creation, ignoring failures as the C sample does."""
    def quietly(what: Any) -> None:
        try:
            what()
        except d.DocaError as exc:
            log.warning("cleanup: %s", exc)

    for instance in state.instances:  # destroy_graph_instances
        if instance.graph_instance is not None:
            quietly(instance.graph_instance.close)
        for task in instance.dma_task:
            quietly(task.free)
        for buf in (*instance.dma_dest, instance.source):
            if buf is not None:
                quietly(buf.dec_refcount)
    if state.graph is not None:  # destroy_graph: doca_graph_stop, doca_graph_destroy
        quietly(state.graph.stop)
        quietly(state.graph.close)
    for dma in state.dma:  # stop_contexts
        quietly(dma.stop)
    for dma in state.dma:
        quietly(dma.close)
    for obj in (state.pe, state.inventory, state.mmap, state.device):
        if obj is not None:
            quietly(obj.close)


def run_graph_sample() -> d.ErrorCode:
    state = GraphSampleState()
    try:
        allocate_buffer(state)
        open_device(state)
        create_mmap(state)
        create_buf_inventory(state)
        create_pe(state)
        create_dmas(state)
        start_contexts(state)
        create_graph(state)
        create_graph_instances(state)
        submit_instances(state)
        poll_for_completion(state)
        if state.num_failed_instances:
            return d.ErrorCode.BAD_STATE
        return d.ErrorCode.SUCCESS
    finally:
        cleanup(state)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv:
        print("usage: graph.py (the sample takes no arguments)", file=sys.stderr)
        return 2
    return run_sample(log, run_graph_sample)


if __name__ == "__main__":
    sys.exit(main())
