"""The rendered API reference (docs/api/, one page per DOCA library) shows every public name of doca_py.

One strict mkdocs build per session (a warning fails it, tests/docs/conftest.py); then every name in the
``__all__`` of the public modules, and every public member of their classes (methods, properties,
attributes, enum members, inherited ones included), must have its anchor on one of the API pages, and
no raw Sphinx role or unfenced ``>>>`` example may be left in them. The same build checks what else the
site publishes.
"""

from __future__ import annotations

import enum
import html
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parents[2]

#: The modules whose ``__all__`` the reference must cover (each has a ``::: module`` in docs/api/).
PUBLIC_MODULES = [
    "doca_py.dev", "doca_py.mmap", "doca_py.buf", "doca_py.pe", "doca_py.ctx", "doca_py.dma", "doca_py.mmap_advise", "doca_py.graph",
    "doca_py.ec",
    "doca_py.compress", "doca_py.comch", "doca_py.rdma", "doca_py.errors", "doca_py.types", "doca_py.log",
    "doca_py.memory", "doca_py.version", "doca_py.aio",
    "doca_py.engines", "doca_py.engines.checksums", "doca_py.engines.deflate", "doca_py.engines.ec",
    "doca_py.engines.gf256", "doca_py.engines.lz4_stream",
    "doca_py.native.capi",
    "doca_py.testing.plugin", "doca_py.testing.pair", "doca_py.testing.knobs", "doca_py.testing.warm",
    "doca_py.emulated.trace", "doca_py.testing.tracecheck",
    "apps.storage.wire.control", "apps.storage.channels.control_channel", "apps.storage.wire.io_message", "apps.storage.wire.addressing",
    "apps.storage.wire.sbc", "apps.storage.wire.compressed_block", "apps.common.errors",
]

ROLE_RE = re.compile(r":(?:py:)?(?:meth|class|func|attr|data|mod|exc|obj|const):`")


@pytest.fixture(scope="session")
def api_html(site: Path) -> str:
    """Every page of the API reference, one after the other."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((site / "api").rglob("index.html")))


def _anchors(page: str) -> set[str]:
    """The ids on the page, plus every ``<code>NAME</code>`` mention."""
    return set(re.findall(r'id="([^"]+)"', page)) | set(re.findall(r"<code>[A-Za-z_][A-Za-z0-9_]*</code>", page))


def _defined_here(obj: object) -> bool:
    return getattr(obj, "__module__", "").split(".")[0] in ("doca_py", "apps")


def _owner(cls: type, name: str) -> type | None:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _expected() -> dict[str, set[str]]:
    """public name -> the anchors any one of which must be on the page."""
    expected: dict[str, set[str]] = {}
    for modname in PUBLIC_MODULES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            obj = getattr(mod, name)
            cands = {f"{modname}.{name}"}
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and _defined_here(obj):
                cands.add(f"{obj.__module__}.{obj.__qualname__}")
            if not (inspect.isclass(obj) or callable(obj)):
                # a constant bound by tuple unpacking has no anchor: its module docstring names it
                cands.add(f"<code>{name}</code>")
            expected[f"{modname}.{name}"] = cands
            if not (inspect.isclass(obj) and _defined_here(obj)):
                continue
            members = set(dir(obj)) | (set(obj.__members__) if issubclass(obj, enum.Enum) else set())
            for member in sorted(members):
                if member.startswith("_"):
                    continue
                owner = _owner(obj, member)
                if owner is not None and not _defined_here(owner):
                    continue  # inherited from the standard library (Exception.args, int.bit_length, …)
                expected[f"{modname}.{name}.{member}"] = {f"{c}.{member}" for c in cands if not c.startswith("<")}
    return expected


def test_build_is_clean(site: Path) -> None:
    assert (site / "api" / "index.html").is_file()


def test_one_page_per_library_and_no_internals(site: Path, api_html: str) -> None:
    pages = {p.parent.name: p.stat().st_size for p in (site / "api").glob("*/index.html")}
    assert {"core", "errors", "dma", "mmap-advise", "graph", "ec", "compress", "comch", "rdma", "doca-names"} <= set(pages)
    assert max(pages.values()) < 1_000_000, pages  # was one page of 2.8 MB
    ids = set(re.findall(r'id="([^"]+)"', api_html))
    internal = sorted(i for i in ids if i.startswith(("doca_py._backend", "doca_py.native.borrow",
                                                      "doca_py.native.capi.gen_stubs")))
    assert not internal, internal[:10]
    # each library's classes are on its own page
    rdma = (site / "api" / "rdma" / "index.html").read_text(encoding="utf-8")
    assert 'id="doca_py.rdma.Rdma.task_send_allocate_init"' in rdma and 'id="doca_py.dma.Dma"' not in rdma


def test_every_public_name_is_rendered(api_html: str) -> None:
    anchors = _anchors(api_html)
    missing = sorted(name for name, cands in _expected().items() if not cands & anchors)
    assert not missing, f"{len(missing)} public names not on the API page:\n" + "\n".join(missing)


def test_package_exports_are_rendered(api_html: str) -> None:
    import doca_py

    anchors = _anchors(api_html)
    missing = []
    for name in doca_py.__all__:
        obj = getattr(doca_py, name)
        cands = {f"doca_py.{name}"}
        if inspect.isclass(obj) or inspect.isfunction(obj):
            cands.add(f"{obj.__module__}.{obj.__qualname__}")
        cands |= {f"{m}.{name}" for m in PUBLIC_MODULES if name in importlib.import_module(m).__all__}
        if not cands & anchors:
            missing.append(name)
    assert not missing


def test_error_classes_are_rendered(api_html: str) -> None:
    from doca_py import errors

    anchors = _anchors(api_html)
    classes = [errors.DocaError, errors.DocaUsageError, errors.DocaWarning, *errors.DocaError._registry.values()]
    assert len(classes) > 30
    assert not [c.__name__ for c in classes if f"doca_py.errors.{c.__name__}" not in anchors]


def test_no_raw_sphinx_roles(api_html: str) -> None:
    text = html.unescape(re.sub(r"<[^>]+>", "", api_html))
    assert not ROLE_RE.findall(text)
    assert ":meth:" not in api_html and ":class:" not in api_html


def test_examples_render_as_code(api_html: str) -> None:
    # every ``>>>`` prompt is inside a code block, none in running text
    for para in re.findall(r"<p>(.*?)</p>", api_html, flags=re.S):
        assert "&gt;&gt;&gt;" not in para, para[:200]
    assert api_html.count("&gt;&gt;&gt;") > 5


def test_search_index_has_doca_names(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = json.dumps(index)
    for word in ("open_by_pci_addr", "doca_mmap_add_dev", "doca_dev_open", "DocaBadState"):
        assert word in text, word


def test_the_site_publishes_no_build_code(site: Path) -> None:
    # docs/hooks/cli_reference.py builds the CLI reference; mkdocs would copy it as a static file
    assert not [p.relative_to(site) for p in site.rglob("*.py")]
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "usage: doca_storage_target_rdma " in cli and "usage: python -m apps." not in cli

