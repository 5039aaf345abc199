"""C programs built against libdoca as against DOCA: compiled with its headers, linked with its libraries,
run with nothing but ``LD_LIBRARY_PATH`` (the embedded Python finds doca_py from what the build recorded)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

import pytest

from doca_py.libdoca import cgen
from doca_py.libdoca.build import find_compiler
from doca_py.testing import Knobs

from ..impl import CHILD_IMPL
from .env import lib_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "c"
HERE = Path(__file__).resolve().parent / "c"
TIMEOUT = 120


def compile_c(src: Path, out: Path, version: str, *libs: str) -> Path:
    """*src* compiled and linked as the docs say, warnings as errors; returns the program."""
    cc = find_compiler()
    if cc is None:
        pytest.skip("no C compiler")
    lib = lib_dir(version)
    cmd = [cc, "-Wall", "-Wextra", "-Werror", "-DDOCA_ALLOW_EXPERIMENTAL_API", str(src),
           "-I", str(lib.parent / "include"), "-L", str(lib), *(f"-l{name}" for name in libs), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return out


def c_env(version: str, knobs: Knobs, **extra: str) -> dict[str, str]:
    """What a C program gets: a PATH, the libraries, the test kit's knobs; no Python variable at all."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_LIBRARY_PATH": str(lib_dir(version))}
    env.update(knobs.env())
    env.update(extra)
    assert not [k for k in env if k.startswith("PYTHON")]
    return env


def run_c(program: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program), *args], env=env, cwd=program.parent, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


