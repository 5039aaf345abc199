"""What every storage app and tool shares on its command line, without importing doca_py.

The exit status of a usage error (`EXIT_USAGE`, 2, as argparse and ``python -m doca_py`` use), a
parser that reports several problems, and the name the user typed (`command_name`). Kept free of
doca_py so that ``apps.topology``, which runs every process on the emulated backend whatever
``DOCA_PY_IMPL`` says, does not pick a backend for itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["EXIT_USAGE", "UsageParser", "command_name"]

EXIT_USAGE = 2
"""Exit status of a usage error (a bad flag or flag value) in every app and tool; ``python -m doca_py``
and a ``DOCA_PY_IMPL`` that cannot be honoured use the same (``doca_py._program.EXIT_USAGE``, which
this module does not import)."""


class UsageParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that can report several problems at once; exits with `EXIT_USAGE`."""

    def error(self, message: str) -> NoReturn:
        """Print usage and *message*, exit 2."""
        self.fail([message])

    def fail(self, messages: Sequence[str]) -> NoReturn:
        """Print usage and one ``<prog>: error:`` line per message, exit 2."""
        self.print_usage(sys.stderr)
        for m in messages:
            sys.stderr.write(f"{self.prog}: error: {m}\n")
        sys.exit(EXIT_USAGE)


def command_name(default: str) -> str:
    """The program's name as the user typed it: the basename of ``sys.argv[0]`` for an installed
    script, *default* (``python -m <module>``) when run with ``-m`` or ``-c``."""
    argv0 = sys.argv[0] if sys.argv else ""
    base = os.path.basename(argv0)
    return default if base in ("", "-c", "-m", "__main__.py") else base
