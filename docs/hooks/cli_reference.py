"""mkdocs hook: the CLI reference and the man pages, generated from each app's build_parser().

``cli.md`` holds a ``<!-- cli-reference -->`` marker that becomes one section per app
(its ``--help``); the man pages (argparse-manpage) go to ``<site>/man/<app>.1``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

MARKER = "<!-- cli-reference -->"


def _apps() -> list[tuple[str, Any]]:
    from apps.storage.manpages import APPS

    return [(name, importlib.import_module(name).build_parser()) for name in APPS]


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    os.environ["COLUMNS"] = "100"  # stable wrapping of --help
    parts = []
    for name, parser in _apps():
        parts.append(f"## `python -m {name}`\n\nMan page: `man/{name.split('.')[-1]}.1` in the built site.\n\n"
                     f"```text\n{parser.format_help()}```\n")
    return markdown.replace(MARKER, "\n".join(parts))


def on_post_build(config: Any, **_: Any) -> None:
    from apps.storage.manpages import build_manpage

    out = Path(config["site_dir"]) / "man"
    out.mkdir(parents=True, exist_ok=True)
    for name, parser in _apps():
        (out / f"{name.split('.')[-1]}.1").write_text(build_manpage(parser))
