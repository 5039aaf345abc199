"""Both backends refuse, in one DOCA version, exactly what that version lacks.

Every declaration of ``doca_py/native/capi`` with a ``since`` or ``until`` names a function some supported DOCA
version does not export. A public method that reaches one is refused (``DocaNotSupported``) in the versions
outside that range and works in the others, on both backends: the native half runs over libdoca built for the
test's version (the symbol is absent there, so its stub refuses), the emulated half presents the version
(``DOCA_PY_EMU_VERSION``). Each versioned declaration is either reached by a probe here (:data:`PROBES`), has no
public method (:data:`NO_PUBLIC_METHOD`), or is a documented exception (:data:`EXCEPTIONS`): a version
difference the public API bridges the same way on both backends, each with its own test below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.compress import CompressTaskType as C
from doca_py.native import capi
from doca_py.native.capi import Decl
from doca_py.rdma import Rdma
from doca_py.rdma_connection import RdmaAddr, RdmaAddrType
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState, PeEventMode, TaskSubmitFlag

from ..core.helpers import DPU_PCI, HOST_PCI, local_mmap
from .backends import Backend

VERSIONS = ("2.6", "3.0", "3.2")
ROOT = Path(__file__).resolve().parents[2]


def _decls() -> dict[str, Decl]:
    return {decl.name: decl for table in capi.tables().values() for decl in table}


DECLS = _decls()
VERSIONED = {name: decl for name, decl in DECLS.items() if decl.since is not None or decl.until is not None}


def lacks(version: str, decl: Decl) -> bool:
    """Whether DOCA *version* lacks *decl*'s function."""
    major, minor = (int(x) for x in version.split("."))
    v = (major, minor)
    return (decl.since is not None and v < decl.since) or (decl.until is not None and v > decl.until)


# -- what the probes build ------------------------------------------------------------------------

class World:
    """What a probe needs, made on first use and closed (in reverse) when the probe ends."""

    def __init__(self, st: ExitStack) -> None:
        self.st = st
        self._dev: d.Dev | None = None
        self._pe: d.Pe | None = None
        self._inv: d.BufInventory | None = None
        self._mm: d.Mmap | None = None

    def enter(self, cm: Any) -> Any:
        return self.st.enter_context(cm)

    @property
    def dev(self) -> d.Dev:
        if self._dev is None:
            self._dev = self.enter(d.Dev.open_by_pci_addr(DPU_PCI))
        return self._dev

    @property
    def pe(self) -> d.Pe:
        if self._pe is None:
            self._pe = self.enter(d.Pe())
        return self._pe

    @property
    def inv(self) -> d.BufInventory:
        if self._inv is None:
            self._inv = self.enter(d.BufInventory(8))
        return self._inv

    @property
    def mm(self) -> d.Mmap:
        if self._mm is None:
            self._mm = self.enter(local_mmap(self.dev, 1 << 16))
        return self._mm

    def buf(self, offset: int = 0, length: int = 4096) -> d.Buf:
        base, _ = self.mm.get_memrange()
        return self.enter(self.inv.buf_get_by_addr(self.mm, base + offset, length))

    def rep_info(self) -> d.DevInfoRep:
        return self.dev.rep_create_list()[0]

    def compress(self) -> d.Compress:
        comp = self.enter(d.Compress(self.dev))
        self.pe.connect_ctx(comp)
        return comp

    def lz4_stream_task(self) -> d.CompressTaskDecompressLz4Stream:
        comp = self.compress()
        comp.task_decompress_lz4_stream_set_conf(_ignore, _ignore, 2)
        comp.start()
        src, dst = self.buf(0), self.buf(8192)
        src.set_data(src.get_head(), 16)
        return comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst)

    def rdma(self, start: bool = True) -> Rdma:
        r = self.enter(Rdma(self.dev))
        self.pe.connect_ctx(r)
        r.set_permissions(A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE)
        if start:
            r.start()
        return r

    def rdma_conn(self) -> d.RdmaConnection:
        _, conn = self.rdma().export()
        return conn

    def sync_event(self) -> d.SyncEvent:
        se = self.enter(d.SyncEvent())
        se.add_publisher_location_cpu(self.dev)
        se.add_subscriber_location_cpu(self.dev)
        return se

    def comch(self) -> Any:
        from ..comch.helpers import pair

        return self.enter(pair())

    def consumer(self) -> d.ComchConsumer:
        p = self.comch()
        mm = self.enter(local_mmap(p.host, 1 << 14, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE))
        return self.enter(d.ComchConsumer(p.cconn, mm))

    def producer(self) -> tuple[d.ComchProducer, Any]:
        p = self.comch()
        prod = self.enter(d.ComchProducer(p.cconn))
        p.client.pe.connect_ctx(prod)
        return prod, p


