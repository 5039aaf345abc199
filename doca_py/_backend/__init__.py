"""The one place that selects a backend and binds it to the typed contract (psycopg's ``pq`` package).

``DOCA_PY_IMPL=native|emulated|auto`` (psycopg's ``PSYCOPG_IMPL``) picks the backend at import:
``auto`` (the default) uses ``native`` when libdoca_common loads, else ``emulated``, saying why in an
INFO record on the ``doca_py`` logger (and in [`native_unavailable`][doca_py._backend.native_unavailable]);
a choice that cannot be honoured raises [`DocaImplError`][doca_py.errors.DocaImplError] (an ``ImportError``)
listing every attempt.

[`backend`][doca_py._backend.backend] exposes one attribute per DOCA library, typed with its
protocol from ``doca_py._backend.protocols``: ``backend.rdma`` is the selected backend's
``doca_py.<impl>.rdma`` module as an [`RdmaBackend`][doca_py._backend.protocols.rdma.RdmaBackend]. A
library module is imported on first use (an application that never touches comch never imports
it). Each attribute returns the native or the emulated module from one branch each, so mypy checks
*both* backends against the protocol here; there is no other static proof to keep in step.
"""

from __future__ import annotations

import importlib
import os
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

from ..errors import DocaImplError, DocaUsageError
from ..log import logger
from .protocols.comch import (
    ComchBackend,
    ComchClientHandle,
    ComchConnectionHandle,
    ComchConsumerHandle,
    ComchProducerHandle,
    ComchServerHandle,
)
from .protocols.core import (
    BufBackend,
    BufHandle,
    BufInventoryHandle,
    BufPoolBackend,
    DevBackend,
    DevHandle,
    DevInfoHandle,
    DevInfoRepHandle,
    DevRepHandle,
    MmapBackend,
    MmapHandle,
    PeBackend,
    PeHandle,
    VersionBackend,
)
from .protocols.engines import (
    CompressBackend,
    CompressHandle,
    DmaBackend,
    DmaHandle,
    EcBackend,
    EcHandle,
    EcMatrixHandle,
)
from .protocols.graph import GraphBackend
from .protocols.mmap_advise import MmapAdviseBackend, MmapAdviseHandle
from .protocols.rdma import RdmaBackend, RdmaHandle
from .protocols.rdma_sync_event import RdmaSyncEventBackend
from .protocols.sync_event import SyncEventBackend

__all__ = ["IMPLEMENTATIONS", "select", "impl", "native_unavailable", "Backend", "backend", "use"]

IMPLEMENTATIONS = ("native", "emulated")


def _native_problem() -> tuple[str, str] | None:
    """``None`` if the native backend can be used, else why not: ``(one line, every attempt)``."""
    try:
        loader = importlib.import_module("doca_py.native.loader")
    except ImportError as exc:  # the native layer itself is broken
        return f"cannot import doca_py.native.loader: {exc}", f"cannot import doca_py.native.loader: {exc}"
    try:
        loader.load("common")
    except loader.DocaLibraryNotFound as exc:
        return exc.summary(), str(exc)
    except Exception as exc:  # noqa: BLE001 - report whatever the loader says
        return f"{type(exc).__name__}: {exc}", f"{type(exc).__name__}: {exc}"
    return None


native_unavailable: str | None = None
"""Why ``DOCA_PY_IMPL=auto`` fell back to the emulated backend (one line), else ``None``."""


def select(requested: str | None = None) -> str:
    """Resolve *requested* (default: ``$DOCA_PY_IMPL`` or ``auto``) to a backend name.

    :raises DocaImplError: for an unknown name, or ``native`` when libdoca_common does not load (the
        message lists every file tried and why it failed).
    """
    global native_unavailable
    choice = (requested if requested is not None else os.environ.get("DOCA_PY_IMPL", "auto")).strip().lower()
    if choice in ("", "auto"):
        problem = _native_problem()
        if problem is None:
            native_unavailable = None
            return "native"
        native_unavailable = problem[0]
        logger.info("DOCA_PY_IMPL=auto: using the emulated backend; the native one did not load: %s", problem[1])
        return "emulated"
    if choice == "emulated":
        return "emulated"
    if choice == "native":
        problem = _native_problem()
        if problem is not None:
            raise DocaImplError(f"DOCA_PY_IMPL=native requested but the DOCA libraries are not usable: "
                                f"{problem[1]}")
        return "native"
    raise DocaImplError(f"DOCA_PY_IMPL={choice!r} is not one of: auto, {', '.join(IMPLEMENTATIONS)}")


