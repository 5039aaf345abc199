"""``python -m apps.topology`` (installed as ``doca_py_storage_topology``)."""

from __future__ import annotations

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