def _ignore(*_: object) -> None:
    pass


@dataclass(frozen=True)
class Probe:
    """A public call reaching the C functions *fns* (one DOCA version range); *says* must be in its refusal."""

    fns: tuple[str, ...]
    run: Callable[[World], object]
    says: str = ""


def _producer_send_with_imm(w: World) -> None:
    prod, p = w.producer()
    prod.task_send_set_conf(_ignore, _ignore, 2)
    prod.start()
    p.pump(lambda: prod.get_state() == CtxState.RUNNING)
    mm = w.enter(local_mmap(p.host, 1 << 14, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE))
    base, _ = mm.get_memrange()
    buf = w.enter(w.inv.buf_get_by_data(mm, base, 8))
    prod.task_send_alloc_init(buf, b"imm", 1).free()


def _server_disconnect(w: World) -> None:
    p = w.comch()
    p.server.ctx.disconnect(p.sconn)


#: Public calls that reach a versioned function, by name.
PROBES: dict[str, Probe] = {
    # -- libdoca_common
    "BufInventory.expand": Probe(("doca_buf_inventory_expand",), lambda w: w.inv.expand(1)),
    "Mmap.enable_thread_safety": Probe(("doca_mmap_enable_thread_safety",),
                                       lambda w: w.enter(d.Mmap()).enable_thread_safety()),
    "Buf.set_data_len": Probe(("doca_buf_set_data_len",), lambda w: w.buf().set_data_len(16)),
    "Buf.reuse_by_addr (another window)": Probe(
        ("doca_buf_inventory_buf_reuse_by_addr", "doca_buf_inventory_buf_reuse_by_args"),
        lambda w: w.buf(0, 4096).reuse_by_addr(w.mm.get_memrange()[0] + 8192, 1024),
        says="doca_buf_inventory_buf_reuse_by_"),
    "Buf.reuse_by_data (another window)": Probe(
        ("doca_buf_inventory_buf_reuse_by_data",),
        lambda w: w.buf(0, 4096).reuse_by_data(w.mm.get_memrange()[0] + 8192, 1024),
        says="doca_buf_inventory_buf_reuse_by_"),
    "Dma.set_ordered_completions": Probe(("doca_dma_set_ordered_completions",),
                                         lambda w: w.enter(d.Dma(w.dev)).set_ordered_completions(True)),
    "Dma.get_ordered_completions": Probe(("doca_dma_get_ordered_completions",),
                                         lambda w: w.enter(d.Dma(w.dev)).get_ordered_completions()),
    "Task.submit_ex": Probe(("doca_task_submit_ex",), lambda w: _submit_ex(w)),
    "Pe.set_event_mode": Probe(("doca_pe_set_event_mode",),
                               lambda w: w.pe.set_event_mode(PeEventMode.PROGRESS_ALL)),
    "DevInfo.get_vhca_id": Probe(("doca_devinfo_get_vhca_id",), lambda w: w.dev.as_devinfo().get_vhca_id()),
    "DevInfo.cap_is_notification_moderation_supported": Probe(
        ("doca_devinfo_cap_is_notification_moderation_supported",),
        lambda w: w.dev.as_devinfo().cap_is_notification_moderation_supported()),
    "DevInfo.cap_is_accelerate_resource_reclaim_supported": Probe(
        ("doca_devinfo_cap_is_accelerate_resource_reclaim_supported",),
        lambda w: w.dev.as_devinfo().cap_is_accelerate_resource_reclaim_supported()),
    "DevInfoRep.get_iface_name": Probe(("doca_devinfo_rep_get_iface_name",), lambda w: w.rep_info().get_iface_name()),
    "DevInfoRep.get_vhca_id": Probe(("doca_devinfo_rep_get_vhca_id",), lambda w: w.rep_info().get_vhca_id()),
    "MmapAdvise": Probe(
        ("doca_mmap_advise_create", "doca_mmap_advise_destroy", "doca_mmap_advise_as_ctx",
         "doca_mmap_advise_task_invalidate_cache_set_conf", "doca_mmap_advise_task_invalidate_cache_alloc_init",
         "doca_mmap_advise_task_invalidate_cache_as_doca_task", "doca_mmap_advise_task_invalidate_cache_get_buf",
         "doca_mmap_advise_task_invalidate_cache_set_buf"),
        lambda w: w.enter(d.MmapAdvise(w.dev)), says="doca_mmap_advise"),
    "MmapAdvise.task_cache_invalidate_get_max_buf_size": Probe(
        ("doca_mmap_advise_task_cache_invalidate_get_max_buf_size",),
        lambda w: d.MmapAdvise.task_cache_invalidate_get_max_buf_size(w.dev.as_devinfo())),
    # -- sync events (DOCA 2.6 waits only for greater-than)
    "SyncEvent.wait_eq": Probe(("doca_sync_event_wait_eq",), lambda w: _started(w).wait_eq(0)),
    "SyncEvent.wait_eq_yield": Probe(("doca_sync_event_wait_eq_yield",), lambda w: _started(w).wait_eq_yield(0)),
    "SyncEvent.wait_neq": Probe(("doca_sync_event_wait_neq",), lambda w: _started(w).wait_neq(1)),
    "SyncEvent.wait_neq_yield": Probe(("doca_sync_event_wait_neq_yield",), lambda w: _started(w).wait_neq_yield(1)),
    "SyncEvent.cap_task_is_supported(wait_eq)": Probe(
        ("doca_sync_event_cap_task_wait_eq_is_supported",),
        lambda w: d.SyncEvent.cap_task_is_supported("wait_eq", w.dev.as_devinfo())),
    "SyncEvent.cap_task_is_supported(wait_neq)": Probe(
        ("doca_sync_event_cap_task_wait_neq_is_supported",),
        lambda w: d.SyncEvent.cap_task_is_supported("wait_neq", w.dev.as_devinfo())),
    "SyncEventCtx.task_wait_eq_set_conf": Probe(
        ("doca_sync_event_task_wait_eq_set_conf", "doca_sync_event_task_wait_eq_alloc_init",
         "doca_sync_event_task_wait_eq_as_doca_task", "doca_sync_event_task_wait_eq_get_mask",
         "doca_sync_event_task_wait_eq_set_mask", "doca_sync_event_task_wait_eq_get_wait_val",
         "doca_sync_event_task_wait_eq_set_wait_val"),
        lambda w: w.sync_event().as_ctx().task_wait_eq_set_conf(_ignore, _ignore, 1),
        says="doca_sync_event_task_wait_eq_set_conf"),
    "SyncEventCtx.task_wait_neq_set_conf": Probe(
        ("doca_sync_event_task_wait_neq_set_conf", "doca_sync_event_task_wait_neq_alloc_init",
         "doca_sync_event_task_wait_neq_as_doca_task", "doca_sync_event_task_wait_neq_get_mask",
         "doca_sync_event_task_wait_neq_set_mask", "doca_sync_event_task_wait_neq_get_wait_val",
         "doca_sync_event_task_wait_neq_set_wait_val"),
        lambda w: w.sync_event().as_ctx().task_wait_neq_set_conf(_ignore, _ignore, 1),
        says="doca_sync_event_task_wait_neq_set_conf"),
    "SyncEventCtx.task_wait_gt_set_conf": Probe(
        ("doca_sync_event_task_wait_gt_set_conf", "doca_sync_event_task_wait_gt_alloc_init",
         "doca_sync_event_task_wait_gt_as_doca_task", "doca_sync_event_task_wait_gt_get_mask",
         "doca_sync_event_task_wait_gt_set_mask", "doca_sync_event_task_wait_gt_get_wait_val",
         "doca_sync_event_task_wait_gt_set_wait_val"),
        lambda w: w.sync_event().as_ctx().task_wait_gt_set_conf(_ignore, _ignore, 1),
        says="doca_sync_event_task_wait_gt_set_conf"),
    # -- compress: DOCA 2.6 has one LZ4 task (no block task, no LZ4 flags, Adler-32 instead of xxHash-32)
    "Compress.task_decompress_lz4_block_set_conf": Probe(
        ("doca_compress_task_decompress_lz4_block_set_conf", "doca_compress_task_decompress_lz4_block_alloc_init",
         "doca_compress_task_decompress_lz4_block_as_task", "doca_compress_task_decompress_lz4_block_set_src",
         "doca_compress_task_decompress_lz4_block_get_src", "doca_compress_task_decompress_lz4_block_set_dst",
         "doca_compress_task_decompress_lz4_block_get_dst", "doca_compress_task_decompress_lz4_block_get_crc_cs",
         "doca_compress_task_decompress_lz4_block_get_xxh_cs"),
        lambda w: w.compress().task_decompress_lz4_block_set_conf(_ignore, _ignore, 2),
        says="doca_compress_task_decompress_lz4_block_set_conf"),
    "Compress.cap_task_get_max_buf_size(lz4 block)": Probe(
        ("doca_compress_cap_task_decompress_lz4_block_get_max_buf_size",),
        lambda w: d.Compress.cap_task_get_max_buf_size(w.dev.as_devinfo(), C.DECOMPRESS_LZ4_BLOCK)),
    "Compress.cap_task_get_max_buf_list_len(lz4 block)": Probe(
        ("doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len",),
        lambda w: d.Compress.cap_task_get_max_buf_list_len(w.dev.as_devinfo(), C.DECOMPRESS_LZ4_BLOCK)),
    "Compress.task_decompress_lz4_stream_alloc_init(block checksums)": Probe(
        ("doca_compress_task_decompress_lz4_stream_alloc_init",), lambda w: _lz4_alloc(w, True, True), says="lz4"),
    "Compress.task_decompress_lz4_stream_alloc_init(dependent blocks)": Probe(
        ("doca_compress_task_decompress_lz4_stream_alloc_init",), lambda w: _lz4_alloc(w, False, False), says="lz4"),
    "CompressTaskDecompressLz4Stream.set_has_block_checksum(True)": Probe(
        ("doca_compress_task_decompress_lz4_stream_set_has_block_checksum",),
        lambda w: w.lz4_stream_task().set_has_block_checksum(True), says="has_block_checksum"),
    "CompressTaskDecompressLz4Stream.set_are_blocks_independent(False)": Probe(
        ("doca_compress_task_decompress_lz4_stream_set_are_blocks_independent",),
        lambda w: w.lz4_stream_task().set_are_blocks_independent(False), says="are_blocks_independent"),
    "CompressTaskDecompressLz4Stream.get_xxh_cs": Probe(
        ("doca_compress_task_decompress_lz4_stream_get_xxh_cs",), lambda w: w.lz4_stream_task().get_xxh_cs(),
        says="xxh_cs"),
    # -- rdma: DOCA 2.6 has one implicit connection per ctx, no RDMA-CM, no connection callbacks
    "Rdma.set_rnr_retry_count": Probe(("doca_rdma_set_rnr_retry_count",), lambda w: w.rdma(False).set_rnr_retry_count(3)),
    "Rdma.get_rnr_retry_count": Probe(("doca_rdma_get_rnr_retry_count",), lambda w: w.rdma(False).get_rnr_retry_count()),
    "Rdma.set_connection_request_timeout": Probe(("doca_rdma_set_connection_request_timeout",),
                                                 lambda w: w.rdma(False).set_connection_request_timeout(500)),
    "Rdma.get_connection_request_timeout": Probe(("doca_rdma_get_connection_request_timeout",),
                                                 lambda w: w.rdma(False).get_connection_request_timeout()),
    "Rdma.set_max_num_connections(2)": Probe(("doca_rdma_set_max_num_connections",),
                                             lambda w: w.rdma(False).set_max_num_connections(2),
                                             says="max_num_connections"),
    "Rdma.set_connection_state_callbacks": Probe(
        ("doca_rdma_set_connection_state_callbacks",),
        lambda w: w.rdma(False).set_connection_state_callbacks(None, None, None, None)),
    "Rdma.start_listen_to_port": Probe(("doca_rdma_start_listen_to_port",),
                                       lambda w: w.rdma().start_listen_to_port(0)),
    "Rdma.stop_listen_to_port": Probe(("doca_rdma_stop_listen_to_port",), lambda w: w.rdma().stop_listen_to_port(1)),
    "Rdma.connect_to_addr": Probe(
        ("doca_rdma_connect_to_addr", "doca_rdma_addr_create", "doca_rdma_addr_destroy"),
        lambda w: w.rdma().connect_to_addr(RdmaAddr(RdmaAddrType.IPv4, "127.0.0.1", 1)), says="doca_rdma_"),
    "Rdma.export (a second connection)": Probe(
        ("doca_rdma_connection_get_id",),  # the connection objects; the 2.6 refusal names no one function
        lambda w: _two_exports(w), says="connection"),
    "RdmaConnection.accept": Probe(("doca_rdma_connection_accept",), lambda w: w.rdma_conn().accept()),
    "RdmaConnection.reject": Probe(("doca_rdma_connection_reject",), lambda w: w.rdma_conn().reject()),
    "RdmaConnection.disconnect": Probe(("doca_rdma_connection_disconnect",), lambda w: w.rdma_conn().disconnect()),
    # -- comch: DOCA 2.6's libdoca_cc has no immediate data and no server-side disconnect
    "ComchServer.disconnect": Probe(("doca_comch_server_disconnect",), _server_disconnect),
    "ComchConsumer.set_imm_data_len(4)": Probe(("doca_comch_consumer_set_imm_data_len",),
                                               lambda w: w.consumer().set_imm_data_len(4), says="immediate data"),
    "ComchProducer.task_send_alloc_init(imm)": Probe(
        ("doca_comch_producer_task_send_set_imm_data",), _producer_send_with_imm, says="immediate data"),
}


