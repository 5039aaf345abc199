"""Man pages for the console scripts, rendered by argparse-manpage from each ``build_parser()``.

```pycon
>>> from apps.sbc_generator import build_parser
>>> page = build_manpage(build_parser())          # roff text, section 1
>>> page.splitlines()[0].split()[:2]                # the title fits an 80-column header (TITLE_WIDTH)
['.TH', 'GGA_OFFLOAD_SBC_GENERATOR']

```

`PROGRAMS` maps each installed program (``[project.scripts]`` in pyproject.toml,
named like the DOCA binaries) to the module whose ``build_parser()`` describes it;
`write_manpages` writes one ``<program>.1`` each (the wheel build installs them
under ``share/man/man1``; the documentation build puts them in ``man/`` of the site).

argparse-manpage is a development and build dependency; it is imported only when a
page is built. (Its own command line names a page after the parser's ``prog``,
``python -m apps.…``, which is not a valid ``.TH`` title: use `write_manpages`.)
"""

from __future__ import annotations

import argparse
import copy
import importlib
from pathlib import Path
from typing import Any

import doca_py

__all__ = ["APPS", "PROGRAMS", "MANUAL", "TITLE_WIDTH", "man_title", "build_manpage", "write_manpages"]

APPS = ("apps.sbc_generator", "apps.storage_target", "apps.gga_offload", "apps.zero_copy", "apps.initiator",
        "apps.topology")
"""The storage apps' modules with a ``build_parser()`` (``python -m <module>``)."""

PROGRAMS: dict[str, str] = {
    "doca_storage_gga_offload_sbc_generator": "apps.sbc_generator",
    "doca_storage_target_rdma": "apps.storage_target",
    "doca_storage_comch_to_rdma_gga_offload": "apps.gga_offload",
    "doca_storage_comch_to_rdma_zero_copy": "apps.zero_copy",
    "doca_storage_initiator_comch": "apps.initiator",
    "doca_py_storage_topology": "apps.topology",
    "doca_file_compression": "apps.file_compression",
    "doca_secure_channel": "apps.secure_channel",
    "doca_py": "doca_py.tool",
}
"""Installed program name → module with ``build_parser()`` and ``main()`` (its console script)."""

MANUAL = "doca_py"
"""The manual every page belongs to (the centre of the header): short, so that the header fits."""

TITLE_WIDTH = 30
"""The longest ``.TH`` title. ``man`` prints ``TITLE(1)`` at both ends of the header, around the manual,
and at the right of the footer, after the date centred at column 40: at 80 columns a longer title
overlaps them (groff 1.22 does not abbreviate it)."""


def man_title(prog: str) -> str:
    """The ``.TH`` title of *prog*'s page: its name in capitals, without its leading words while longer than
    `TITLE_WIDTH` (``doca_storage_comch_to_rdma_gga_offload`` → ``COMCH_TO_RDMA_GGA_OFFLOAD``; the NAME
    section keeps the full name, and ``man`` finds the page by its file name)."""
    words = prog.upper().split("_")
    while len("_".join(words)) > TITLE_WIDTH and len(words) > 1:
        words.pop(0)
    return "_".join(words)


def program_name(module: str) -> str:
    """The installed program of *module* (``apps.storage_target`` → ``doca_storage_target_rdma``)."""
    for prog, mod in PROGRAMS.items():
        if mod == module:
            return prog
    raise KeyError(f"no program for module {module!r}")


def build_manpage(parser: argparse.ArgumentParser, *, prog: str | None = None, section: int = 1,
                  manual_title: str = MANUAL, description: str | None = None) -> str:
    """The roff source of *parser*'s man page.

    The page is named after *prog*; by default the installed program of a parser whose
    ``prog`` is ``python -m <module>`` (the ``.TH`` title must be one word), else the
    parser's own ``prog``. *parser* itself is not changed.
    """
    if prog is None:
        module = parser.prog.removeprefix("python -m ")
        prog = program_name(module) if module in PROGRAMS.values() else parser.prog
    parser = copy.copy(parser)
    parser.prog = prog
    manpage_mod: Any = importlib.import_module("argparse_manpage.manpage")
    page = manpage_mod.Manpage(parser)
    page.source = f"doca_py {doca_py.__version__}"
    page.manual = manual_title
    page.section = section
    page.description = description if description is not None else (parser.description or "").split("\n")[0]
    th, rest = str(page).split("\n", 1)
    fields = th.split(" ", 2)  # [".TH", title, '"1" "date" "source" "manual"']
    return " ".join([fields[0], man_title(prog), fields[2]]) + "\n" + rest


def write_manpages(directory: Path) -> list[Path]:
    """Write ``<program>.1`` for every program of `PROGRAMS` into *directory*; returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for prog, module in PROGRAMS.items():
        parser = importlib.import_module(module).build_parser()
        path = directory / f"{prog}.1"
        path.write_text(build_manpage(parser, prog=prog))
        written.append(path)
    return written
