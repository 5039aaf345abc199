"""``libdoca``: DOCA's C libraries served by the emulator, for the native path without a DPU.

```sh
python -m doca_py libdoca --out DIR [--doca-version 2.6|3.0|3.2]
DOCA_PY_IMPL=native DOCA_PY_LIBDIR=DIR/lib python -m apps.topology
```

``DIR/lib`` holds ``libdoca_common``, ``_dma``, ``_compress``, ``_erasure_coding``, ``_rdma`` and
``_comch`` (2.6: ``_cc``) with the sonames and exactly the ``doca_*`` symbols that DOCA version exports,
generated from the declaration tables of [`doca_py.native.capi`][doca_py.native.capi]
([`cgen`][doca_py.libdoca.cgen]). Each function is served by the emulated backend in the calling process
([`serve`][doca_py.libdoca.serve]): handles are stable pointers, out-parameters are written, callbacks
are called from C inside ``doca_pe_progress``, a ``doca_buf``'s data pointer is the bytes, and a DOCA
error code is returned for every failure. A C program links against it as against DOCA and starts the
emulator's Python itself (``DIR/include`` has the headers).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .build import VERSIONS, BuildError, NoCompiler, build, cached

__all__ = ["build", "cached", "main", "NoCompiler", "BuildError", "VERSIONS"]


def main(argv: Sequence[str] | None = None, prog: str = "python -m doca_py libdoca") -> int:
    """``python -m doca_py libdoca``: build into ``--out``; exit 2 without a C compiler."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Build DOCA's shared libraries (and headers) served by doca_py's emulator.")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="where to write lib/, include/ and src/")
    parser.add_argument("--doca-version", choices=VERSIONS, default=None,
                        help="the DOCA version presented (default: the emulator's, DOCA_PY_EMU_VERSION or 3.2)")
    args = parser.parse_args(argv)
    try:
        lib = build(args.out, args.doca_version)
    except NoCompiler as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except BuildError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    print(lib)
    return 0