def _submit_ex(w: World) -> None:
    done: list[d.Task] = []
    dma = w.enter(d.Dma(w.dev))
    w.pe.connect_ctx(dma)
    dma.task_memcpy_set_conf(lambda t, u, c: done.append(t), lambda t, u, c: done.append(t), 2)
    dma.start()
    src, dst = w.buf(0), w.buf(8192)
    src.set_data(src.get_head(), 64)
    task = dma.task_memcpy_alloc_init(src, dst)
    try:
        task.submit_ex(TaskSubmitFlag.FLUSH)
    except e.DocaError:
        task.free()
        raise
    while not done:
        if not w.pe.progress():
            w.pe.wait(5.0)
    task.free()


def _started(w: World) -> d.SyncEvent:
    se = w.sync_event()
    se.start()
    return se


def _lz4_alloc(w: World, has_block_checksum: bool, are_blocks_independent: bool) -> None:
    comp = w.compress()
    comp.task_decompress_lz4_stream_set_conf(_ignore, _ignore, 2)
    comp.start()
    src, dst = w.buf(0), w.buf(8192)
    src.set_data(src.get_head(), 16)
    comp.task_decompress_lz4_stream_alloc_init(has_block_checksum, are_blocks_independent, src, dst).free()


def _two_exports(w: World) -> None:
    r = w.rdma()
    r.export()
    r.export()


