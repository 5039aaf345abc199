"""mkdocs hook: the DOCA-name index (``api/doca-names.md``), C function → doca_py object, built from the
docstrings at each docs build, so it is never stale.

The convention it reads (tests/docs/test_doca_names.py holds every public method to it): the docstring of
each public method, property and function of the DOCA object layer (`LIBRARIES`) begins with the C
function(s) it calls, as code: ````doca_rdma_task_send_allocate_init``: …`` (several: ````doca_x`` /
``doca_y``: …``); one without a DOCA counterpart says ``Python-only`` instead. The page
``api/doca-names.md`` holds a ``<!-- doca-names -->`` marker that becomes one table per library.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- doca-names -->"
PYTHON_ONLY = "Python-only"
"""What the docstring of a public method without a DOCA function says."""

#: The modules of the DOCA object layer by library, in the order of the API reference's pages.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "DOCA Core (libdoca_common)": ("doca_py.dev", "doca_py.mmap", "doca_py.buf", "doca_py.buf_pool", "doca_py.pe",
                                   "doca_py.ctx", "doca_py.sync_event", "doca_py.version", "doca_py.errors",
                                   "doca_py.log"),
    "DOCA DMA (libdoca_dma)": ("doca_py.dma",),
    "DOCA mmap advise (libdoca_mmap_advise)": ("doca_py.mmap_advise",),
    "DOCA Graph (doca_graph.h, libdoca_common)": ("doca_py.graph",),
    "DOCA Erasure Coding (libdoca_erasure_coding)": ("doca_py.ec",),
    "DOCA Compress (libdoca_compress)": ("doca_py.compress",),
    "DOCA Comch (libdoca_comch)": ("doca_py.comch",),
    "DOCA RDMA (libdoca_rdma)": ("doca_py.rdma",),
}

_SPAN = r"``(doca_[\w<>|*]+)(?:\(\))?``"
_LEADING = re.compile(rf"{_SPAN}(?:\s*(?:/|,|or|and)\s*{_SPAN})*")
_NAME = re.compile(_SPAN)

class Member:
    """One documented public callable: where the reference renders it and what its docstring says."""

    __slots__ = ("library", "path", "owner", "doc")

    def __init__(self, library: str, path: str, owner: type | None, doc: str) -> None:
        self.library = library
        self.path = path
        """The identifier the API reference renders it under (``doca_py.rdma.Rdma.task_send_allocate_init``)."""
        self.owner = owner
        """The class that defines it (``None`` for a module function)."""
        self.doc = doc

    def __repr__(self) -> str:
        return f"Member({self.path})"

    @property
    def python_only(self) -> bool:
        return PYTHON_ONLY in self.doc

    def leading_names(self) -> list[str]:
        """The C functions (or patterns of them) the docstring begins with."""
        m = _LEADING.match(self.doc)
        return _NAME.findall(m.group(0)) if m else []

    def c_names(self, known: set[str]) -> dict[str, list[str]]:
        """Each leading name → the declared C functions it stands for. A pattern (``<type>`` or ``*``: any
        part of a name, ``<read|write>``: one of these) stands for the functions it matches; on a class,
        only those named after the class the member is rendered under
        (``doca_rdma_task_<type>_get_rdma_connection`` of ``RdmaTaskSend`` is
        ``doca_rdma_task_send_get_rdma_connection``; ``doca_<object>_destroy`` of ``Buf``, nothing)."""
        out: dict[str, list[str]] = {}
        for name in self.leading_names():
            if not re.search(r"[<>|*]", name):
                out[name] = [name] if name in known else []
                continue
            regex = re.compile(re.sub(r"<(\w+(?:\|\w+)+)>|<\w+>|\*",
                                      lambda m: f"(?:{m.group(1)})" if m.group(1) else r"\w+", name))
            matches = sorted(c for c in known if regex.fullmatch(c))
            prefix = self.class_prefix()
            out[name] = [c for c in matches if c.startswith(prefix)]
        return out

    def class_prefix(self) -> str:
        """``doca_<class in snake case>_`` of the class the member is rendered under (``""`` for a function)."""
        return "doca_" + _snake(self.path.split(".")[-2]) + "_" if self.owner is not None else ""

def c_functions() -> set[str]:
    """Every C function doca_py declares (the native raw layer's tables and DOCA's inline functions)."""
    from doca_py.native import capi

    return {decl.name for decls in capi.tables().values() for decl in decls} | set(capi.INLINE)


def _defined_here(obj: object) -> bool:
    return getattr(obj, "__module__", "").split(".")[0] == "doca_py"


def public_classes() -> dict[type, tuple[str, str]]:
    """Each public class of the DOCA object layer → (library, the module the reference renders it in)."""
    out: dict[type, tuple[str, str]] = {}
    for library, modules in LIBRARIES.items():
        for modname in modules:
            mod = importlib.import_module(modname)
            for name in mod.__all__:
                obj = getattr(mod, name)
                if inspect.isclass(obj) and _defined_here(obj) and not issubclass(obj, enum.Enum):
                    out.setdefault(obj, (library, modname))
    return out


def _callable_doc(raw: Any) -> str | None:
    if isinstance(raw, (classmethod, staticmethod)):
        raw = raw.__func__
    if isinstance(raw, property):
        raw = raw.fget
    if not (inspect.isfunction(raw) or inspect.ismethoddescriptor(raw)):
        return None
    return inspect.getdoc(raw) or ""


def members() -> Iterator[Member]:
    """Every public method, property and function of the DOCA object layer, once per class that the
    reference renders it under: at its defining class when that class is public, else at each public
    class that inherits it (``_Endpoint.task_send_alloc_init`` is ``ComchServer``'s and ``ComchClient``'s)."""
    classes = public_classes()
    for library, modules in LIBRARIES.items():
        for modname in modules:
            mod = importlib.import_module(modname)
            for name in mod.__all__:
                obj = getattr(mod, name)
                if inspect.isfunction(obj) and _defined_here(obj):
                    yield Member(library, f"{modname}.{name}", None, inspect.getdoc(obj) or "")
    for cls, (library, modname) in classes.items():
        for name in sorted(dir(cls)):
            if name.startswith("_"):
                continue
            owner = next((k for k in cls.__mro__ if name in vars(k)), None)
            if owner is None or not _defined_here(owner) or (owner is not cls and owner in classes):
                continue
            doc = _callable_doc(vars(owner)[name])
            if doc is not None:
                yield Member(library, f"{modname}.{cls.__name__}.{name}", owner, doc)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _longest_prefix(cname: str, group: list[Member]) -> list[Member]:
    """The members of *group* whose class name *cname* starts with, the longest such name only
    (``doca_rdma_task_write_imm_get_dst_buf`` is ``RdmaTaskWriteImm``'s, not ``RdmaTaskWrite``'s);
    all of *group* when it names none of their classes."""
    named = [(len(m.class_prefix()), m) for m in group if m.class_prefix() and cname.startswith(m.class_prefix())]
    if not named:
        return group
    longest = max(n for n, _ in named)
    return [m for n, m in named if n == longest]


def index() -> dict[str, list[Member]]:
    """C function → the members whose docstring begins with it (a pattern: with a function it stands for).
    A C name that several members list (a private base class's method rendered under each public
    class) goes to those of the class it names (``doca_dev_close`` to ``Dev.close`` only)."""
    known = c_functions()
    found: dict[str, list[Member]] = {}
    for member in members():
        if member.python_only:
            continue
        for cnames in member.c_names(known).values():
            for cname in cnames:
                group = found.setdefault(cname, [])
                if member not in group:
                    group.append(member)
    return {cname: _longest_prefix(cname, group) for cname, group in sorted(found.items())}


def own_names(idx: dict[str, list[Member]]) -> dict[str, list[str]]:
    """Member path → the C functions the index gives it."""
    out: dict[str, list[str]] = {}
    for cname, group in idx.items():
        for member in group:
            out.setdefault(member.path, []).append(cname)
    return out

def render(idx: dict[str, list[Member]]) -> str:
    """The tables of the index page: per library, each C function and the doca_py objects for it."""
    by_library: dict[str, list[tuple[str, list[Member]]]] = {lib: [] for lib in LIBRARIES}
    for cname, group in idx.items():
        by_library[group[0].library].append((cname, group))
    parts = []
    for library, rows in by_library.items():
        if not rows:
            continue
        parts.append(f"## {library}\n\n| DOCA function | doca_py |\n| --- | --- |")
        for cname, group in rows:
            links = ", ".join(f"[`{'.'.join(m.path.split('.')[-2:]) if m.owner else m.path}`][{m.path}]"
                              for m in group)
            parts.append(f"| `{cname}` | {links} |")
        parts.append("")
    return "\n".join(parts)


_cache: dict[str, Any] = {}


def _index() -> dict[str, list[Member]]:
    if "index" not in _cache:
        _cache["index"] = index()
    return _cache["index"]  # type: ignore[no-any-return]


def on_config(config: Any, **_: Any) -> Any:
    _cache.clear()  # `mkdocs serve` rebuilds after an edit
    return config


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render(_index()))


_HEADING = re.compile(r'<h\d id="(doca_py\.[\w.]+)"')
_LEAD_HTML = re.compile(r"<p>(?:<code>doca_[^<]+</code>(?:\s*(?:/|,|or|and)\s*(?=<code>doca_))?)+")


def _prefixes(cnames: list[str]) -> set[str]:
    """The names of *cnames* that begin another one (``doca_task_submit`` of ``doca_task_submit_ex``)."""
    ordered = sorted(cnames)
    return {a for a, b in zip(ordered, ordered[1:]) if b.startswith(a)}


def on_page_content(html: str, page: Any, **_: Any) -> str:
    """In the API reference, each member's docstring begins with its own C functions: a pattern or a
    list written once on a base class is shown, under each class, as the functions of that class
    (``RdmaTaskSend.get_rdma_connection``: ``doca_rdma_task_send_get_rdma_connection``), and the member
    the index gives a C function to carries it as a label in its heading, so that the search finds
    that member first (a heading is a search entry's title, weighted far above its text)."""
    if not page.file.src_uri.startswith("api/"):
        return html
    own = _cache.setdefault("own", own_names(_index()))
    prefixes = _cache.setdefault("prefixes", _prefixes(list(_index())))
    cuts = [(m.start(), m.group(1)) for m in _HEADING.finditer(html)]
    if not cuts:
        return html
    parts = [html[:cuts[0][0]]]
    for i, (start, path) in enumerate(cuts):
        end = cuts[i + 1][0] if i + 1 < len(cuts) else len(html)
        section = html[start:end]
        names = own.get(path)
        first = section.find("<p>")
        lead = _LEAD_HTML.match(section, first) if names and first >= 0 else None
        if lead:
            section = section[:first] + "<p>" + " / ".join(f"<code>{n}</code>" for n in names) + section[lead.end():]
        link = section.find(f'<a href="#{path}" class="headerlink"')
        if names and link >= 0:
            # A label in the heading, as mkdocstrings labels a property: the C name is then in the title of
            # the member's search entry, which the search weighs far above running text. The search adds a
            # trailing wildcard: doca_buf_set_data* also finds doca_buf_set_data_len, a rarer term, so scored
            # higher. Hidden copies of a name that begins another one outweigh that for its own member.
            labels = "".join(f'<small class="doc doc-label doc-label-doca"><code>{n}</code></small>' for n in names)
            hidden = "".join(f" <span hidden>{n}</span>" * 3 for n in names if n in prefixes)
            section = section[:link] + f'<span class="doc doc-labels">{labels}{hidden}</span>\n' + section[link:]
        parts.append(section)
    return "".join(parts)
