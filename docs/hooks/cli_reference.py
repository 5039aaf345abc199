"""mkdocs hook: the CLI reference and the man pages, generated from each program's build_parser().

``cli.md`` holds a ``<!-- cli-reference -->`` marker that becomes one section per
installed program of :data:`apps.common.cli.manpages.PROGRAMS` (its ``--help``); the man
pages (argparse-manpage, as the wheel installs them) go to ``<site>/man/<program>.1``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

MARKER = "<!-- cli-reference -->"


def _programs() -> list[tuple[str, str, Any]]:
    from apps.common.cli.manpages import PROGRAMS

    return [(prog, module, importlib.import_module(module).build_parser()) for prog, module in PROGRAMS.items()]


def on_config(config: Any, **_: Any) -> Any:
    """Fail at once, saying what to install, when the build cannot import what this hook needs (the
    apps' parsers, argparse-manpage): not with a traceback after rendering every page."""
    from mkdocs.exceptions import PluginError

    try:
        importlib.import_module("apps.common.cli.manpages")
        importlib.import_module("argparse_manpage.manpage")
    except ImportError as exc:
        raise PluginError(f"the docs build needs {exc.name or exc}, which is not installed: install the docs "
                          f"extra (pip install -e '.[docs]'), see docs/getting-started.md#the-documentation") from None
    return config


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    os.environ["COLUMNS"] = "100"  # stable wrapping of --help
    parts = []
    for prog, module, parser in _programs():
        parser.prog = prog  # the installed name, as in the man pages
        parts.append(f"## `{prog}`\n\nAlso `python -m {module.removesuffix('.tool')}`. "
                     f"Man page: `man/{prog}.1` in the built site, `man {prog}` once installed.\n\n"
                     f"```text\n{parser.format_help()}```\n")
    return markdown.replace(MARKER, "\n".join(parts))


def on_post_build(config: Any, **_: Any) -> None:
    from apps.common.cli.manpages import write_manpages

    write_manpages(Path(config["site_dir"]) / "man")
