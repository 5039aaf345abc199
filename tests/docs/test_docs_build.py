"""Building the docs from a fresh clone (issue 35 item 18) and reading them (item 17's testing guide).

* The ``docs`` extra (and ``dev``, which holds it) provides every distribution the build imports:
  ``pip install -e '.[docs]'`` in a fresh virtual environment is all `mkdocs build` needs. The build
  of tests/docs/conftest.py records what it imported; a module counts when its distribution is
  reachable from the extra and the runtime dependencies.
* A tool missing from the environment stops the build at once with a message naming the extra.
* The README and the getting-started guide give the one command.
* No code line of the testing guide is wider than its code block (80 columns, below).
"""

from __future__ import annotations

import html
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, Build, run_mkdocs

if sys.version_info >= (3, 11):
    import tomllib
else:  # 3.10: the same parser, as the tomli package (a dev dependency there)
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
COMMAND = ("python3 -m venv .venv-docs && .venv-docs/bin/pip install -e '.[docs]' && "
           ".venv-docs/bin/mkdocs build --strict")
#: Widest code line mkdocs-material shows without a scroll bar, with both sidebars (a screen of 76.25em
#: or more): content 61rem - 2 x 12.1rem (sidebars) - 2 x 1.2rem (margins) = 34.4rem, less the code
#: block's padding (2 x 1.1765em of .68rem code = 1.6rem) = 32.8rem, at 0.6em per monospace character of
#: .68rem = 0.408rem: 80 characters (every size in rem, so at any of the theme's font sizes).
CODE_COLUMNS = 80
#: Formatters mkdocstrings imports when they are installed; the build works without them.
OPTIONAL = {"black", "ruff"}


def _requirement_closure(requirements: list[str], extra: str = "") -> set[str]:
    """The canonical names of *requirements* (evaluated with *extra*) and of all they require, as installed."""
    requirements_mod = pytest.importorskip("packaging.requirements")
    utils = pytest.importorskip("packaging.utils")
    names: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(text, extra) for text in requirements]
    while todo:
        text, context = todo.pop()
        req = requirements_mod.Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": context}):
            continue
        name = utils.canonicalize_name(req.name)
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(name)
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [(sub, e) for sub in dist.requires or [] for e in {"", *req.extras}]
    return names


def test_the_docs_extra_provides_what_the_build_imports(build: Build) -> None:
    utils = pytest.importorskip("packaging.utils")
    project = PYPROJECT["project"]
    provided = _requirement_closure(project["dependencies"]) | _requirement_closure(
        project["optional-dependencies"]["docs"], "docs") | {"doca-py"}
    owners = importlib.metadata.packages_distributions()
    missing = {}
    for module in build.imported:
        dists = {utils.canonicalize_name(d) for d in owners.get(module, [])}
        if dists and not dists & (provided | OPTIONAL):
            missing[module] = sorted(dists)
    assert not missing, f"the docs build imports modules no requirement of the docs extra provides: {missing}"
    assert {"mkdocs", "material", "mkdocstrings", "argparse_manpage"} <= set(build.imported)


def test_dev_holds_the_docs_extra() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras["docs"]) <= set(extras["dev"])  # tasks.py installs dev and builds the docs


def test_a_missing_docs_tool_is_named_with_the_extra(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    proc = run_mkdocs("build", "--site-dir", str(tmp_path / "site"), record=tmp_path / "imported.json",
                      prelude="import sys; sys.modules['argparse_manpage'] = None  # not installed\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the docs build needs argparse_manpage" in proc.stderr and "pip install -e '.[docs]'" in proc.stderr, \
        proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]


def test_the_command_is_documented() -> None:
    for doc in ("README.md", "docs/getting-started.md"):
        assert COMMAND in (ROOT / doc).read_text(), doc
    readme = (ROOT / "README.md").read_text()
    # the two main commands stay as they are
    assert "python3 tasks.py run     # main job" in readme and "python3 tasks.py test    # the whole test suite" in readme


def _code_lines(page: str) -> list[str]:
    lines = []
    for block in re.findall(r"<pre[^>]*>(.*?)</pre>", page, flags=re.S):
        text = html.unescape(re.sub(r"<[^>]+>", "", block))
        lines += text.split("\n")
    return lines


def test_no_code_line_of_the_testing_guide_is_clipped(site: Path) -> None:
    page = (site / "testing" / "index.html").read_text(encoding="utf-8")
    lines = _code_lines(page)
    assert any("def run_dpu(" in line for line in lines)  # the included application is there
    wide = [line for line in lines if len(line.rstrip()) > CODE_COLUMNS]
    assert not wide, f"{len(wide)} code lines wider than {CODE_COLUMNS} columns:\n" + "\n".join(wide)
