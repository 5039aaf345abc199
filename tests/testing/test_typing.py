"""``Side.dev``, ``Side.rep`` and ``DocaPair.run`` are typed: ``mypy --strict`` catches a user's mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_CODE = '''
from doca_py.testing import DocaPair, Side


def host(side: Side) -> int:
    return len(side.dev.as_devinfo().get_pci_addr_str())


def dpu(side: Side) -> str:
    return side.rep.get_pci_addr_str()  # rep is None on the host: mypy wants a check


def test(pair: DocaPair) -> None:
    n, pci = pair.run(host, dpu)
    n.upper()  # an int
    pci + 1  # a str
'''


def test_mypy_strict_catches_mistakes_in_sides_and_results(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    (tmp_path / "user_sides.py").write_text(USER_CODE)
    out, err, status = api.run(["--strict", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"),
                                str(tmp_path / "user_sides.py")])
    lines = [ln.split(": error: ", 1)[1] for ln in out.splitlines() if ": error: " in ln]
    assert status == 1, out + err
    assert any('Item "None" of "DevRep | None" has no attribute "get_pci_addr_str"' in ln for ln in lines), lines
    assert any('"int" has no attribute "upper"' in ln for ln in lines), lines
    assert any('Unsupported operand types for + ("str" and "int")' in ln for ln in lines), lines
    assert len(lines) == 3, lines
