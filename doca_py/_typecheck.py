"""Static proof that both backends implement the protocols of [`doca_py.abc`][doca_py.abc].

Nothing here runs; mypy checks every assignment below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import abc
    from .comch import (
        ComchBackend,
        ComchClientHandle,
        ComchConnectionHandle,
        ComchConsumerHandle,
        ComchProducerHandle,
        ComchServerHandle,
    )
    from .compress import CompressBackend, CompressHandle, CompressTaskHandle
    from .dma import DmaBackend, DmaHandle
    from .ec import EcBackend, EcHandle
    from .emulated import compress as e_compress
    from .emulated import ec as e_ec
    from .emulated import buf as e_buf
    from .emulated import comch as e_comch
    from .emulated import dev as e_dev
    from .emulated import dma as e_dma
    from .emulated import mmap as e_mmap
    from .emulated import pe as e_pe
    from .emulated import rdma as e_rdma
    from .native import buf as n_buf
    from .native import comch as n_comch
    from .native import compress as n_compress
    from .native import ctx as n_ctx
    from .native import dev as n_dev
    from .native import dma as n_dma
    from .native import ec as n_ec
    from .native import mmap as n_mmap
    from .native import pe as n_pe
    from .native import rdma as n_rdma
    from .rdma import RdmaBackend, RdmaHandle

    _modules: list[object] = []
    _e_dev: abc.DevBackend = e_dev
    _e_mmap: abc.MmapBackend = e_mmap
    _e_buf: abc.BufBackend = e_buf
    _e_pe: abc.PeBackend = e_pe
    _e_dma: DmaBackend = e_dma
    _e_ec: EcBackend = e_ec
    _e_compress: CompressBackend = e_compress
    _e_rdma: RdmaBackend = e_rdma
    _e_comch: ComchBackend = e_comch
    _n_dev: abc.DevBackend = n_dev
    _n_mmap: abc.MmapBackend = n_mmap
    _n_buf: abc.BufBackend = n_buf
    _n_pe: abc.PeBackend = n_pe
    _n_dma: DmaBackend = n_dma
    _n_ec: EcBackend = n_ec
    _n_compress: CompressBackend = n_compress
    _n_rdma: RdmaBackend = n_rdma
    _n_comch: ComchBackend = n_comch

    def _native_comch_handles(
        a: n_comch.NativeComchServer, b: n_comch.NativeComchClient, c: n_comch.NativeComchConnection,
        d: n_comch.NativeComchConsumer, e: n_comch.NativeComchProducer, f: n_comch.NativeComchTaskSend,
        g: n_comch.NativeComchConsumerTaskPostRecv, h: n_comch.NativeComchProducerTaskSend,
    ) -> None:
        _a: ComchServerHandle = a
        _b: ComchClientHandle = b
        _c: ComchConnectionHandle = c
        _d: ComchConsumerHandle = d
        _e: ComchProducerHandle = e
        _f: abc.TaskHandle = f
        _g: abc.TaskHandle = g
        _h: abc.TaskHandle = h

    def _native_rdma_handles(a: n_rdma.NativeRdma, b: n_rdma.NativeRdmaTask) -> None:
        _a: RdmaHandle = a
        _b: abc.TaskHandle = b

    def _native_engine_handles(
        a: n_dma.NativeDma, b: n_dma.NativeDmaTaskMemcpy, c: n_ec.NativeEc, d: n_ec.NativeEcTask,
        e: n_compress.NativeCompress, f: n_compress.NativeCompressTask,
    ) -> None:
        _a: DmaHandle = a
        _b: abc.TaskHandle = b
        _c: EcHandle = c
        _d: abc.TaskHandle = d
        _e: CompressHandle = e
        _f: CompressTaskHandle = f

    def _handles(
        a: e_dev.EmuDev, b: e_dev.EmuDevRep, c: e_buf.EmuBuf, d: e_dma.EmuDma, e: e_dma.EmuDmaTaskMemcpy,
        k: e_ec.EmuEc, l_: e_compress.EmuCompress, f: n_dev.NativeDev, g: n_dev.NativeDevRep, h: n_buf.NativeBuf, i: n_ctx.NativeCtx, j: n_ctx.NativeTask,
    ) -> None:
        _a: abc.DevHandle = a
        _b: abc.DevRepHandle = b
        _c: abc.BufHandle = c
        _d: DmaHandle = d
        _e: abc.TaskHandle = e
        _f: abc.DevHandle = f
        _g: abc.DevRepHandle = g
        _h: abc.BufHandle = h
        _i: abc.CtxHandle = i
        _j: abc.TaskHandle = j
        _k: EcHandle = k
        _l: CompressHandle = l_
