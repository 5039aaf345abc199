"""doca_py: a Pythonic binding of the NVIDIA DOCA SDK, with a software backend.

``doca_py.impl`` names the backend in use (``"native"`` or ``"emulated"``), chosen
by ``DOCA_PY_IMPL=native|emulated|auto`` at import. A value that cannot be honoured makes the import
raise [`DocaImplError`][doca_py.errors.DocaImplError].
"""

from __future__ import annotations

from .errors import DocaImplError as _DocaImplError

try:
    from ._backend import impl
except _DocaImplError as _exc:
    from ._program import exit_for_program

    exit_for_program(_exc)  # doca_py's own programs: a message and exit 2 instead of a traceback
    raise
from .buf import Buf, BufInventory, BufLane
from .buf_pool import BufPool
from .comch import (
    ComchClient,
    ComchConnection,
    ComchConsumer,
    ComchConsumerTaskPostRecv,
    ComchCounter,
    ComchOptions,
    ComchProducer,
    ComchProducerTaskSend,
    ComchServer,
    ComchTaskSend,
)
from .compress import (
    Compress,
    CompressTaskCompressDeflate,
    CompressTaskDecompressDeflate,
    CompressTaskDecompressLz4Block,
    CompressTaskDecompressLz4Stream,
    CompressTaskType,
)
from .ctx import Ctx, Task
from .dev import Dev, DevInfo, DevInfoRep, DevRep, devinfo_create_list
from .dma import Dma, DmaTaskMemcpy
from .mmap_advise import MmapAdvise, MmapAdviseTaskInvalidateCache
from .graph import Graph, GraphInstance, GraphNode
from .ec import Ec, EcMatrix, EcMatrixType, EcTaskCreate, EcTaskGaloisMul, EcTaskRecover, EcTaskUpdate
from .errors import DocaError, DocaImplError, DocaPyError, DocaTypeError, DocaUsageError, DocaWarning, ErrorCode
from .log import LogLevel, logger
from .mmap import Mmap
from .pe import Pe
from .sync_event import (
    SyncEvent,
    SyncEventCtx,
    SyncEventRemoteNet,
    SyncEventTaskGet,
    SyncEventTaskNotifyAdd,
    SyncEventTaskNotifySet,
    SyncEventTaskWaitEq,
    SyncEventTaskWaitGt,
    SyncEventTaskWaitNeq,
)
from .rdma import (
    Rdma,
    RdmaAddr,
    RdmaAddrType,
    RdmaConnection,
    RdmaOpcode,
    RdmaOptions,
    RdmaTaskAtomicCmpSwp,
    RdmaTaskAtomicFetchAdd,
    RdmaTaskRead,
    RdmaTaskRemoteNetSyncEventGet,
    RdmaTaskRemoteNetSyncEventNotifyAdd,
    RdmaTaskRemoteNetSyncEventNotifySet,
    RdmaTaskReceive,
    RdmaTaskSend,
    RdmaTaskSendImm,
    RdmaTaskWrite,
    RdmaTaskWriteImm,
    RdmaTransportType,
)
from .types import AccessFlag, CtxState, DevinfoRepFilter, PciFuncType, PeEventMode, TaskSubmitFlag
from .version import version_info_runtime, version_runtime

__all__ = [
    "impl", "__version__", "version_runtime", "version_info_runtime",
    "Dev", "DevInfo", "DevInfoRep", "DevRep", "devinfo_create_list",
    "Mmap", "BufInventory", "Buf", "BufLane", "BufPool", "Pe", "Ctx", "Task", "Dma", "DmaTaskMemcpy", "MmapAdvise",
    "MmapAdviseTaskInvalidateCache", "Graph", "GraphInstance", "GraphNode",
    "Ec", "EcMatrix", "EcMatrixType", "EcTaskCreate", "EcTaskRecover", "EcTaskUpdate", "EcTaskGaloisMul",
    "Compress", "CompressTaskCompressDeflate", "CompressTaskDecompressDeflate", "CompressTaskDecompressLz4Stream",
    "CompressTaskDecompressLz4Block", "CompressTaskType",
    "ComchServer", "ComchClient", "ComchConnection", "ComchConsumer", "ComchProducer", "ComchTaskSend",
    "ComchConsumerTaskPostRecv", "ComchProducerTaskSend", "ComchCounter", "ComchOptions",
    "Rdma", "RdmaOptions", "RdmaAddr", "RdmaAddrType", "RdmaConnection", "RdmaOpcode", "RdmaTransportType", "RdmaTaskReceive",
    "RdmaTaskSend", "RdmaTaskSendImm", "RdmaTaskRead", "RdmaTaskWrite", "RdmaTaskWriteImm", "RdmaTaskAtomicCmpSwp",
    "RdmaTaskAtomicFetchAdd", "RdmaTaskRemoteNetSyncEventGet", "RdmaTaskRemoteNetSyncEventNotifySet",
    "RdmaTaskRemoteNetSyncEventNotifyAdd",
    "SyncEvent", "SyncEventCtx", "SyncEventRemoteNet", "SyncEventTaskGet", "SyncEventTaskNotifySet",
    "SyncEventTaskNotifyAdd", "SyncEventTaskWaitEq", "SyncEventTaskWaitNeq", "SyncEventTaskWaitGt",
    "AccessFlag", "CtxState", "DevinfoRepFilter", "PciFuncType", "PeEventMode", "TaskSubmitFlag",
    "DocaPyError", "DocaError", "DocaUsageError", "DocaTypeError", "DocaImplError", "DocaWarning", "ErrorCode", "LogLevel", "logger",
]

__version__ = "0.1.0.dev0"
"""The version of doca_py itself (DOCA's is [`version_runtime`][doca_py.version.version_runtime])."""
