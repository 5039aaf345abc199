"""The C API inventory the declaration tables are checked against: §2 (function tables) and §6
(2.6 ↔ 3.x differences) of the design document ``doca-c-api.md``, copied into the repository as
``data/doca-c-api-inventory.md`` so that the checks run in any clone and in the sdist."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

DOC = Path(__file__).with_name("data") / "doca-c-api-inventory.md"


def lines() -> list[str]:
    """The inventory's lines."""
    return DOC.read_text(encoding="utf-8").splitlines()


def numbered(doc: list[str]) -> Iterator[tuple[str, str]]:
    """``(section number, line)`` for every line under a ``### N.M`` heading (headings excluded)."""
    section = ""
    for line in doc:
        head = re.match(r"^### (\d+\.\d+) ", line)
        if head:
            section = head.group(1)
        elif line.startswith("#"):
            section = ""
        elif section:
            yield section, line


def section(doc: list[str], number: str) -> list[str]:
    """The lines of section ``number`` (e.g. ``"2.9"``)."""
    out = [line for n, line in numbered(doc) if n == number]
    assert out, f"§{number} not found; update this parser"
    return out


def function_rows(doc: list[str], numbers: set[str] | tuple[str, ...]) -> Iterator[tuple[str, list[str]]]:
    """``(section number, cells)`` of every function-table row (``| 12 | `doca_x` | …``) of the
    sections *numbers*, in document order."""
    for number, line in numbered(doc):
        if number in numbers and re.match(r"^\| \d+ \| `", line):
            yield number, [c.strip() for c in line.strip().strip("|").split("|")]


def params(cell: str) -> list[str]:
    """The parameter types of a table's parameter cell, without ``void`` (and without ``...``)."""
    return [p.strip() for p in cell.split(",") if p.strip() not in ("void", "", "...")]
