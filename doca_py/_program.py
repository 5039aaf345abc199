"""``import doca_py`` in one of doca_py's own programs when ``DOCA_PY_IMPL`` cannot be honoured.

The programs (``python -m doca_py``, ``python -m apps.<app>`` and their console scripts) import
doca_py before their ``main`` runs, so the [`DocaImplError`][doca_py.errors.DocaImplError] would end
them with an import traceback. Instead they print the message on stderr and exit with status 2
(a usage error); the device tool's ``probe``, which reads the libraries without loading them, still
runs first. Any other importer gets the exception.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import entry_points

from .errors import DocaImplError

__all__ = ["EXIT_USAGE", "started_program", "exit_for_program"]

EXIT_USAGE = 2
"""Exit status of a usage error in every doca_py and storage-app program."""

_OURS = ("doca_py", "apps.")
_PROBES = ("doca_py.native.probe",)
_TOOLS = ("doca_py", "doca_py.__main__", "doca_py.tool")


def _module_of_dash_m(argv: list[str]) -> tuple[str, list[str]] | None:
    for i, token in enumerate(argv[1:], 1):
        if token == "-m":
            return (argv[i + 1], argv[i + 2:]) if i + 1 < len(argv) else None
        if token.startswith("-m"):
            return token[2:], argv[i + 1:]
    return None


def started_program() -> tuple[str, list[str]] | None:
    """``(module, arguments)`` when this process is one of doca_py's programs, else ``None``.

    ``python -m X`` imports X's packages while ``sys.argv[0]`` is still ``"-m"`` (X comes from
    ``sys.orig_argv``); a console script is found by its name among the installed entry points.
    """
    argv = sys.argv
    if argv and argv[0] == "-m":
        found = _module_of_dash_m(list(sys.orig_argv))
    else:
        script = os.path.basename(argv[0]) if argv else ""
        found = None
        for ep in entry_points(group="console_scripts", name=script) if script else ():
            found = ep.value.split(":")[0], argv[1:]
            break
    if found is None or not (found[0] == _OURS[0] or found[0].startswith((_OURS[0] + ".", _OURS[1]))):
        return None
    return found


def exit_for_program(exc: DocaImplError) -> None:
    """In one of doca_py's programs: print *exc* on stderr and exit 2 (after the probe, for ``probe``).
    Elsewhere: return, and the caller re-raises."""
    started = started_program()
    if started is None:
        return
    module, args = started
    sys.stderr.write(f"doca_py: {exc}\n")
    probe_args = args if module in _PROBES else args[1:] if module in _TOOLS and args[:1] == ["probe"] else None
    if probe_args is not None:
        sys.stderr.flush()
        from .native import probe  # reads ELF files; needs no backend

        probe.main(probe_args)
    raise SystemExit(EXIT_USAGE)
