"""Man pages for the storage apps, rendered by argparse-manpage from each ``build_parser()``.

>>> from apps.sbc_generator import build_parser
>>> page = build_manpage(build_parser())          # roff text, section 1

The same pages can be produced with argparse-manpage's own command line::

    argparse-manpage --module apps.sbc_generator --function build_parser \\
        --project-name doca_py --manual-title "DOCA storage apps" --output man/sbc_generator.1

or declared under ``[tool.build_manpages]`` in pyproject.toml as
``"man/<app>.1:module=apps.<app>:function=build_parser"``. argparse-manpage is a
development dependency; it is imported only when a page is built.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import doca_py

__all__ = ["APPS", "build_manpage"]

APPS = ("apps.sbc_generator", "apps.storage_target", "apps.gga_offload", "apps.initiator")
"""Modules with a ``build_parser()`` (the other storage apps add themselves here)."""


def build_manpage(parser: argparse.ArgumentParser, *, section: int = 1,
                  manual_title: str = "DOCA storage apps (doca_py)", description: str | None = None) -> str:
    """The roff source of *parser*'s man page."""
    manpage_mod: Any = importlib.import_module("argparse_manpage.manpage")
    page = manpage_mod.Manpage(parser)
    page.source = f"doca_py {doca_py.__version__}"
    page.manual = manual_title
    page.section = section
    page.description = description if description is not None else (parser.description or "").split("\n")[0]
    return str(page)
