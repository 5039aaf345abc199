"""Imported by the test kit's zygote (``doca_py.testing.warm``) before it forks sides.

It imports doca_py, every module of the emulated backend and the side's own code, and creates
nothing: no DOCA object, no thread, no emulator state (a forked side must start clean).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from .. import emulated

# Every module of the emulated backend: a side imports them lazily (a ctx type on first use).
for _info in pkgutil.walk_packages(emulated.__path__, emulated.__name__ + "."):
    try:
        importlib.import_module(_info.name)
    except ImportError:  # an optional dependency missing: the side imports what it can itself
        pass

from . import knobs, pair  # noqa: E402,F401 - what a side runs
from ..emulated import trace  # noqa: E402

trace.skip_exit_write()  # under DOCA_PY_TRACE: the zygote runs no DOCA, its sides' events go to their parent

if threading.active_count() != 1:  # a fork copies no thread: the emulator must not start one at import
    raise RuntimeError(f"doca_py.testing: importing the emulator started threads {threading.enumerate()!r}")