class Backend:
    """The library modules of one backend, each typed with its protocol and imported on first use."""

    def __init__(self, name: str) -> None:
        if name not in IMPLEMENTATIONS:
            raise ValueError(f"unknown backend {name!r}")
        self.name = name
        """``"native"`` or ``"emulated"``."""

    @property
    def native(self) -> bool:
        """Whether this is the native (libdoca through ctypes) backend."""
        return self.name == "native"

    @cached_property
    def dev(self) -> DevBackend:
        """``doca_py.<impl>.dev``."""
        if self.native:
            from ..native import dev as n
            return n
        from ..emulated import dev as e
        return e

    @cached_property
    def mmap(self) -> MmapBackend:
        """``doca_py.<impl>.mmap``."""
        if self.native:
            from ..native import mmap as n
            return n
        from ..emulated import mmap as e
        return e

    @cached_property
    def buf(self) -> BufBackend:
        """``doca_py.<impl>.buf``."""
        if self.native:
            from ..native import buf as n
            return n
        from ..emulated import buf as e
        return e

    @cached_property
    def buf_pool(self) -> BufPoolBackend:
        """``doca_py.<impl>.buf_pool``."""
        if self.native:
            from ..native import buf_pool as n
            return n
        from ..emulated import buf_pool as e
        return e

    @cached_property
    def sync_event(self) -> SyncEventBackend:
        """``doca_py.<impl>.sync_event``."""
        if self.native:
            from ..native import sync_event as n
            return n
        from ..emulated import sync_event as e
        return e

    @cached_property
    def pe(self) -> PeBackend:
        """``doca_py.<impl>.pe``."""
        if self.native:
            from ..native import pe as n
            return n
        from ..emulated import pe as e
        return e

    @cached_property
    def version(self) -> VersionBackend:
        """``doca_py.<impl>.version``."""
        if self.native:
            from ..native import version as n
            return n
        from ..emulated import version as e
        return e

    @cached_property
    def dma(self) -> DmaBackend:
        """``doca_py.<impl>.dma``."""
        if self.native:
            from ..native import dma as n
            return n
        from ..emulated import dma as e
        return e

    @cached_property
    def graph(self) -> GraphBackend:
        """``doca_py.<impl>.graph``."""
        if self.native:
            from ..native import graph as n
            return n
        from ..emulated import graph as e
        return e

    @cached_property
    def mmap_advise(self) -> MmapAdviseBackend:
        """``doca_py.<impl>.mmap_advise``."""
        if self.native:
            from ..native import mmap_advise as n
            return n
        from ..emulated import mmap_advise as e
        return e

    @cached_property
    def ec(self) -> EcBackend:
        """``doca_py.<impl>.ec``."""
        if self.native:
            from ..native import ec as n
            return n
        from ..emulated import ec as e
        return e

    @cached_property
    def compress(self) -> CompressBackend:
        """``doca_py.<impl>.compress``."""
        if self.native:
            from ..native import compress as n
            return n
        from ..emulated import compress as e
        return e

    @cached_property
    def rdma(self) -> RdmaBackend:
        """``doca_py.<impl>.rdma``."""
        if self.native:
            from ..native import rdma as n
            return n
        from ..emulated import rdma as e
        return e

    @cached_property
    def rdma_sync_event(self) -> RdmaSyncEventBackend:
        """``doca_py.native.rdma_sync_event`` / ``doca_py.emulated.rdma.sync_event_tasks``: the rdma remote
        sync-event tasks."""
        if self.native:
            from ..native import rdma_sync_event as n
            return n
        from ..emulated.rdma import sync_event_tasks as e
        return e

    @cached_property
    def comch(self) -> ComchBackend:
        """``doca_py.<impl>.comch``."""
        if self.native:
            from ..native import comch as n
            return n
        from ..emulated import comch as e
        return e

    # -- borrowed native handles (``Cls.from_handle(address)``) ----------------------------------------
    # The native classes' ``from_ptr`` wraps a C object without owning it (doca_py.native.borrow).
    def _native_only(self, what: str) -> None:
        if not self.native:
            raise DocaUsageError(f"{what}: an int handle is the address of a native DOCA object; the "
                                 f"{self.name} backend's handles are objects (pass another wrapper's .handle)")

    def borrow_dev(self, ptr: int) -> DevHandle:
        """A borrowed handle of the ``doca_dev *`` at *ptr* (native backend only)."""
        self._native_only("Dev.from_handle")
        from ..native.dev import NativeDev
        return NativeDev.from_ptr(ptr)

    def borrow_devinfo(self, ptr: int) -> DevInfoHandle:
        """A handle of the ``doca_devinfo *`` at *ptr* (native backend only; a devinfo owns nothing)."""
        self._native_only("DevInfo.from_handle")
        from ..native.dev import NativeDevInfo
        return NativeDevInfo.from_ptr(ptr)

    def borrow_devinfo_rep(self, ptr: int) -> DevInfoRepHandle:
        """A handle of the ``doca_devinfo_rep *`` at *ptr* (native backend only; it owns nothing)."""
        self._native_only("DevInfoRep.from_handle")
        from ..native.dev import NativeDevInfoRep
        return NativeDevInfoRep.from_ptr(ptr)

    def borrow_dev_rep(self, ptr: int) -> DevRepHandle:
        """A borrowed handle of the ``doca_dev_rep *`` at *ptr* (native backend only)."""
        self._native_only("DevRep.from_handle")
        from ..native.dev import NativeDevRep
        return NativeDevRep.from_ptr(ptr)

    def borrow_mmap(self, ptr: int) -> MmapHandle:
        """A borrowed handle of the ``doca_mmap *`` at *ptr* (native backend only)."""
        self._native_only("Mmap.from_handle")
        from ..native.mmap import NativeMmap
        return NativeMmap.from_ptr(ptr)

    def borrow_buf_inventory(self, ptr: int) -> BufInventoryHandle:
        """A borrowed handle of the ``doca_buf_inventory *`` at *ptr* (native backend only)."""
        self._native_only("BufInventory.from_handle")
        from ..native.buf import NativeBufInventory
        return NativeBufInventory.from_ptr(ptr)

    def borrow_buf(self, ptr: int, inventory: BufInventoryHandle) -> BufHandle:
        """The handle of the ``doca_buf *`` at *ptr*, a buffer of *inventory* (native backend only)."""
        self._native_only("Buf.from_handle")
        from ..native.buf import NativeBufInventory
        from ..native.borrow import non_null
        if not isinstance(inventory, NativeBufInventory):
            raise DocaUsageError("Buf.from_handle: the inventory is not a native one")
        return inventory.wrap(non_null("Buf.from_handle", ptr))

    def borrow_pe(self, ptr: int) -> PeHandle:
        """A borrowed handle of the ``doca_pe *`` at *ptr* (native backend only)."""
        self._native_only("Pe.from_handle")
        from ..native.pe import NativePe
        return NativePe.from_ptr(ptr)

    def borrow_dma(self, ptr: int) -> DmaHandle:
        """A borrowed handle of the ``doca_dma *`` at *ptr* (native backend only)."""
        self._native_only("Dma.from_handle")
        from ..native.dma import NativeDma
        return NativeDma.from_ptr(ptr)

    def borrow_mmap_advise(self, ptr: int) -> MmapAdviseHandle:
        """A borrowed handle of the ``doca_mmap_advise *`` at *ptr* (native backend only)."""
        self._native_only("MmapAdvise.from_handle")
        from ..native.mmap_advise import NativeMmapAdvise
        return NativeMmapAdvise.from_ptr(ptr)

    def borrow_ec(self, ptr: int) -> EcHandle:
        """A borrowed handle of the ``doca_ec *`` at *ptr* (native backend only)."""
        self._native_only("Ec.from_handle")
        from ..native.ec import NativeEc
        return NativeEc.from_ptr(ptr)

    def borrow_ec_matrix(self, ptr: int, ec: EcHandle) -> EcMatrixHandle:
        """A borrowed handle of the ``doca_ec_matrix *`` at *ptr*, a matrix of *ec* (native backend only)."""
        self._native_only("EcMatrix.from_handle")
        from ..native.borrow import non_null
        from ..native.ec import NativeEc, NativeEcMatrix
        if not isinstance(ec, NativeEc):
            raise DocaUsageError("EcMatrix.from_handle: the Ec is not a native one")
        return NativeEcMatrix(non_null("EcMatrix.from_handle", ptr), ec)

    def borrow_compress(self, ptr: int) -> CompressHandle:
        """A borrowed handle of the ``doca_compress *`` at *ptr* (native backend only)."""
        self._native_only("Compress.from_handle")
        from ..native.compress import NativeCompress
        return NativeCompress.from_ptr(ptr)

    def borrow_rdma(self, ptr: int) -> RdmaHandle:
        """A borrowed handle of the ``doca_rdma *`` at *ptr* (native backend only)."""
        self._native_only("Rdma.from_handle")
        from ..native.rdma import NativeRdma
        return NativeRdma.from_ptr(ptr)

    def borrow_comch_server(self, ptr: int) -> ComchServerHandle:
        """A borrowed handle of the ``doca_comch_server *`` at *ptr* (native backend only)."""
        self._native_only("ComchServer.from_handle")
        from ..native.comch import NativeComchServer
        return NativeComchServer.from_ptr(ptr)

    def borrow_comch_client(self, ptr: int) -> ComchClientHandle:
        """A borrowed handle of the ``doca_comch_client *`` at *ptr* (native backend only)."""
        self._native_only("ComchClient.from_handle")
        from ..native.comch import NativeComchClient
        return NativeComchClient.from_ptr(ptr)

    def borrow_comch_consumer(self, ptr: int, conn: ComchConnectionHandle) -> ComchConsumerHandle:
        """A borrowed handle of the ``doca_comch_consumer *`` at *ptr*, made on *conn* (native backend only)."""
        self._native_only("ComchConsumer.from_handle")
        from ..native.comch_fastpath import NativeComchConsumer
        return NativeComchConsumer.from_ptr(ptr, conn)

    def borrow_comch_producer(self, ptr: int, conn: ComchConnectionHandle) -> ComchProducerHandle:
        """A borrowed handle of the ``doca_comch_producer *`` at *ptr*, made on *conn* (native backend only)."""
        self._native_only("ComchProducer.from_handle")
        from ..native.comch_fastpath import NativeComchProducer
        return NativeComchProducer.from_ptr(ptr, conn)

    def __repr__(self) -> str:
        return f"<doca_py backend {self.name}>"


