"""Protocols of the offload engines: ``doca_dma``, ``doca_ec`` and ``doca_compress`` (modules
``doca_py.<impl>.dma``, ``.ec`` and ``.compress``)."""

from __future__ import annotations

from typing import Protocol

from .core import BufHandle, CtxHandle, DevHandle, DevInfoHandle, TaskHandle, TaskPoolHandle


class DmaTaskMemcpyHandle(TaskHandle, Protocol):
    """``doca_dma_task_memcpy``."""

    def set_src(self, buf: BufHandle) -> None:
        """``doca_dma_task_memcpy_set_src``."""
        ...
    def set_dst(self, buf: BufHandle) -> None:
        """``doca_dma_task_memcpy_set_dst``."""
        ...


class EcMatrixHandle(Protocol):
    """``doca_ec_matrix``."""

    def destroy(self) -> None:
        """``doca_ec_matrix_destroy``."""
        ...


class DmaHandle(CtxHandle, Protocol):
    """``doca_dma`` as a backend implements it."""

    @property
    def memcpy(self) -> TaskPoolHandle:
        """Backend: the memcpy task type (``doca_dma_task_memcpy``)."""
    def task_memcpy_alloc_init(self, src: BufHandle, dst: BufHandle) -> DmaTaskMemcpyHandle:
        """``doca_dma_task_memcpy_alloc_init``."""
    def set_ordered_completions(self, ordered: bool) -> None:
        """``doca_dma_set_ordered_completions`` (DOCA 3.2; before start)."""
    def get_ordered_completions(self) -> bool:
        """``doca_dma_get_ordered_completions`` (DOCA 3.2)."""


class DmaBackend(Protocol):
    """Module ``doca_py.<impl>.dma``."""

    def dma_create(self, dev: DevHandle) -> DmaHandle:
        """``doca_dma_dma_create``."""
    def cap_task_memcpy_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_dma_cap_task_memcpy_is_supported``."""
    def cap_task_memcpy_get_max_buf_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_dma_cap_task_memcpy_get_max_buf_size``."""
    def cap_task_memcpy_get_max_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_dma_cap_task_memcpy_get_max_buf_list_len``."""
    def cap_get_max_num_tasks(self, devinfo: DevInfoHandle) -> int:
        """``doca_dma_cap_get_max_num_tasks``."""


class EcTaskHandle(TaskHandle, Protocol):
    """An EC task handle: the matrix and buffers can be re-aimed between runs."""

    def set_matrix(self, matrix: EcMatrixHandle) -> None:
        """``doca_ec_task_<type>_set_*_matrix``."""
        ...
    def set_src(self, buf: BufHandle) -> None:
        """``doca_ec_task_<type>_set_*src*_buf``."""
        ...
    def set_dst(self, buf: BufHandle) -> None:
        """``doca_ec_task_<type>_set_*dst*_buf``."""
        ...


class EcHandle(CtxHandle, Protocol):
    """``doca_ec`` as a backend implements it."""

    @property
    def create(self) -> TaskPoolHandle:
        """Backend: the create task type (``doca_ec_task_create``)."""
    @property
    def recover(self) -> TaskPoolHandle:
        """Backend: the recover task type (``doca_ec_task_recover``)."""
    @property
    def update(self) -> TaskPoolHandle:
        """Backend: the update task type (``doca_ec_task_update``)."""
    @property
    def galois_mul(self) -> TaskPoolHandle:
        """Backend: the galois mul task type (``doca_ec_task_galois_mul``)."""
    def matrix_create(self, matrix_type: int, k: int, m: int) -> EcMatrixHandle:
        """``doca_ec_matrix_create``."""
    def matrix_create_from_raw(self, data: bytes, k: int, m: int) -> EcMatrixHandle:
        """``doca_ec_matrix_create_from_raw``."""
    def matrix_create_recover(self, coding: EcMatrixHandle, missing: list[int]) -> EcMatrixHandle:
        """``doca_ec_matrix_create_recover``."""
    def matrix_create_update(self, coding: EcMatrixHandle, updated: list[int]) -> EcMatrixHandle:
        """``doca_ec_matrix_create_update``."""
    def task_create_allocate_init(self, matrix: EcMatrixHandle, src: BufHandle, dst: BufHandle) -> EcTaskHandle:
        """``doca_ec_task_create_allocate_init``."""
    def task_recover_allocate_init(self, matrix: EcMatrixHandle, src: BufHandle, dst: BufHandle) -> EcTaskHandle:
        """``doca_ec_task_recover_allocate_init``."""
    def task_update_allocate_init(self, matrix: EcMatrixHandle, src: BufHandle, dst: BufHandle) -> EcTaskHandle:
        """``doca_ec_task_update_allocate_init``."""
    def task_galois_mul_allocate_init(self, matrix: EcMatrixHandle, src: BufHandle, dst: BufHandle) -> EcTaskHandle:
        """``doca_ec_task_galois_mul_allocate_init``."""


class EcBackend(Protocol):
    """Module ``doca_py.<impl>.ec``."""

    def ec_create(self, dev: DevHandle) -> EcHandle:
        """``doca_ec_ec_create``."""
    def cap_task_create_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_ec_cap_task_create_is_supported``."""
    def cap_task_recover_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_ec_cap_task_recover_is_supported``."""
    def cap_task_update_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_ec_cap_task_update_is_supported``."""
    def cap_task_galois_mul_is_supported(self, devinfo: DevInfoHandle) -> bool:
        """``doca_ec_cap_task_galois_mul_is_supported``."""
    def cap_get_max_block_size(self, devinfo: DevInfoHandle) -> int:
        """``doca_ec_cap_get_max_block_size``."""
    def cap_get_max_buf_list_len(self, devinfo: DevInfoHandle) -> int:
        """``doca_ec_cap_get_max_buf_list_len``."""


