"""``python -m doca_py``: the device tool (`doca_py.tool`)."""

from __future__ import annotations

import sys

from .tool import main

if __name__ == "__main__":
    try:
        sys.exit(main(prog="python -m doca_py"))
    except BrokenPipeError:  # "| head": not an error worth a traceback
        sys.exit(1)