#: Versioned functions no public method reaches (DPA/GPU data paths, batches, DOCA 2.6-only objects the
#: binding does not wrap, setters the public layer keeps in Python), with the reason.
NO_PUBLIC_METHOD: dict[str, str] = {
    **{n: "task batches are not wrapped" for n in VERSIONED if n.startswith("doca_task_batch_")},
    **{n: "a DPA or GPU datapath handle" for n in VERSIONED if re.search(r"_(dpa|gpu)(_|$)", n)},
    **{n: "the DPA consumer completion context is not wrapped" for n in VERSIONED
       if n.startswith("doca_comch_consumer_completion_")},
    **{n: "DOCA 2.6's shared receive queues are not wrapped" for n in VERSIONED if "_srq" in n},
    **{n: "RDMA bridge (DOCA Flow / GPU helpers) is not wrapped" for n in VERSIONED if "_bridge_" in n},
    "doca_comch_consumer_set_dev_max_num_recv": "a DPA-side setting",
    "doca_comch_producer_set_dev_max_num_send": "a DPA-side setting",
    "doca_comch_consumer_set_completion": "the DPA consumer completion context is not wrapped",
    "doca_buf_chain_list_tail": "not wrapped (Buf.chain_list covers list building)",
    "doca_ctx_set_completion_vector": "not wrapped",
    "doca_ctx_cap_get_num_completion_vectors": "not wrapped",
    "doca_dev_accelerate_resource_reclaim": "not wrapped (only its capability query is)",
    "doca_mmap_get_mkey": "not wrapped",
    "doca_devinfo_get_pci_func_type": "not wrapped (DevInfoRep.get_pci_func_type is the representor's)",
    "doca_devinfo_get_sf_index": "not wrapped",
    "doca_sync_event_set_doca_buf": "not wrapped (libdoca serves it to C programs)",
    "doca_rdma_connection_set_user_data": "RdmaConnection keeps its user data in Python",
    "doca_rdma_connection_get_user_data": "RdmaConnection keeps its user data in Python",
    "doca_dma_get_gpu_handle": "a GPU datapath handle",
}

