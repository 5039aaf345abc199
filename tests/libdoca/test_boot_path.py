"""libdoca's boot: the Python a C program starts finds the doca_py the library was built from."""

from __future__ import annotations

import re
import sys

import pytest

from doca_py.libdoca import cgen


def _sys_path_code(paths: tuple[str, ...]) -> str:
    """The ``SYS_PATH_CODE`` of a generated library whose building interpreter had *paths*."""
    boot = cgen.Boot("common", "3.2.0000", "", "", paths, 1)
    m = re.search(r'#define SYS_PATH_CODE "((?:\\x[0-9a-f]{2})*)"', cgen.shim_source(boot, []))
    assert m is not None
    return bytes.fromhex(m.group(1).replace("\\x", "")).decode()


def test_the_build_s_paths_lead_sys_path_in_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # The program's PYTHONPATH named the build's first path; the build's later paths (an installed doca_py
    # among them) must stay behind it, not be put in front of it.
    monkeypatch.setattr(sys, "path", ["/build/checkout", "/usr/lib/python3", "/elsewhere"])
    exec(_sys_path_code(("/build/checkout", "/build/checkout", "/venv/site-packages", "/usr/lib/python3")), {})
    assert sys.path == ["/build/checkout", "/venv/site-packages", "/usr/lib/python3", "/elsewhere"]
