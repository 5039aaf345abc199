"""The emulated ``rdma`` and ``comch`` packages: one direction of dependency, no shared private names.

Each package lists its files bottom-up in ``LAYERS`` (its ``__init__``). A file may import
only files listed before it, type-only (``TYPE_CHECKING``) imports included; a lower file
reaches a higher one only through an interface handed down to it. No private name (leading
underscore, not a dunder) defined in one file of a package is used by another file of it:
what is shared carries a public name. The checks parse the package sources with :mod:`ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import doca_py.emulated

EMULATED = Path(doca_py.emulated.__file__).parent
PACKAGES = ("rdma", "comch")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules(package: str) -> dict[str, ast.Module]:
    return {
        path.stem: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for path in sorted((EMULATED / package).glob("*.py"))
    }


def _layers(package: str, modules: dict[str, ast.Module]) -> list[str]:
    """The ``LAYERS`` tuple of the package's ``__init__``, bottom-up."""
    for node in modules["__init__"].body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "LAYERS" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple) and all(isinstance(v, str) for v in value)
            return list(value)
    raise AssertionError(f"doca_py.emulated.{package} defines no LAYERS")


def _sibling_imports(tree: ast.Module) -> list[tuple[int, str, list[str]]]:
    """(line, sibling module, imported names) for every ``from .x import ...`` and
    ``from . import x``, wherever it stands (function bodies and TYPE_CHECKING blocks too)."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level != 1:
            continue
        names = [a.name for a in node.names]
        if node.module is None:
            found.extend((node.lineno, name, []) for name in names)
        else:
            found.append((node.lineno, node.module.split(".")[0], names))
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _defined_private(tree: ast.Module) -> set[str]:
    """Private names a file defines: at module level, in its classes (methods, class
    attributes) and as attributes of ``self``/``cls`` assigned in its methods. A
    declaration under ``TYPE_CHECKING`` defines nothing: it states what another file defines."""
    names: set[str] = set()

    def targets(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, ast.Assign):
            return list(node.targets)
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            return [node.target]
        return []

    def flat(exprs: list[ast.expr]) -> list[ast.expr]:
        out: list[ast.expr] = []
        for e in exprs:
            out.extend(flat(list(e.elts)) if isinstance(e, (ast.Tuple, ast.List)) else [e])
        return out

    def scope(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            if isinstance(node, ast.ClassDef):
                scope(node.body)
            for t in flat(targets(node)):
                if isinstance(t, ast.Name):
                    names.add(t.id)
            if isinstance(node, ast.If) and not _type_checking(node):  # platform branches
                scope(node.body + node.orelse)

    scope(tree.body)
    for node in ast.walk(tree):
        for t in flat(targets(node)):
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id in ("self", "cls")
            ):
                names.add(t.attr)
    return {n for n in names if _private(n)}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_file_has_a_layer(package: str) -> None:
    modules = _modules(package)
    layers = _layers(package, modules)
    assert sorted(layers) == sorted(modules), "LAYERS must list each file of the package once"
    assert layers[-1] == "__init__"
    doc = ast.get_docstring(modules["__init__"]) or ""
    assert " → ".join(layers[:-1]) in doc, "the package docstring states the layer order"


def _upward(modules: dict[str, ast.Module], layers: list[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(layers)}
    return [
        f"{name}.py:{line} imports .{target}"
        for name, tree in modules.items()
        for line, target, _ in _sibling_imports(tree)
        if target in rank and rank[target] >= rank[name]
    ]


def _crossings(modules: dict[str, ast.Module]) -> list[str]:
    defined = {name: _defined_private(tree) for name, tree in modules.items()}
    crossings: list[str] = []
    for name, tree in modules.items():
        elsewhere = {n for other, ns in defined.items() if other != name for n in ns} - defined[name]
        for line, target, imported in _sibling_imports(tree):
            if _private(target):
                crossings.append(f"{name}.py:{line} imports module .{target}")
            crossings.extend(
                f"{name}.py:{line} imports {n} from .{target}" for n in imported if _private(n)
            )
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in elsewhere:
                crossings.append(f"{name}.py:{node.lineno} uses .{node.attr}")
    return crossings


@pytest.mark.parametrize("package", PACKAGES)
def test_no_file_imports_a_higher_layer(package: str) -> None:
    modules = _modules(package)
    upward = _upward(modules, _layers(package, modules))
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_crosses_a_file(package: str) -> None:
    crossings = _crossings(_modules(package))
    assert not crossings, "private names used across files:\n" + "\n".join(crossings)


def test_the_checks_see_what_they_look_for() -> None:
    """Both checks flag each kind of offence, a type-only import and a declaration included."""
    sources = {
        "low": """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from .high import High
_limit = 4
class Low:
    def __init__(self, owner: High) -> None:
        self._owner = owner
        owner._poke()
""",
        "high": """
from .low import Low, _limit
from . import low
class High:
    if TYPE_CHECKING:
        _owner: object
    def _poke(self) -> None:
        low.Low(self)._owner
""",
    }
    modules = {name: ast.parse(src) for name, src in sources.items()}
    assert _upward(modules, ["low", "high"]) == ["low.py:4 imports .high"]
    assert _upward(modules, ["high", "low"]) == ["high.py:2 imports .low", "high.py:3 imports .low"]
    assert sorted(_crossings(modules)) == [
        "high.py:2 imports _limit from .low", "high.py:8 uses ._owner", "low.py:9 uses ._poke",
    ]
