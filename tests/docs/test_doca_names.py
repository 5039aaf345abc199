"""Every public method names its DOCA C function, the DOCA-name index maps each C function to its
doca_py object, and the search box of the built site finds a method by its C name first (issue 35
item 17).

The convention (docs/hooks/doca_names.py, which also makes the index page at each build): the docstring
of each public method, property and function of the DOCA object layer begins with the C function(s) it
calls, as code (````doca_pe_progress``: …``; a pattern such as ````doca_rdma_task_<type>_get_rdma_connection````
on a base class stands for each subclass's own), or says ``Python-only``.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("doca_names_hook", ROOT / "docs" / "hooks" / "doca_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


names = _hook()


def test_every_public_method_names_its_doca_function_or_says_python_only() -> None:
    known = names.c_functions()
    members = list(names.members())
    assert len(members) > 400
    unnamed, unknown = [], []
    for member in members:
        if member.python_only:
            continue
        cnames = member.c_names(known)
        if not any(cnames.values()):
            unnamed.append(f"{member.path}: {member.doc.splitlines()[0] if member.doc else '(no docstring)'}")
        # a name written out must be a function doca_py declares (a typo, or a function DOCA lacks, fails)
        unknown += [f"{member.path}: {n}" for n, found in cnames.items() if not found and not re.search(r"[<>|*]", n)]
    assert not unnamed, f"{len(unnamed)} public methods name no DOCA function and do not say Python-only:\n" + \
        "\n".join(unnamed)
    assert not unknown, "C names that doca_py does not declare:\n" + "\n".join(unknown)


def test_the_index_gives_each_function_to_its_own_class() -> None:
    idx = names.index()
    paths = {cname: [m.path for m in group] for cname, group in idx.items()}
    assert paths["doca_rdma_task_send_allocate_init"] == ["doca_py.rdma.Rdma.task_send_allocate_init"]
    assert paths["doca_rdma_task_send_get_rdma_connection"] == ["doca_py.rdma.RdmaTaskSend.get_rdma_connection"]
    assert paths["doca_rdma_task_write_imm_get_dst_buf"] == ["doca_py.rdma.RdmaTaskWriteImm.get_dst_buf"]
    assert paths["doca_sync_event_task_wait_neq_get_mask"] == ["doca_py.sync_event.SyncEventTaskWaitNeq.get_mask"]
    assert paths["doca_comch_client_set_max_msg_size"] == ["doca_py.comch.ComchClient.set_max_msg_size"]
    assert paths["doca_dev_close"] == ["doca_py.dev.Dev.close"]
    assert paths["doca_mmap_destroy"] == ["doca_py.mmap.Mmap.close"]
    assert paths["doca_comch_cap_get_max_clients"] == ["doca_py.comch.cap_get_max_clients"]
    assert len(idx) > 300


def _pages(site: Path) -> dict[str, str]:
    """Anchor (a member's path) → the page location the search index uses for it (``api/rdma/#…``)."""
    out = {}
    for page in (site / "api").glob("*/index.html"):
        for anchor in re.findall(r'id="(doca_py\.[\w.]+)"', page.read_text(encoding="utf-8")):
            out.setdefault(anchor, f"api/{page.parent.name}/#{anchor}")
    return out


def test_the_index_page_links_each_function_to_its_object(site: Path) -> None:
    page = (site / "api" / "doca-names" / "index.html").read_text(encoding="utf-8")
    rows = dict(re.findall(r"<tr>\s*<td><code>(doca_\w+)</code></td>\s*<td>(.*?)</td>\s*</tr>", page, flags=re.S))
    idx = names.index()
    assert set(rows) == set(idx)
    assert 'href="../rdma/#doca_py.rdma.Rdma.task_send_allocate_init"' in rows["doca_rdma_task_send_allocate_init"]
    for cname, group in idx.items():
        for member in group:
            assert f'#{member.path}"' in rows[cname], (cname, member.path)


def test_each_member_shows_its_own_function(site: Path) -> None:
    page = (site / "api" / "rdma" / "index.html").read_text(encoding="utf-8")

    def first_paragraph(anchor: str) -> str:
        section = page[page.index(f'id="{anchor}"'):]
        return html.unescape(re.sub(r"<[^>]+>", "", section[section.index("<p>"):section.index("</p>")]))

    assert first_paragraph("doca_py.rdma.RdmaTaskSend.get_rdma_connection") \
        .startswith("doca_rdma_task_send_get_rdma_connection: ")
    assert first_paragraph("doca_py.rdma.RdmaTaskWriteImm.get_dst_buf").startswith("doca_rdma_task_write_imm_get_dst_buf: ")
    # no pattern is left where the class has its own function
    own = names.own_names(names.index())
    for anchor, cnames in own.items():
        if f'id="{anchor}"' in page:
            assert "<" not in first_paragraph(anchor).split(":")[0], anchor


def test_the_search_index_holds_each_function_in_its_method(site: Path) -> None:
    entries = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    by_location = {e["location"]: e["text"] for e in entries}
    pages = _pages(site)
    missing = [(cname, m.path) for cname, group in names.index().items() for m in group
               if cname not in by_location.get(pages.get(m.path, ""), "")]
    assert not missing, missing[:20]


def test_the_search_box_finds_the_method_first(site: Path) -> None:
    """mkdocs-material's search worker itself (node), on the built site: the first result for every C name
    of the index is the doca_py object for it."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed: the site's search worker cannot run here")
    idx = names.index()
    pages = _pages(site)
    out = subprocess.run([node, str(ROOT / "tests" / "docs" / "search_worker.js"), str(site), *idx],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    wrong = []
    for cname, group in idx.items():
        first = results[cname][0][0]["location"] if results[cname] else None
        if first not in {pages.get(m.path) for m in group}:
            wrong.append(f"{cname}: first {first}, expected {[m.path for m in group]}")
    assert not wrong, f"{len(wrong)} of {len(idx)}:\n" + "\n".join(wrong[:30])
    assert results["doca_rdma_task_send_allocate_init"][0][0]["location"] == \
        "api/rdma/#doca_py.rdma.Rdma.task_send_allocate_init"