#: Versioned functions whose public method bridges the versions the same way on both backends, with the test
#: that shows it.
EXCEPTIONS: dict[str, str] = {
    "doca_ctx_flush_tasks": "a no-op before 3.0 on both backends (2.6 has no submit_ex, so no task awaits a "
                            "flush): test_flush_tasks_is_a_no_op_before_3_0",
    **{n: "one public method per location/export, served under the name the version has (2.6: _dpu, 3.0: "
          "remote_pci): test_sync_event_remote_pci_under_either_name" for n in VERSIONED
       if n.startswith("doca_sync_event_") and ("remote_pci" in n or n.endswith("_dpu") or "_dpu_" in n)},
    "doca_mmap_advise_cap_task_cache_invalidate_is_supported": "answers False before 2.8 on both backends (a "
                                                               "device without the task): "
                                                               "test_capability_probes_of_absent_tasks_answer_false",
    "doca_compress_cap_task_decompress_lz4_block_is_supported": "answers False on 2.6 on both backends: "
                                                                "test_capability_probes_of_absent_tasks_answer_false",
    **{n: "DOCA 2.6's decompress_lz4 task serves the LZ4 stream task type for its flags (no block checksums, "
          "independent blocks): test_lz4_stream_on_every_version" for n in VERSIONED
       if "decompress_lz4_stream" in n and n not in {
           "doca_compress_task_decompress_lz4_stream_alloc_init",
           "doca_compress_task_decompress_lz4_stream_set_has_block_checksum",
           "doca_compress_task_decompress_lz4_stream_set_are_blocks_independent",
           "doca_compress_task_decompress_lz4_stream_get_xxh_cs"}},
    **{n: "the 2.6 spelling of the LZ4 stream task's functions: test_lz4_stream_on_every_version" for n in VERSIONED
       if re.match(r"doca_compress_(cap_)?task_decompress_lz4_(?!stream|block)", n)},
    **{n: "DOCA 2.6's libdoca_cc spelling: the native backend calls it under its doca_comch_ name (covered "
          "there)" for n in VERSIONED if n.startswith("doca_cc_")},
    "doca_rdma_get_max_num_connections": "1 before 3.0 on both backends (set_max_num_connections(1) works): "
                                         "test_rdma_one_connection_before_3_0",
    "doca_rdma_connection_get_id": "0 (the implicit connection) before 3.0 on both backends: "
                                   "test_rdma_one_connection_before_3_0",
    "doca_rdma_connection_get_addr": "None for export/connect connections on every version (2.6 has no others): "
                                     "test_rdma_one_connection_before_3_0",
    "doca_rdma_addr_get_params": "RdmaAddr keeps its parameters in Python; its C object is made by "
                                 "connect_to_addr (probed)",
    **{n: "a task's connection: before 3.0 the ctx's one implicit connection, which the public setter "
          "accepts and the getter returns on both backends: test_rdma_one_connection_before_3_0"
       for n in VERSIONED if re.match(r"doca_rdma_task_\w+_(get|set)(_result)?_rdma_connection$", n)},
    "doca_comch_consumer_get_imm_data_len": "0 on 2.6 (no immediate data) on both backends: test_comch_without_imm",
    "doca_comch_consumer_cap_get_max_imm_data_len": "0 on 2.6 on both backends: test_comch_without_imm",
    "doca_comch_consumer_cap_get_max_buf_list_len": "1 on 2.6 (no such query; one buffer per receive)",
    "doca_comch_producer_cap_get_max_buf_list_len": "1 on 2.6 (no such query; one buffer per send)",
    **{n: "empty on 2.6 (no immediate data) on both backends: test_comch_without_imm" for n in VERSIONED
       if re.match(r"doca_comch_(consumer_task_post_recv|producer_task_send)_get_imm_data", n)},
    "doca_comch_producer_task_send_set_imm_data": "empty immediate data is accepted on 2.6 (probed with data)",
    "doca_sync_event_cap_task_wait_gt_is_supported": "refused from 3.0 on both backends (the query is absent): "
                                                     "test_sync_event.py::"
                                                     "test_a_3_x_runtime_refuses_the_2_6_wait_gt_tasks",
}


