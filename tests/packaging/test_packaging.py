"""The wheel and the sdist: console scripts, man pages, typing marker, license, contents.

Builds both with ``python -m build --no-isolation`` (offline: the venv has setuptools,
argparse-manpage and the runtime dependencies the man-page step imports); the wheel is
built from the sdist, so the sdist is shown to build. One build per run: everything that
needs it is one test, so pytest-xdist cannot run two builds at once.
"""

from __future__ import annotations

import configparser
import importlib
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # 3.10: the same parser, as the tomli package (a dev dependency there)
    import tomli as tomllib

import doca_py
from apps.common.cli.manpages import PROGRAMS, man_title

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = doca_py.__version__
NAME = f"doca_py-{VERSION}"

# Every program of PROGRAMS is a console script running its module's main() (the device
# tool's console_main(), which turns a broken pipe into exit status 1).
EXPECTED_SCRIPTS = {prog: f"{module}:{'console_main' if module == 'doca_py.tool' else 'main'}"
                    for prog, module in PROGRAMS.items()}
REQUIRED_SCRIPTS = {
    "doca_storage_target_rdma": "apps.storage_target:main",
    "doca_storage_comch_to_rdma_gga_offload": "apps.gga_offload:main",
    "doca_storage_initiator_comch": "apps.initiator:main",
    "doca_storage_gga_offload_sbc_generator": "apps.sbc_generator:main",
    "doca_py_storage_topology": "apps.topology:main",
    "doca_py": "doca_py.tool:console_main",
}


def _req_name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def test_metadata_and_build_configuration() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: the expression
    for minor in (11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in project["classifiers"]
    assert "urls" not in project  # no public address yet: no placeholder links either
    assert "example.invalid" not in (ROOT / "mkdocs.yml").read_text()
    assert REQUIRED_SCRIPTS.items() <= EXPECTED_SCRIPTS.items()
    assert project["scripts"] == EXPECTED_SCRIPTS  # pyproject and the man pages name the same programs
    for target in EXPECTED_SCRIPTS.values():
        module, func = target.split(":")
        assert callable(getattr(importlib.import_module(module), func))
    # The man-page step imports the apps: every runtime dependency must be a build requirement.
    requires = PYPROJECT["build-system"]["requires"]
    assert "setuptools>=77" in requires and "argparse-manpage" in {_req_name(r) for r in requires}
    assert set(project["dependencies"]) <= set(requires)
    extras = project["optional-dependencies"]
    assert {"build", "setuptools"} <= {_req_name(r) for r in extras["dev"]}
    # tasks.py installs `test` on the other Pythons and `dev` on .venv's: dev must hold all of test.
    assert set(extras["test"]) <= set(extras["dev"])
    assert "pytest-timeout" in {_req_name(r) for r in extras["test"]}


def _run(cmd: list[str], cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{cmd} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    # sdist from the checkout, then the wheel from the unpacked sdist (build's default).
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], ROOT)
    return out / f"{NAME}-py3-none-any.whl", out / f"{NAME}.tar.gz"


def _check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        top = {n.split("/")[0] for n in names}
        assert top == {"doca_py", "apps", f"{NAME}.dist-info", f"{NAME}.data"}, top  # no tests, docs …
        assert "doca_py/py.typed" in names and "doca_py/tool.py" in names and "doca_py/__main__.py" in names
        assert not [n for n in names if "_testlib" in n or n.endswith((".c", ".h"))]  # the fakes are tests
        eps = configparser.ConfigParser()
        eps.read_string(zf.read(f"{NAME}.dist-info/entry_points.txt").decode())
        assert dict(eps["console_scripts"]) == EXPECTED_SCRIPTS
        assert dict(eps["pytest11"]) == {"doca_py": "doca_py.testing.plugin"}  # the test kit's plugin
        pages = sorted(n for n in names if n.startswith(f"{NAME}.data/"))
        assert pages == sorted(f"{NAME}.data/data/share/man/man1/{prog}.1" for prog in PROGRAMS)
        for prog in PROGRAMS:
            page = zf.read(f"{NAME}.data/data/share/man/man1/{prog}.1").decode()
            assert re.match(rf'\.TH {man_title(prog)} "1" "[^"]+" "doca_py {re.escape(VERSION)}" "[^"]+"\n', page), \
                page.splitlines()[0]
            assert f"\n.SH SYNOPSIS\n.B {prog}\n" in page
        metadata = zf.read(f"{NAME}.dist-info/METADATA").decode()
        assert "\nLicense-Expression: Apache-2.0\n" in metadata
        assert f"{NAME}.dist-info/licenses/LICENSE" in names
        assert "Project-URL:" not in metadata and "Home-page:" not in metadata