@pytest.mark.parametrize("version", ["2.6", "3.0", "3.2"])
def test_dma_local_copy_in_c_copies_the_text(version: str, tmp_path: Path, doca_knobs: Knobs) -> None:
    program = compile_c(EXAMPLES / "dma_local_copy.c", tmp_path / "dma_local_copy", version, "doca_dma",
                        "doca_common")
    proc = run_c(program, c_env(version, doca_knobs), "-p", "03:00.0", "-t", f"copied by C over DOCA {version}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The standard log backend: INFO records on stdout, in the program's order.
    lines = [line.split("] ", 1)[1] for line in proc.stdout.splitlines() if "][DOCA][INF][" in line]
    assert lines == ["Starting the sample", "DMA context is running", "DMA task was completed successfully",
                     "DMA context has been stopped", "Success, memory copied and verified as correct",
                     f'Destination buffer holds: "copied by C over DOCA {version}"', "Sample finished successfully"]
    assert proc.stderr == ""


@pytest.mark.parametrize("version", ["2.6", "3.2"])
def test_a_doca_graph_in_c(version: str, tmp_path: Path, doca_knobs: Knobs) -> None:
    """doca_graph.h from C over libdoca: a DMA node then a user node, one run completing, one failed by its
    user node's DOCA_ERROR_BAD_STATE, the tasks' own callbacks silent, the documented refusals."""
    program = compile_c(HERE / "graph_pipeline.c", tmp_path / "graph_pipeline", version, "doca_dma", "doca_common")
    proc = run_c(program, c_env(version, doca_knobs))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "add after start: DOCA_ERROR_BAD_STATE"  # strict mode's finding reaches C as BAD_STATE
    assert lines[1] in ("submit in flight: DOCA_ERROR_BAD_STATE", "submit in flight: DOCA_ERROR_IN_USE")
    assert sorted(lines[2:6]) == ["instance 0 completed (graph user data)", "instance 1 failed (graph user data)",
                                  "user node 0: 512 bytes of 0x30", "user node 1: 512 bytes of 0x31"]
    assert lines[6:] == ["task callbacks: 0", "stop with instances: DOCA_ERROR_IN_USE"]


def test_errors_are_logged_on_stderr_and_fail_the_program(tmp_path: Path, doca_knobs: Knobs) -> None:
    program = compile_c(EXAMPLES / "dma_local_copy.c", tmp_path / "dma_local_copy", "3.2", "doca_dma",
                        "doca_common")
    proc = run_c(program, c_env("3.2", doca_knobs), "-p", "99:00.0")
    assert proc.returncode == 1
    assert "][DOCA][ERR][dma_local_copy.c:" in proc.stderr
    assert "No device at 99:00.0 can run DMA memcpy tasks: Resource not found" in proc.stderr
    assert "Sample finished with errors" in proc.stdout and "ERR" not in proc.stdout


def test_a_c_program_runs_the_emulators_exit_hooks(tmp_path: Path, doca_knobs: Knobs) -> None:
    # The emulator's trace is written by a Python exit hook: libdoca runs them when the C program exits.
    program = compile_c(EXAMPLES / "dma_local_copy.c", tmp_path / "dma_local_copy", "3.2", "doca_dma",
                        "doca_common")
    proc = run_c(program, c_env("3.2", doca_knobs, DOCA_PY_TRACE=str(tmp_path / "trace-{pid}.json")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    traces = list(tmp_path.glob("trace-*.json"))
    assert len(traces) == 1
    events = json.loads(traces[0].read_text())
    names = {e.get("name", "") for e in (events["traceEvents"] if isinstance(events, dict) else events)}
    assert {"submit EmuDmaTaskMemcpy", "complete EmuDmaTaskMemcpy"} <= names, names


def test_the_started_python_finds_what_the_building_one_found(tmp_path: Path) -> None:
    # An import-hook install (an editable finder): only its .pth file's code knows where the module is.
    site_dir, hooked = tmp_path / "site-packages", tmp_path / "elsewhere"
    site_dir.mkdir()
    hooked.mkdir()
    (hooked / "hooked_mod.py").write_text("VALUE = 42\n")
    (site_dir / "hook.pth").write_text(f"import sys; sys.path.append({str(hooked)!r})\n")
    code = cgen.sys_path_code([str(site_dir)]) + "; import hooked_mod; print(hooked_mod.VALUE, sys.path[0])"
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["42", str(site_dir)]


def test_doca_log_limits_and_backends(tmp_path: Path, doca_knobs: Knobs) -> None:
    program = compile_c(HERE / "log_levels.c", tmp_path / "log_levels", "3.2", "doca_common")
    raw = subprocess.run([str(program)], env=c_env("3.2", doca_knobs), capture_output=True, timeout=TIMEOUT,
                         check=False)
    assert raw.returncode == 0, raw.stdout + raw.stderr
    assert raw.stdout.endswith(b"[main] bytes kept: \xff\xfe\n")
    stdout = raw.stdout.decode("utf-8", "replace")
    out = [line.split("][", 4)[-1] if line.startswith("buf| [") else line for line in stdout.splitlines()]
    assert out == [
        "create: DOCA_SUCCESS",
        "limits: 50 20",
        "log_levels.c:28][main] info 1",
        "global lower: DOCA_SUCCESS",
        "log_levels.c:32][main] debug 2",
        "own lower: DOCA_SUCCESS",
        "strict: DOCA_SUCCESS",
        "global lower: DOCA_SUCCESS",
        "global upper: DOCA_SUCCESS",
        "log_levels.c:41][main] error 1",
        "bad level: DOCA_ERROR_INVALID_VALUE",
        "unknown source: DOCA_ERROR_NOT_FOUND",
        "sdk on app backend: DOCA_ERROR_INVALID_VALUE",
        "log_levels.c:46][main] bytes kept: \ufffd\ufffd",
    ]
    record = next(line for line in stdout.splitlines() if line.endswith("info 1"))
    assert f"][{proc_pid(record)}][DOCA][INF][log_levels.c:28][main] info 1" in record


def proc_pid(record: str) -> int:
    """The process id a record names (``[time][pid][DOCA]…``)."""
    return int(record.split("][", 2)[1])


def test_comch_client_in_c_compiles_against_doca_3(tmp_path: Path) -> None:
    for version in ("3.0", "3.2"):
        compile_c(EXAMPLES / "comch_ctrl_path_client.c", tmp_path / f"client-{version}", version, "doca_comch",
                  "doca_common")


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    try:
        for line in stream:
            into.put(line)
    except (ValueError, OSError):  # closed under us: the test is over
        pass


def test_comch_client_in_c_talks_to_the_python_server(tmp_path: Path, doca_knobs: Knobs) -> None:
    client = compile_c(EXAMPLES / "comch_ctrl_path_client.c", tmp_path / "client", "3.2", "doca_comch",
                       "doca_common")
    # A rendezvous directory of our own (mode 0700, short: it holds socket paths) for the fixed server name.
    with tempfile.TemporaryDirectory(prefix="doca-c-") as comch_dir:
        env = dict(os.environ)
        env.update(doca_knobs.env(), DOCA_PY_IMPL=CHILD_IMPL, DOCA_PY_COMCH_DIR=comch_dir)
        server = subprocess.Popen(
            [sys.executable, "examples/comch_ctrl_path_server.py", "-p", "03:00.0", "-r", "3b:00.0", "-t",
             "answer from the Python server"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        assert server.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=_lines, args=(server.stdout, lines), daemon=True)
        reader.start()
        seen: list[str] = []
        try:
            while not any("CC server context is running" in line for line in seen):
                seen.append(lines.get(timeout=TIMEOUT))
            proc = run_c(client, c_env("3.2", doca_knobs, DOCA_PY_COMCH_DIR=comch_dir), "-p", "3b:00.0", "-t",
                         "hello from C")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert "Message received: 'answer from the Python server'" in proc.stdout
            assert server.wait(timeout=TIMEOUT) == 0
            reader.join(TIMEOUT)  # the server's output to its end
            while not lines.empty():
                seen.append(lines.get_nowait())
            assert any("Message received: 'hello from C'" in line for line in seen), seen
        finally:
            if server.poll() is None:
                server.kill()
            server.wait()
            server.stdout.close()
