"""The native backend: the real DOCA libraries through ``ctypes``.

Importing this package (or any module under it) never touches the DOCA libraries, so
it works on machines without DOCA. The libraries are opened on first use by
:mod:`doca_py.native.loader`; a missing library becomes a
:class:`~doca_py.native.loader.DocaLibraryNotFound` (an ``ImportError``) at that point.

Layers, lowest first:

* :mod:`doca_py.native.loader` — finds and opens ``libdoca_*.so``, reads the runtime version.
* :mod:`doca_py.native.capi` — the public raw layer: every C function with its
  ``argtypes``/``restype`` chosen for the loaded DOCA version (like ``cuda.bindings``).
* :mod:`doca_py.native.inline` — Python versions of the header-inline C helpers.
* :mod:`doca_py.native.probe` — ``python -m doca_py.native.probe``: which declared
  symbols an installed DOCA exports, read from the ELF files without loading them.
"""

from __future__ import annotations

__all__: list[str] = []