impl: str = select()
"""The backend in use, ``"native"`` or ``"emulated"`` (chosen at import from ``DOCA_PY_IMPL``)."""

backend = Backend(impl)
"""The selected backend's library modules."""


def _preload(b: Backend) -> None:
    """Import every library module of *b* now (one that cannot load fails again on its first use)."""
    for name, attr in vars(Backend).items():
        if isinstance(attr, cached_property):
            try:
                getattr(b, name)
            except Exception:  # noqa: BLE001 - e.g. a DOCA library this install lacks: raised when used
                pass


# Free-threaded CPython 3.13 makes the code objects that exist when the first thread starts immortal; a
# module imported later keeps counted ones, so worker threads running its functions write the same
# reference counts on every call (measured: CPU per task x1.3-1.8 with two workers). An application
# imports doca_py before it starts its threads: the library modules, imported on first use elsewhere, are
# imported here then (mostly numpy's time, which the first Mmap takes anyway). CPython 3.14 counts code
# references per thread (gh-124218).
if sysconfig.get_config_var("Py_GIL_DISABLED") and sys.version_info[:2] == (3, 13):
    _preload(backend)


@contextmanager
def use(name: str) -> Iterator[Backend]:
    """Point the public object layer at backend *name* for the duration, then restore the selection.

    For test suites that run the same DOCA-semantics tests on both backends (``tests/conformance``).
    Objects created inside the block belong to *name*'s backend and must be closed inside it. Not
    thread-safe: nothing else may use ``doca_py`` meanwhile.
    """
    global impl
    import doca_py as pkg  # the public copy of the name (doca_py.impl)

    if name not in IMPLEMENTATIONS:
        raise ValueError(f"unknown backend {name!r}")
    saved, saved_impl = dict(vars(backend)), impl
    vars(backend).clear()  # the cached library modules of the other backend
    backend.name = impl = pkg.impl = name
    try:
        yield backend
    finally:
        vars(backend).clear()
        vars(backend).update(saved)
        impl = pkg.impl = saved_impl
