"""The Python samples of the README and of ``docs/*.md`` run, as their readers would run them.

Every fenced ````python`` block is run as a script of its own, in a subprocess on the emulated
backend in strict mode with shuffled completions, and must exit 0 without a traceback or a
``ResourceWarning``. A block that cannot run on its own -- a fragment using names defined
elsewhere, one side of a two-process exchange, a sample for the native backend or a BlueField --
says so in the Markdown, on the line right before its fence::

    <!-- not run: needs a peer process -->

:func:`test_every_python_block_is_run_or_marked` keeps that deliberate: a marker needs a reason and
must sit right before a Python block, so a new sample is either run or marked on purpose.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.multiprocess

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TIMEOUT = 30.0  # seconds, for one sample

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})[ \t]*(?P<lang>[^\s`]*)[^`]*$")
MARKER = re.compile(r"^\s*<!--\s*not run\s*:(?P<reason>.*?)-->\s*$")
PYTHON = {"python", "py", "python3", "pycon"}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip_reason: str | None  # the reason of a ``<!-- not run: ... -->`` marker right before the fence
    marked: bool  # a marker is there (its reason may still be empty)

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def extract(path: Path) -> tuple[list[Block], list[int]]:
    """The fenced blocks of *path*, and the lines of markers that precede no fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    stray: list[int] = []
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or not FENCE.match(lines[j]):
                stray.append(i + 1)
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        ticks, indent = m["ticks"], len(m["indent"])
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^[ \t]*{re.escape(ticks[0])}{{{len(ticks)},}}[ \t]*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1  # the closing fence
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        before = MARKER.match(lines[k]) if k >= 0 else None
        blocks.append(Block(path, start + 1, m["lang"].lower(), "\n".join(body) + "\n",
                            before["reason"].strip() if before else None, before is not None))
    return blocks, stray


def python_blocks() -> list[Block]:
    return [b for path in DOCS for b in extract(path)[0] if b.lang in PYTHON]


BLOCKS = python_blocks()


def test_every_python_block_is_run_or_marked() -> None:
    assert len(BLOCKS) >= 10, [b.id for b in BLOCKS]  # the extraction still finds the samples
    problems = [f"{b.id}: '<!-- not run: -->' without a reason" for b in BLOCKS if b.marked and not b.skip_reason]
    for path in DOCS:
        blocks, stray = extract(path)
        problems += [f"{path.relative_to(ROOT)}:{n}: a 'not run' marker before no code block" for n in stray]
        problems += [f"{b.id}: a 'not run' marker on a {b.lang or 'plain'} block (only Python blocks are run)"
                     for b in blocks if b.marked and b.lang not in PYTHON]
    assert not problems, "\n".join(problems)
    assert any(b.skip_reason is None for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_sample_runs(block: Block) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"marked 'not run: {block.skip_reason}'")
    with tempfile.TemporaryDirectory(prefix="doca-doc-") as tmp:
        script = Path(tmp) / "sample.py"
        script.write_text(block.code, encoding="utf-8")
        env = dict(os.environ)
        env.update(DOCA_PY_IMPL="emulated", DOCA_PY_STRICT="1", DOCA_PY_EMU_SHUFFLE="1",
                   DOCA_PY_EMU_SEED=os.environ.get("DOCA_PY_EMU_SEED", "1"), DOCA_PY_COMCH_DIR=tmp,
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
                   PYTHONWARNINGS="error::ResourceWarning", PYTHONDONTWRITEBYTECODE="1")
        try:
            proc = subprocess.run([sys.executable, str(script)], cwd=tmp, env=env, text=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{block.id} did not finish within {TIMEOUT} s:\n{exc.output}\n--- sample ---\n{block.code}")
    out = proc.stdout
    assert proc.returncode == 0, f"{block.id} exited with {proc.returncode}:\n{out}\n--- sample ---\n{block.code}"
    assert "Traceback" not in out and "ResourceWarning" not in out, f"{block.id}:\n{out}"


def test_the_docs_say_what_tasks_run_runs() -> None:
    import inspect

    import tasks

    assert '"apps.topology"' in inspect.getsource(tasks.run)
    for doc in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        line = next(x for x in doc.read_text().splitlines() if x.startswith("python3 tasks.py run "))
        assert "topology" in line and "demo" not in line, (doc.name, line)
