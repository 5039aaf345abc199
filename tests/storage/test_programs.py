"""Every installed program, run as its console script (``.venv/bin``) and as ``python -m``: its name as
typed in ``--help`` and ``--version``, exit status 2 on a usage error, and a ``DOCA_PY_IMPL`` that
cannot be honoured reported in one line (status 2) instead of an import traceback."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from apps.common.cli.manpages import MANUAL, PROGRAMS, TITLE_WIDTH, build_manpage, man_title

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

# A flag value each program refuses.
BAD_VALUE = {
    "doca_storage_gga_offload_sbc_generator": ["--block-size", "x"],
    "doca_storage_target_rdma": ["--cpu", "x"],
    "doca_storage_comch_to_rdma_gga_offload": ["--cpu", "x"],
    "doca_storage_comch_to_rdma_zero_copy": ["--cpu", "x"],
    "doca_storage_initiator_comch": ["--cpu", "x"],
    "doca_py_storage_topology": ["--block-size", "x"],
    "doca_py": ["devices", "--json=yes"],
    "doca_file_compression": ["--timeout", "x"],
    "doca_secure_channel": ["--msg-size", "x"],
    "doca_dma_copy": ["--pci-addr", "0000:3b:00.0x", "-f", "x"],
}


def _module(prog: str) -> str:
    return PROGRAMS[prog].removesuffix(".tool")


def _command(prog: str, how: str) -> tuple[list[str], str]:
    """The command line and the name it should report."""
    if how == "script":
        script = BIN / prog
        if not script.exists():
            pytest.skip(f"{script} is not installed (pip install -e .)")
        return [str(script)], prog
    return [sys.executable, "-m", _module(prog)], f"python -m {_module(prog)}"


def _run(cmd: list[str], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, COLUMNS="200", DOCA_PY_IMPL="emulated")
    environ.update(env)
    return subprocess.run([*cmd, *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)


def test_every_program_is_covered() -> None:
    from apps.common.cli.usage import EXIT_USAGE
    from doca_py._program import EXIT_USAGE as LIBRARY_EXIT_USAGE

    assert set(BAD_VALUE) == set(PROGRAMS)
    assert EXIT_USAGE == LIBRARY_EXIT_USAGE == 2


@pytest.mark.parametrize("how", ["script", "module"])
@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_help_and_version_show_the_name_typed(prog: str, how: str) -> None:
    cmd, name = _command(prog, how)
    version = _run(cmd, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith(name + ": v" if prog != "doca_py" else "doca_py 0."), version.stdout
    help_ = _run(cmd, "--help")
    assert help_.returncode == 0, help_.stderr
    assert help_.stdout.startswith(f"usage: {name} "), help_.stdout.splitlines()[0]


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_a_bad_flag_value_exits_2(prog: str) -> None:
    cmd, name = _command(prog, "script")
    out = _run(cmd, *BAD_VALUE[prog])
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert f"{name}" in out.stderr and "error:" in out.stderr and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("how", ["script", "module"])
@pytest.mark.parametrize("prog", sorted(set(PROGRAMS) - {"doca_py_storage_topology"}))
def test_a_bad_doca_py_impl_is_one_line_and_exit_2(prog: str, how: str) -> None:
    cmd, _ = _command(prog, how)
    out = _run(cmd, "--help", DOCA_PY_IMPL="cuda")
    assert out.returncode == 2
    assert out.stderr == "doca_py: DOCA_PY_IMPL='cuda' is not one of: auto, native, emulated\n"
    assert out.stdout == ""


def test_the_topology_runs_the_emulator_whatever_doca_py_impl_says() -> None:
    cmd, name = _command("doca_py_storage_topology", "module")
    out = _run(cmd, "--version", DOCA_PY_IMPL="cuda")
    assert out.returncode == 0 and out.stdout.startswith(f"{name}: v"), out.stderr


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_the_man_page_header_fits_80_columns(prog: str, tmp_path: Path) -> None:
    page = build_manpage(importlib.import_module(PROGRAMS[prog]).build_parser(), prog=prog)
    title = page.split()[1]
    assert title == man_title(prog) and len(title) <= TITLE_WIDTH and prog.upper().endswith(title)
    assert f"\n.SH NAME\n{prog} \\- " in page  # the full name stays in NAME
    if shutil.which("man") is None or shutil.which("groff") is None:
        pytest.skip("no man/groff to render the page (the title length above is the check)")
    (tmp_path / f"{prog}.1").write_text(page)
    shown = subprocess.run(["man", "-l", str(tmp_path / f"{prog}.1")], env=dict(os.environ, MANWIDTH="80"),
                           capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    # "TITLE(1)   doca_py   TITLE(1)" and "doca_py 0.1   date   TITLE(1)": apart, nothing overwritten
    assert re.fullmatch(rf"{title}\(1\) +{MANUAL} +{title}\(1\)", shown[0]), shown[0]
    assert re.fullmatch(rf"doca_py \S+ +\d{{4}}-\d\d-\d\d +{title}\(1\)", shown[-1]), shown[-1]