def _check_sdist(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as tf:
        names = {m.name.removeprefix(f"{NAME}/") for m in tf.getmembers()}
        tf.extractall(into, filter="data")
    for wanted in ("tests/conftest.py", "tests/tool/test_tool.py", "tests/packaging/test_packaging.py",
                   "docs/index.md", "docs/device-tool.md", "docs/hooks/cli_reference.py", "mkdocs.yml",
                   "CHANGELOG.md", "LICENSE", "README.md", "stubs/lz4/__init__.pyi", "tasks.py", "setup.py",
                   "MANIFEST.in", "pyproject.toml", ".ci/run", "doca_py/py.typed", "apps/common/cli/manpages.py",
                   "tests/native/fakelib/common.c", "tests/native/fakelib/fake.h"):
        assert wanted in names, wanted
    assert any(n.startswith("benchmarks/") and n.endswith(".py") for n in names)
    assert any(n.startswith("examples/") and n.endswith(".py") for n in names)
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".so"))]
    return into / NAME


@pytest.mark.slow
def test_wheel_and_sdist(dists: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, sdist = dists
    _check_wheel(wheel)
    tree = _check_sdist(sdist, tmp_path / "sdist")

    # The sdist tests itself: its own code, its own tests.
    where = _run([sys.executable, "-c", "import doca_py; print(doca_py.__file__)"], tree)
    assert Path(where.stdout.strip()).is_relative_to(tree)
    _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
          "tests/tool/test_repr.py", "-k", "enums or every_member"], tree)

    # Installed from the wheel: the console scripts run, the man pages land in share/man/man1.
    target = tmp_path / "installed"
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(target),
          str(wheel)], tmp_path)
    assert sorted(p.name for p in (target / "share" / "man" / "man1").iterdir()) == \
        sorted(f"{prog}.1" for prog in PROGRAMS)
    env = {"PYTHONPATH": str(target), "DOCA_PY_IMPL": "emulated"}
    doc = json.loads(_run([str(target / "bin" / "doca_py"), "--list", "--json"], tmp_path, **env).stdout)
    assert doc["backend"] == "emulated" and len(doc["devices"]) >= 1
    usage = _run([str(target / "bin" / "doca_storage_target_rdma"), "--help"], tmp_path, **env).stdout
    assert "--listen-port" in usage
    _fresh_project_tests_with_the_kit(target, tmp_path / "fresh")


FRESH = '''
import os
import pytest
import doca_py


def host(side):
    side.send(doca_py.version_runtime())
    return doca_py.__file__


def dpu(side):
    version = side.recv(30)
    if os.environ.get("FRESH_FAIL"):
        raise RuntimeError(f"the dpu side fails under {version}")
    return version, side.rep.get_pci_addr_str()


@pytest.mark.doca_versions("2.6", "3.2")
def test_pair(doca_pair, doca_version):
    where, (version, rep) = doca_pair.run(host, dpu, timeout=60)
    assert version == doca_version + ".0000"
    print("KIT FROM", where)
'''


def _fresh_project_tests_with_the_kit(target: Path, project: Path) -> None:
    """A project holding one test file, with only the wheel installed: the kit comes from its entry point."""
    project.mkdir()
    (project / "test_fresh.py").write_text(FRESH)
    env = {"PYTHONPATH": str(target), "DOCA_PY_IMPL": "emulated", "DOCA_PY_EMU_SEED": "", "DOCA_PY_STRICT": "",
           "DOCA_PY_EMU_SHUFFLE": ""}
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist"]
    ok = _run([*pytest_cmd, "-v", "-s", "--doca-seed", "99"], project, **env).stdout
    assert "doca_py test kit: seed 99, DOCA default, strict on" in ok
    assert "test_fresh.py::test_pair[doca2.6] " in ok and "test_fresh.py::test_pair[doca3.2] " in ok
    assert ok.count(f"KIT FROM {target / 'doca_py' / '__init__.py'}") == 2  # the sides ran the wheel's code
    failing = subprocess.run([*pytest_cmd, "--doca-seed", "99", f"--doca-trace={project / 'traces'}"], cwd=project,
                             env={**os.environ, **env, "FRESH_FAIL": "1"}, capture_output=True, text=True, timeout=300)
    assert failing.returncode == 1, failing.stdout[-3000:]
    for v in ("2.6", "3.2"):
        assert f"RuntimeError: the dpu side fails under {v}.0000" in failing.stdout
        # the replay line cd's into the rootdir (any directory works), then names the seed and the test
        assert f"replay with: cd {project} && pytest --doca-seed 99 'test_fresh.py::test_pair[doca{v}]'" \
            in failing.stdout
    assert "dpu side: last task events" in failing.stdout and "=== host side (pid" in failing.stdout
    traces = sorted(p.name for p in (project / "traces").iterdir())
    assert traces == ["test_fresh.py_test_pair_doca2.6.json", "test_fresh.py_test_pair_doca3.2.json"]
    replay = subprocess.run([*pytest_cmd, "--doca-seed", "99", "test_fresh.py::test_pair[doca3.2]"], cwd=project,
                            env={**os.environ, **env, "FRESH_FAIL": "1"}, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1 and "1 failed" in replay.stdout
    assert "RuntimeError: the dpu side fails under 3.2.0000" in replay.stdout
