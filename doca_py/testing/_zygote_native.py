"""Imported by a zygote for native sides (``doca_py.testing.warm``, ``--doca-impl native``), after
``_zygote``: the native backend's modules and libdoca's serving modules, so that a native side forked from it
starts as fast as an emulated one. Nothing is loaded: no DOCA library is opened (a side opens the one its
environment names), no libdoca is attached, no thread starts.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from .. import native
from ..libdoca import serve

for _info in pkgutil.walk_packages(native.__path__, native.__name__ + "."):
    if _info.name.endswith(".probe"):  # a command-line tool
        continue
    try:
        importlib.import_module(_info.name)
    except ImportError:
        pass
for _name in serve.MODULES:
    try:
        importlib.import_module(f"{serve.__name__}.{_name}")
    except ModuleNotFoundError:  # a library libdoca does not serve yet
        pass

if "common" in getattr(importlib.import_module("doca_py.native.loader"), "_cache", {}):
    raise RuntimeError("doca_py.testing: importing the native backend loaded a DOCA library")
if threading.active_count() != 1:
    raise RuntimeError(f"doca_py.testing: importing the native backend started threads {threading.enumerate()!r}")
