"""Internal: the core backend protocols' old home, kept for backend modules that import it.

The backend contract lives in ``doca_py._backend.protocols``; import it from there. Nothing here is public API.
"""

from __future__ import annotations

from ._backend.protocols.core import BufBackend as BufBackend
from ._backend.protocols.core import BufHandle as BufHandle
from ._backend.protocols.core import BufInventoryHandle as BufInventoryHandle
from ._backend.protocols.core import Completion as Completion
from ._backend.protocols.core import CtxHandle as CtxHandle
from ._backend.protocols.core import DevBackend as DevBackend
from ._backend.protocols.core import DevHandle as DevHandle
from ._backend.protocols.core import DevInfoHandle as DevInfoHandle
from ._backend.protocols.core import DevInfoRepHandle as DevInfoRepHandle
from ._backend.protocols.core import DevRepHandle as DevRepHandle
from ._backend.protocols.core import MmapBackend as MmapBackend
from ._backend.protocols.core import MmapHandle as MmapHandle
from ._backend.protocols.core import PeBackend as PeBackend
from ._backend.protocols.core import PeHandle as PeHandle
from ._backend.protocols.core import TaskHandle as TaskHandle