def _classified() -> dict[str, str]:
    probed = {fn: f"probe {name}" for name, p in PROBES.items() for fn in p.fns}
    return {**NO_PUBLIC_METHOD, **EXCEPTIONS, **probed}


def test_every_versioned_function_is_probed_excepted_or_unreachable() -> None:
    classified = _classified()
    unknown = sorted(set(VERSIONED) - set(classified))
    assert not unknown, f"versioned declarations with no probe, exception or no-public-method reason: {unknown}"
    stale = sorted(set(classified) - set(VERSIONED))
    assert not stale, f"classified names that are not versioned declarations: {stale}"
    twice = sorted(set(NO_PUBLIC_METHOD) & (set(EXCEPTIONS) | {f for p in PROBES.values() for f in p.fns}))
    assert not twice, f"a function with no public method cannot be probed or excepted: {twice}"


def test_a_probe_covers_one_version_range() -> None:
    for name, p in PROBES.items():
        ranges = {(DECLS[f].since, DECLS[f].until) for f in p.fns}
        assert len(ranges) == 1, f"probe {name} mixes version ranges: {ranges}"


def test_functions_without_a_public_method_are_not_called_by_the_public_layer() -> None:
    """The native backend names them only in handle methods the public modules (``doca_py/*.py``) do not call."""
    public = "\n".join(p.read_text() for p in (ROOT / "doca_py").glob("*.py"))
    native = {p: p.read_text() for p in (ROOT / "doca_py" / "native").glob("*.py")}
    for fn in NO_PUBLIC_METHOD:
        for path, text in native.items():
            for m in re.finditer(rf"def (\w+)\([^)]*\)[^:]*:\n(?:(?!\n(?:    )?def ).)*?\b{fn}\b", text, re.S):
                method = m.group(1)
                assert not re.search(rf"\._h\.{method}\(|\b_h\.{method}\b", public), \
                    f"{fn} is reached through {path.name}'s {method}, which the public layer calls"


