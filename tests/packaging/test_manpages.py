"""The man pages' text: nothing lost to roff, and the sections a user looks for (issue 26 item 15)."""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from apps.common.cli.manpages import EXAMPLES, PROGRAMS, build_manpage, escape_control_lines

SECTIONS = ("EXIT STATUS", "ENVIRONMENT", "EXAMPLES", "SEE ALSO")


def _page(prog: str) -> str:
    return build_manpage(importlib.import_module(PROGRAMS[prog]).build_parser(), prog=prog)


def test_a_text_line_starting_with_a_control_character_is_escaped() -> None:
    page = ".TH X \"1\"\n.SH NAME\nx\n'quoted' word\n.bashrc is read\n.TP\n.B 0\n.RS 7\n"
    assert escape_control_lines(page).split("\n") == [
        ".TH X \"1\"", ".SH NAME", "x", "\\&'quoted' word", "\\&.bashrc is read", ".TP", ".B 0", ".RS 7", ""]


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_no_text_line_starts_with_a_control_character(prog: str) -> None:
    for line in _page(prog).splitlines():
        assert not line.startswith("'"), line
        if line.startswith("."):
            assert line.split()[0] in {".TH", ".SH", ".SS", ".TP", ".PP", ".IP", ".RS", ".RE", ".B", ".BR", ".I",
                                       ".IR", ".EX", ".EE", ".nf", ".fi", ".br", ".sp"}, line


@pytest.mark.parametrize("prog", ["doca_file_compression", "doca_secure_channel"])
def test_the_server_name_and_the_rep_rule_are_on_the_rendered_page(prog: str, tmp_path: Path) -> None:
    """A wrapped epilog line began with the quoted server name: roff took it for a request and dropped the
    sentence naming the server and saying that it needs -r."""
    if shutil.which("man") is None or shutil.which("groff") is None:
        pytest.skip("no man/groff to render the page")
    path = tmp_path / f"{prog}.1"
    path.write_text(_page(prog))
    shown = subprocess.run(["man", "-l", str(path)], env=dict(os.environ, MANWIDTH="80"), capture_output=True,
                           text=True, timeout=60, check=True).stdout
    text = " ".join(shown.split()).replace("\u2010 ", "")  # undo man's hyphenation at line ends
    server = prog.removeprefix("doca_") + "_server"
    assert f"'{server}' (and needs -r, the host's representor)" in text, text
    for section in SECTIONS:
        assert f"\n{section}\n" in shown, section


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_every_page_has_exit_status_environment_examples_see_also(prog: str) -> None:
    page = _page(prog)
    heads = [line.removeprefix(".SH ") for line in page.splitlines() if line.startswith(".SH ")]
    assert [h for h in heads if h in SECTIONS] == list(SECTIONS), heads
    exit_status = page.split(".SH EXIT STATUS\n")[1].split(".SH ")[0]
    assert ".B 0" in exit_status and ".B 1" in exit_status and ".B 2" in exit_status
    assert "DOCA_PY_IMPL" in page.split(".SH ENVIRONMENT\n")[1].split(".SH ")[0]
    see_also = page.split(".SH SEE ALSO\n")[1]
    assert all(f".BR {p} (1)" in see_also for p in PROGRAMS if p != prog)


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_the_examples_use_the_program_s_own_flags(prog: str) -> None:
    parser = importlib.import_module(PROGRAMS[prog]).build_parser()
    options = {opt for action in parser._actions for opt in action.option_strings}
    if prog == "doca_py":
        options |= {"--json", "--list"}  # flags of its sub-commands
    assert EXAMPLES[prog]
    for _, command in EXAMPLES[prog]:
        words = shlex.split(command)
        words = words[[i for i, w in enumerate(words) if w == prog][0]:]
        flags = [w for w in words if w.startswith("-")]
        assert flags or len(words) <= 3, command
        assert set(flags) <= options, (command, set(flags) - options)


def test_an_editable_install_carries_the_man_pages(tmp_path: Path) -> None:
    """``pip install -e .`` (and tasks.py's .venv) installs the pages as the wheel does, in
    ``<venv>/share/man/man1`` (PEP 660: the editable wheel's data directory)."""
    import sys
    import zipfile

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                          "print(build_meta.build_editable(sys.argv[1]))", str(tmp_path)],
                         cwd=root, env=dict(os.environ, DOCA_PY_IMPL="emulated"), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    wheel = tmp_path / out.stdout.split()[-1]
    with zipfile.ZipFile(wheel) as zf:
        pages = sorted(n.rsplit("/", 1)[1] for n in zf.namelist() if "/share/man/man1/" in n)
        assert pages == sorted(f"{prog}.1" for prog in PROGRAMS)
        name = [n for n in zf.namelist() if n.endswith("/doca_file_compression.1")][0]
        assert ".SH EXAMPLES" in zf.read(name).decode()