class CompressTaskHandle(TaskHandle, Protocol):
    """A compress task handle: checksums of the last success, LZ4 stream flags."""

    @property
    def crc_cs(self) -> int:
        """``doca_compress_task_<type>_get_crc_cs``."""
        ...
    @property
    def adler_cs(self) -> int:
        """``doca_compress_task_<type>_get_adler_cs``."""
        ...
    @property
    def xxh_cs(self) -> int:
        """``doca_compress_task_decompress_lz4_*_get_xxh_cs``."""
        ...
    #: ``doca_compress_task_decompress_lz4_stream_{get,set}_has_block_checksum``.
    has_block_checksum: bool
    #: ``doca_compress_task_decompress_lz4_stream_{get,set}_are_blocks_independent``.
    are_blocks_independent: bool
    def set_src(self, buf: BufHandle) -> None:
        """``doca_compress_task_<type>_set_src``."""
        ...
    def set_dst(self, buf: BufHandle) -> None:
        """``doca_compress_task_<type>_set_dst``."""
        ...


class CompressHandle(CtxHandle, Protocol):
    """``doca_compress`` as a backend implements it."""

    @property
    def compress_deflate(self) -> TaskPoolHandle:
        """Backend: the compress deflate task type (``doca_compress_task_compress_deflate``)."""
    @property
    def decompress_deflate(self) -> TaskPoolHandle:
        """Backend: the decompress deflate task type (``doca_compress_task_decompress_deflate``)."""
    @property
    def decompress_lz4_stream(self) -> TaskPoolHandle:
        """Backend: the decompress lz4 stream task type (``doca_compress_task_decompress_lz4_stream``)."""
    @property
    def decompress_lz4_block(self) -> TaskPoolHandle:
        """Backend: the decompress lz4 block task type (``doca_compress_task_decompress_lz4_block``)."""
    def task_compress_deflate_alloc_init(self, src: BufHandle, dst: BufHandle) -> CompressTaskHandle:
        """``doca_compress_task_compress_deflate_alloc_init``."""
    def task_decompress_deflate_alloc_init(self, src: BufHandle, dst: BufHandle) -> CompressTaskHandle:
        """``doca_compress_task_decompress_deflate_alloc_init``."""
    def task_decompress_lz4_stream_alloc_init(self, has_block_checksum: bool, are_blocks_independent: bool,
                                              src: BufHandle, dst: BufHandle) -> CompressTaskHandle:
        """``doca_compress_task_decompress_lz4_stream_alloc_init``."""
    def task_decompress_lz4_block_alloc_init(self, src: BufHandle, dst: BufHandle) -> CompressTaskHandle:
        """``doca_compress_task_decompress_lz4_block_alloc_init``."""
    def cap_get_max_num_tasks(self) -> int:
        """``doca_compress_cap_get_max_num_tasks``."""


class CompressBackend(Protocol):
    """Module ``doca_py.<impl>.compress``."""

    def compress_create(self, dev: DevHandle) -> CompressHandle:
        """``doca_compress_compress_create``."""
    def cap_task_is_supported(self, devinfo: DevInfoHandle, task: str) -> bool:
        """``doca_compress_cap_task_is_supported``."""
    def cap_task_get_max_buf_size(self, devinfo: DevInfoHandle, task: str) -> int:
        """``doca_compress_cap_task_get_max_buf_size``."""
    def cap_task_get_max_buf_list_len(self, devinfo: DevInfoHandle, task: str) -> int:
        """``doca_compress_cap_task_get_max_buf_list_len``."""