@contextmanager
def _world() -> Iterator[World]:
    with ExitStack() as st:
        yield World(st)


@pytest.mark.doca_versions(*VERSIONS)
@pytest.mark.parametrize("probe", sorted(PROBES))
def test_refused_exactly_where_the_version_lacks_it(doca_version: str, backend: Backend, probe: str) -> None:
    p = PROBES[probe]
    decl = DECLS[p.fns[0]]
    missing = lacks(doca_version, decl)
    try:
        with _world() as w:
            p.run(w)
    except e.DocaNotSupported as exc:
        assert missing, f"{probe} refused on DOCA {doca_version}, which has {decl.name}: {exc}"
        since = decl.since or decl.until
        assert since is not None
        assert f"DOCA {since[0]}.{since[1]}" in str(exc), str(exc)
        assert (p.says or decl.name) in str(exc), str(exc)
        return
    except e.DocaError as exc:
        assert not missing, f"{probe} on DOCA {doca_version}, which lacks {decl.name}, raised {exc!r}, " \
                            "not DocaNotSupported"
        return  # another DOCA rule (a state, a value): the function exists
    assert not missing, f"{probe} worked on DOCA {doca_version}, which lacks {decl.name} ({decl.availability()})"


# -- the exceptions: what the public API bridges the same way on both backends ----------------------

def _at_least(version: str, major: int, minor: int) -> bool:
    a, b = (int(x) for x in version.split("."))
    return (a, b) >= (major, minor)


@pytest.mark.doca_versions(*VERSIONS)
def test_flush_tasks_is_a_no_op_before_3_0(doca_version: str, backend: Backend) -> None:
    with _world() as w:
        dma = w.enter(d.Dma(w.dev))
        w.pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(_ignore, _ignore, 1)
        dma.start()
        dma.flush_tasks()


@pytest.mark.doca_versions(*VERSIONS)
def test_sync_event_remote_pci_under_either_name(doca_version: str, backend: Backend) -> None:
    """DOCA 2.6 spells the remote PCI location and export ``_dpu``; the public methods work on every version."""
    with _world() as w:
        assert d.SyncEvent.cap_is_export_to_remote_pci_supported(w.dev.as_devinfo())
        se = w.enter(d.SyncEvent())
        se.add_publisher_location_cpu(w.dev)
        se.add_subscriber_location_remote_pci()
        se.start()
        assert se.export_to_remote_pci(w.dev)


@pytest.mark.doca_versions(*VERSIONS)
def test_capability_probes_of_absent_tasks_answer_false(doca_version: str, backend: Backend) -> None:
    with _world() as w:
        info = w.dev.as_devinfo()
        assert d.Compress.cap_task_is_supported(info, C.DECOMPRESS_LZ4_BLOCK) is _at_least(doca_version, 3, 0)
        assert d.Compress.cap_task_is_supported(info, C.DECOMPRESS_LZ4_STREAM)
        assert d.MmapAdvise.cap_task_cache_invalidate_is_supported(info) is _at_least(doca_version, 2, 8)


