"""Build steps that pyproject.toml cannot declare; the metadata is all in pyproject.toml.

* ``build_manpages``, a ``build`` sub-command: renders the man page of every console
  script from its ``build_parser()`` (:mod:`apps.common.cli.manpages`) into
  ``<build>/man/`` and installs them as data files under ``share/man/man1``, so a
  wheel carries ``doca_py-<v>.data/data/share/man/man1/*.1``. It imports the apps,
  so it needs the runtime dependencies and argparse-manpage: they are build
  requirements. Editable installs run it too, so ``pip install -e .`` (and
  ``tasks.py``'s ``.venv``) puts the pages in ``<venv>/share/man/man1``, where ``man``
  finds them when ``<venv>/bin`` is on ``PATH``.
* Editable installs default to ``editable_mode=compat``: a plain ``.pth`` with the
  checkout's path, which type checkers follow, instead of setuptools' import hook,
  which mypy cannot see through (``mypy --strict`` on a program using doca_py then
  finds the package and its ``py.typed``). setuptools calls the mode transitional:
  its warning is silenced here, and should it drop the mode, editable installs fall
  back to its default (``--config-settings editable_mode=strict`` also suits mypy).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

from setuptools import Command, setup
from setuptools.command.build import build

ROOT = Path(__file__).resolve().parent


class build_manpages(Command):  # noqa: N801 - setuptools command names are lower case
    description = "render the console scripts' man pages (section 1)"
    user_options: list[tuple[str, str | None, str]] = []

    def initialize_options(self) -> None:
        self.build_base: str | None = None
        self.editable_mode = False  # set by setuptools for editable installs

    def finalize_options(self) -> None:
        self.set_undefined_options("build", ("build_base", "build_base"))

    def run(self) -> None:
        if os.environ.get("DOCA_PY_SKIP_MANPAGES") == "1":
            return  # tasks.py's first pass into a new venv: the apps' dependencies are not there yet
        os.environ.setdefault("DOCA_PY_IMPL", "emulated")  # the pages do not depend on the backend
        sys.path.insert(0, str(ROOT))
        try:
            from apps.common.cli.manpages import write_manpages
        finally:
            sys.path.remove(str(ROOT))
        assert self.build_base is not None
        out = Path(self.build_base) / "man" / "man1"
        pages = write_manpages(out)
        for page in pages:
            print(f"man page: {page}")
        self.distribution.data_files = [("share/man/man1", [str(p) for p in pages])]
        if self.editable_mode:
            # setuptools' editable wheel does not run install_data (its has_data_files hook is gone): put
            # the pages straight into the wheel's data directory, which it packs as they are
            data = Path(self.get_finalized_command("install").install_data) / "share" / "man" / "man1"
            data.mkdir(parents=True, exist_ok=True)
            for page in pages:
                shutil.copyfile(page, data / page.name)


class build_with_manpages(build):  # noqa: N801
    sub_commands = [("build_manpages", None), *build.sub_commands]


def _editable_options() -> dict[str, Any]:
    try:
        from setuptools.command.editable_wheel import _EditableMode
    except ImportError:
        return {}
    if "COMPAT" not in _EditableMode.__members__:
        return {}
    warnings.filterwarnings("ignore", message="Compat editable installs")
    return {"editable_wheel": {"mode": "compat"}}


setup(
    cmdclass={"build": build_with_manpages, "build_manpages": build_manpages},
    options=_editable_options(),
)
