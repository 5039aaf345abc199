"""Report which declared DOCA functions an installation exports, without loading it.

::

    python -m doca_py.native.probe [--json] [LIBDIR_OR_FILE ...]

Reads the dynamic symbol table (``.dynsym``) of every ``libdoca_*.so*`` in the given
directories (default: the loader's [`search_dirs`][doca_py.native.loader.search_dirs]) with
pyelftools — nothing is ``dlopen``-ed, so a library built for another distribution
or CPU can be inspected too. For each library it prints the file, the version (file
name suffix and ``SONAME``), how many functions of the declaration table
([`doca_py.native.capi.tables`][doca_py.native.capi.tables]) are present, and the declared-but-missing ones.

Exit status: 0 when at least one library was read and every file could be read;
1 when no DOCA library was found or a file is not a readable ELF object; 2 on
bad usage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .capi._decl import Decl

__all__ = ["LibReport", "build_parser", "scan", "read_library", "main"]

_NAME = re.compile(r"^libdoca_(?P<lib>[A-Za-z0-9_]+?)\.so(?:\.(?P<ver>\d+(?:\.\d+)*))?$")
_FUNC_TYPES = ("STT_FUNC", "STT_GNU_IFUNC")


@dataclass
class LibReport:
    """What the probe found in one library file."""

    lib: str
    path: str
    aliases: list[str] = field(default_factory=list)
    version: str | None = None
    soname: str | None = None
    error: str | None = None
    exported: int = 0
    declared: int | None = None
    present: int = 0
    missing: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)


def _version_tuple(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    parts = text.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


def _dynamic_symbols(elf: ELFFile) -> tuple[set[str], str | None]:
    """Defined function names of ``.dynsym`` and the ``DT_SONAME``."""
    names: set[str] = set()
    soname = None
    for section in elf.iter_sections():
        if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
            for sym in section.iter_symbols():
                if sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["type"] in _FUNC_TYPES and sym.name:
                    names.add(sym.name)
        elif isinstance(section, DynamicSection):
            for tag in section.iter_tags("DT_SONAME"):
                soname = str(getattr(tag, "soname", "")) or None
    return names, soname


def read_library(path: Path, table: Sequence[Decl] | None) -> LibReport:
    """Read one ELF file and compare its exports with *table* (``None``: no table)."""
    m = _NAME.match(path.name)
    report = LibReport(lib=m.group("lib") if m else path.name, path=str(path))
    ver = m.group("ver") if m else None
    report.version = ver if ver and ver.count(".") >= 2 else None
    try:
        with path.open("rb") as fh:
            names, report.soname = _dynamic_symbols(ELFFile(fh))
    except OSError as exc:
        report.error = f"cannot read: {exc.strerror or exc}"
        return report
    except Exception as exc:  # noqa: BLE001 - pyelftools raises many types on bad input
        report.error = f"not a readable ELF shared object ({type(exc).__name__}: {exc})"
        return report
    if report.version is None and report.soname:
        sm = _NAME.match(report.soname)
        report.version = sm.group("ver") if sm else None
    doca = {n for n in names if n.startswith("doca_")}
    report.exported = len(doca)
    if table is not None:
        declared = {d.name for d in table}
        report.declared = len(declared)
        report.present = len(declared & names)
        report.missing = sorted(declared - names)
        report.undeclared = sorted(doca - declared)
    return report


def _annotate(decl: Decl, version: tuple[int, int] | None) -> str:
    if decl.platform is not None:
        return f"{decl.name} (expected: {decl.availability()})"
    if decl.since is not None and version is not None and version < decl.since:
        return f"{decl.name} (expected: from {decl.since[0]}.{decl.since[1]})"
    if decl.until is not None and version is not None and version > decl.until:
        return f"{decl.name} (expected: up to {decl.until[0]}.{decl.until[1]})"
    return decl.name


def _candidates(targets: Iterable[Path], notes: list[str]) -> list[tuple[Path, list[str]]]:
    """Unique real files among the targets, each with the names that point to it."""
    by_real: dict[Path, list[str]] = {}
    for target in targets:
        if target.is_file():
            files = [target]
        elif target.is_dir():
            files = sorted(p for p in target.iterdir() if _NAME.match(p.name))
        else:
            notes.append(f"{target}: no such file or directory")
            continue
        for f in files:
            if f.is_symlink() and not f.exists():
                notes.append(f"{f}: dangling symlink")
                continue
            by_real.setdefault(f.resolve(), []).append(f.name)
    return [(real, sorted(set(names) - {real.name})) for real, names in by_real.items()]


def scan(targets: Iterable[Path], tables: dict[str, tuple[Decl, ...]]) -> tuple[list[LibReport], list[str]]:
    """Probe every ``libdoca_*.so*`` under *targets*; returns reports and notes on skipped paths."""
    notes: list[str] = []
    reports = []
    for real, aliases in _candidates(targets, notes):
        m = _NAME.match(real.name)
        table = tables.get(m.group("lib")) if m else None
        report = read_library(real, table)
        report.aliases = aliases
        reports.append(report)
    return reports, notes


def _print_text(reports: list[LibReport], tables: dict[str, tuple[Decl, ...]]) -> None:
    for r in reports:
        also = f" (also: {', '.join(r.aliases)})" if r.aliases else ""
        print(f"libdoca_{r.lib}: {r.path}{also}")
        if r.error:
            print(f"  ERROR: {r.error}")
            continue
        print(f"  version {r.version or 'unknown'}, SONAME {r.soname or 'none'}, {r.exported} doca_* functions exported")
        if r.declared is None:
            print(f"  no declaration table for libdoca_{r.lib}")
            continue
        print(f"  declared {r.declared}: {r.present} present, {len(r.missing)} missing")
        decls = {d.name: d for d in tables[r.lib]}
        ver = _version_tuple(r.version)
        for name in r.missing:
            print(f"    - {_annotate(decls[name], ver)}")
        if r.undeclared:
            print(f"  exported but not declared: {len(r.undeclared)}")
            for name in r.undeclared:
                print(f"    + {name}")


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser of ``python -m doca_py.native.probe``."""
    parser = argparse.ArgumentParser(
        prog="python -m doca_py.native.probe",
        description="List which declared DOCA functions the installed libdoca_*.so export (reads ELF, no dlopen).",
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, metavar="LIBDIR",
        help="directories (or library files) to probe; default: $DOCA_PY_LIBDIR and the DOCA install directories",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the probe; returns the exit status (see the module doc)."""
    args = build_parser().parse_args(argv)
    from . import capi, loader

    targets: list[Path] = args.paths or [d for d in loader.search_dirs() if d.exists()]
    searched = args.paths or loader.search_dirs()
    tables = capi.tables()
    reports, notes = scan(targets, tables)
    for note in notes:
        print(f"probe: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"libraries": [asdict(r) for r in reports], "notes": notes}, indent=2))
    else:
        _print_text(reports, tables)
    bad = [r for r in reports if r.error]
    if not reports:
        where = ", ".join(str(p) for p in searched) or "(nothing)"
        print(f"probe: no DOCA library (libdoca_*.so*) found in: {where}", file=sys.stderr)
        return 1
    if bad:
        print(f"probe: {len(bad)} file(s) could not be read as ELF shared objects", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # "| head": not an error worth a traceback
        sys.exit(1)