@pytest.mark.doca_versions(*VERSIONS)
def test_lz4_stream_on_every_version(doca_version: str, backend: Backend) -> None:
    """No block checksums, independent blocks: DOCA 2.6's ``decompress_lz4`` task reads it, 3.x's LZ4 stream
    task too; both report the CRC-32 of the output, and the flags read back as 2.6 implies."""
    import zlib

    from doca_py.engines import lz4_stream

    plain = bytes(range(256)) * 64
    stream = lz4_stream.compress_stream(plain)
    done: list[str] = []
    with _world() as w:
        comp = w.compress()
        comp.task_decompress_lz4_stream_set_conf(lambda t, u, c: done.append("ok"),
                                                 lambda t, u, c: done.append("err"), 1)
        comp.start()
        base, _ = w.mm.get_memrange()
        w.mm.buffer[:len(stream)] = stream
        src = w.enter(w.inv.buf_get_by_data(w.mm, base, len(stream)))
        dst = w.enter(w.inv.buf_get_by_addr(w.mm, base + 32768, len(plain)))
        task = comp.task_decompress_lz4_stream_alloc_init(False, True, src, dst)
        task.set_has_block_checksum(False)
        task.set_are_blocks_independent(True)
        assert (task.get_has_block_checksum(), task.get_are_blocks_independent()) == (False, True)
        task.submit()
        while not done:
            if not w.pe.progress():
                w.pe.wait(5.0)
        assert done == ["ok"]
        assert bytes(dst.data_view()) == plain
        assert task.get_crc_cs() == zlib.crc32(plain)
        task.free()


@pytest.mark.doca_versions(*VERSIONS)
def test_buf_reuse_of_its_own_window_on_every_version(doca_version: str, backend: Backend) -> None:
    """Before 3.2 there is no re-aim, but a buffer re-aimed at the window it has moves only its data region
    (``doca_buf_set_data``), so that much works on every version."""
    with _world() as w:
        buf = w.buf(4096, 4096)
        head = buf.get_head()
        buf.set_data(head + 100, 10)
        buf.reuse_by_addr(head, 4096)
        assert (buf.get_head(), buf.get_len(), buf.get_data(), buf.get_data_len()) == (head, 4096, head, 0)
        buf.reuse_by_data(head, 4096)
        assert (buf.get_data(), buf.get_data_len()) == (head, 4096)


@pytest.mark.doca_versions(*VERSIONS)
def test_rdma_one_connection_before_3_0(doca_version: str, backend: Backend) -> None:
    """DOCA 2.6 has one implicit connection per ctx: ``max_num_connections`` is 1, the connection of the export
    is number 0 and has no address, and a task takes (and gives back) that connection."""
    v3 = _at_least(doca_version, 3, 0)
    with _world() as w:
        r, peer = w.rdma(start=False), w.rdma(start=False)
        r.set_max_num_connections(1)
        assert r.get_max_num_connections() == 1
        r.task_send_set_conf(_ignore, _ignore, 1)
        r.start()
        peer.start()
        blob, conn = r.export()
        peer_blob, peer_conn = peer.export()
        r.connect(peer_blob, conn)
        peer.connect(blob, peer_conn)
        while r.get_state() != CtxState.RUNNING:  # 2.6: RUNNING once connected
            if not w.pe.progress():
                w.pe.wait(0.1)
        assert conn.get_addr() is None
        if not v3:
            assert conn.get_id() == 0
        task = r.task_send_allocate_init(conn, None)
        assert task.get_rdma_connection() is conn
        task.set_rdma_connection(conn)
        task.free()


@pytest.mark.doca_versions(*VERSIONS)
def test_comch_without_imm(doca_version: str, backend: Backend) -> None:
    """DOCA 2.6's comch has no immediate data: a consumer's length reads 0 and only 0 can be set, the capability
    is 0, and a send without immediate data works on every version."""
    v3 = _at_least(doca_version, 3, 0)
    with _world() as w:
        p = w.comch()
        assert (d.ComchConsumer.cap_get_max_imm_data_len(p.host.as_devinfo()) > 0) is v3
        mm = w.enter(local_mmap(p.host, 1 << 14, A.LOCAL_READ_WRITE | A.PCI_READ_WRITE))
        cons = w.enter(d.ComchConsumer(p.cconn, mm))
        cons.set_imm_data_len(0)
        assert cons.get_imm_data_len() == 0
        prod = w.enter(d.ComchProducer(p.cconn))
        p.client.pe.connect_ctx(prod)
        prod.task_send_set_conf(_ignore, _ignore, 1)
        prod.start()
        p.pump(lambda: prod.get_state() == CtxState.RUNNING)
        base, _ = mm.get_memrange()
        buf = w.enter(w.inv.buf_get_by_data(mm, base, 8))
        task = prod.task_send_alloc_init(buf, None, 1)
        task.set_imm_data(b"")
        assert task.get_imm_data() == b""
        task.free()
