"""The tests read nothing outside the repository, so they run the same in a clone and in the sdist.

An AST scan of every ``tests/**/*.py``: no path climbs above the repository root
(``Path(__file__).parents[k]``, ``.parent`` and ``os.path.dirname`` chains, also through a
name such as ``ROOT``), no ``..`` path part, and no reference to the design notes that live
next to a checkout (``shared/design``: the facts the tests need are copied under tests/, see
tests/native/capi_inventory.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
OUTSIDE_NOTES = "shared/design"


def _levels(node: ast.AST, names: dict[str, int]) -> int | None:
    """How many directories above ``__file__`` the path expression *node* is, or None if it is
    not one (``__file__`` itself is 0, its directory 1)."""
    if isinstance(node, ast.Name):
        return 0 if node.id == "__file__" else names.get(node.id)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        up = _levels(node.value, names)
        return None if up is None else up + 1
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
        up = _levels(node.value.value, names)
        return None if up is None else up + node.slice.value + 1
    if isinstance(node, ast.Call):
        func = node.func
        fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if fname in ("resolve", "absolute") and isinstance(func, ast.Attribute) and not node.args:
            return _levels(func.value, names)
        if fname in ("Path", "PurePath", "abspath", "realpath") and len(node.args) == 1:
            return _levels(node.args[0], names)
        if fname == "dirname" and len(node.args) == 1:
            up = _levels(node.args[0], names)
            return None if up is None else up + 1
    return None


def _assigned_levels(tree: ast.AST) -> dict[str, int]:
    """Names bound to a path relative to ``__file__`` (``ROOT = Path(__file__).parents[2]``)."""
    names: dict[str, int] = {}
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    for _ in range(4):  # names defined through other names
        for node in assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assert node.value is not None
            up = _levels(node.value, names)
            if up is not None:
                names.update((t.id, up) for t in targets if isinstance(t, ast.Name))
    return names


def escapes(source: str, relpath: Path) -> list[str]:
    """Where *source*, the file at *relpath* in the repository, refers to a path outside it."""
    tree = ast.parse(source, str(relpath))
    depth = len(relpath.parts)  # levels up from the file to the repository root
    names = _assigned_levels(tree)
    out = []
    for node in ast.walk(tree):
        where = f"{relpath}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if OUTSIDE_NOTES in text:
                out.append(f"{where}: refers to {OUTSIDE_NOTES} (outside the repository)")
            if text == ".." or text.startswith("../") or "/../" in text:
                out.append(f"{where}: a '..' path part")
        elif isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            up = _levels(node, names)
            if up is not None and up > depth and not (
                    isinstance(node, ast.Call) and _levels(_inner(node), names) == up):
                out.append(f"{where}: climbs {up - depth} level(s) above the repository root")
    return out


def _inner(node: ast.Call) -> ast.AST:
    # Path(x), x.resolve(): the same level as x, reported once, at x.
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute"):
        return func.value
    return node.args[0] if node.args else node


def test_no_test_reads_outside_the_repository() -> None:
    # Not this file: its examples are escapes on purpose.
    sources = sorted(p for p in TESTS.rglob("*.py") if p != Path(__file__).resolve())
    assert len(sources) > 100
    problems = [p for path in sources for p in escapes(path.read_text(encoding="utf-8"), path.relative_to(ROOT))]
    assert problems == []


@pytest.mark.parametrize("snippet", [
    'DOC = Path(__file__).parents[2].parent / "x.md"',
    'ROOT = Path(__file__).resolve().parents[2]\nDOC = ROOT.parent / "x.md"',
    'HERE = Path(__file__).parent\nUP = HERE.parents[2]',
    'D = Path(__file__).parent.parent.parent.parent',
    'D = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))',
    'DOC = ROOT / ".." / "x.md"',
    'DOC = "../notes/x.md"',
    'open("/work/" + "shared/design/doca-c-api.md")',
])
def test_the_scan_catches_escapes(snippet: str) -> None:
    assert escapes(snippet, Path("tests/native/test_x.py")) != []


def test_the_scan_allows_paths_inside_the_repository() -> None:
    ok = ('ROOT = Path(__file__).resolve().parents[2]\nA = ROOT / "tests" / "data"\n'
          'B = Path(__file__).parent / "data"\nC = os.path.dirname(os.path.dirname(__file__))\n')
    assert escapes(ok, Path("tests/native/test_x.py")) == []
    # The same climb from a file one level higher leaves the repository.
    assert escapes(ok, Path("tests/test_x.py")) == ["tests/test_x.py:1: climbs 1 level(s) above the repository root"]
