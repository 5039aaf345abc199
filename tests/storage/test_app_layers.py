"""The applications' layers: no app imports another app, and what they share has one home.

``apps.common`` (what every app shares, as NVIDIA's ``applications/common``) imports no app and
not ``apps.storage``; ``apps.storage`` (what only the storage apps share) imports ``apps.common``
only; an app imports ``apps.common``, ``apps.storage`` if it is a storage app, and itself. Every
import counts, wherever it stands (function bodies and ``TYPE_CHECKING`` blocks too), and
``importlib.import_module("apps.…")`` with a literal name as well. The checks parse the sources
with :mod:`ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import apps

APPS = Path(apps.__file__).parent
SHARED = ("common", "storage")
#: The apps that may use the storage apps' shared code (the topology runs them, so it may too).
STORAGE_APPS = {"storage_target", "gga_offload", "zero_copy", "initiator", "sbc_generator", "topology"}


def _package_of(path: Path) -> str:
    return path.relative_to(APPS).parts[0]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(APPS.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import of an ``apps`` module in *path*."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = _module_name(path).split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in found if name == "apps" or name.startswith("apps.")]


def _allowed(importer: str, imported: str) -> bool:
    if imported == importer or imported == "common":
        return True
    if imported == "storage":
        return importer in STORAGE_APPS or importer == "storage"
    return False


def _sources() -> list[Path]:
    return sorted(p for p in APPS.rglob("*.py") if len(p.relative_to(APPS).parts) > 1)


def test_the_rules_see_every_app() -> None:
    packages = {_package_of(p) for p in _sources()}
    assert set(SHARED) <= packages
    assert STORAGE_APPS - packages == set(), "a storage app listed here no longer exists"
    assert {"file_compression", "secure_channel"} <= packages


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(APPS.parent)))
def test_imports_follow_the_layers(path: Path) -> None:
    importer = _package_of(path)
    bad = []
    for line, name in _imports(path):
        parts = name.split(".")
        if len(parts) < 2:
            bad.append(f"line {line}: imports the apps package itself")
            continue
        imported = parts[1]
        if importer == "common" and imported != "common":
            bad.append(f"line {line}: apps.common imports {name}")
        elif importer == "storage" and imported not in SHARED:
            bad.append(f"line {line}: apps.storage imports {name}")
        elif not _allowed(importer, imported):
            bad.append(f"line {line}: apps.{importer} imports {name}")
    assert not bad, "\n".join(bad)


def test_a_violation_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: a sibling import, relative or absolute, is found."""
    app = tmp_path / "apps" / "secure_channel"
    app.mkdir(parents=True)
    (tmp_path / "apps" / "__init__.py").write_text("")
    src = app / "control.py"
    src.write_text("from ..file_compression.control import x\nimport apps.storage.wire\n"
                   "def f():\n    from apps.common.cli import argp\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["APPS"]), "APPS", tmp_path / "apps")
    assert _imports(src) == [(1, "apps.file_compression.control"), (2, "apps.storage.wire"),
                             (4, "apps.common.cli")]
    assert not _allowed("secure_channel", "file_compression")
    assert not _allowed("secure_channel", "storage")
    assert _allowed("secure_channel", "common")
