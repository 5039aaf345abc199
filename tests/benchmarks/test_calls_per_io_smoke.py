"""Smoke test of ``benchmarks/e2e/calls_per_io.py``: Python calls per IO of each process, split by layer.

The layer of a file and the per-IO difference are checked on made-up data; one short run of the zero-copy
topology on both paths checks the table's structure, never a count's value beyond being a count.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.e2e import calls_per_io as cpi
from tests import deadlines
from tests.libdoca.env import lib_dir

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "e2e" / "calls_per_io.py"


@pytest.mark.parametrize(("rel", "path", "layer"), [
    ("apps/gga_offload/transaction.py", "emulated", "apps"),
    ("doca_py/rdma_tasks.py", "emulated", "public"),
    ("doca_py/_backend/settings.py", "native", "public"),
    ("doca_py/native/buf.py", "native", "backend"),
    ("doca_py/emulated/task.py", "emulated", "backend"),
    ("doca_py/engines/lz4_stream.py", "emulated", "backend"),
    ("doca_py/emulated/task.py", "native", "emulator"),  # libdoca's emulator serving the native path
    ("doca_py/libdoca/serve/_core.py", "native", "emulator"),
    ("doca_py/emulated/transport/reactor.py", "emulated", "transport"),
    ("doca_py/emulated/rdma/shm.py", "native", "transport"),
    ("doca_py/emulated/comch/receive.py", "emulated", "transport"),
    ("doca_py/emulated/rdma/ctx.py", "emulated", "backend"),  # the rdma ctx is the backend, not the wire
])
def test_each_file_is_charged_to_its_layer(rel: str, path: str, layer: str) -> None:
    assert cpi.layer_of(str(ROOT / rel), path) == layer


def test_builtins_and_the_standard_library_have_their_own_layers() -> None:
    assert cpi.layer_of("~", "emulated") == "builtins"
    assert cpi.layer_of(sys.modules["threading"].__file__ or "", "emulated") == "other"


def test_calls_per_io_are_the_difference_of_two_runs() -> None:
    def counts(apps: int, builtins_from_apps: int) -> cpi.Counts:
        frames = dict.fromkeys(cpi.LAYERS, 0)
        frames.update(apps=apps, builtins=builtins_from_apps + 7)  # 7 built-in calls at start-up, in both runs
        by_caller = dict.fromkeys(cpi.FRAME_LAYERS, 0)
        by_caller.update(apps=builtins_from_apps, other=7)
        return cpi.Counts(frames, by_caller)

    per_io = counts(5000 + 300, 2000).minus(counts(1000 + 300, 400), 400)  # 300 frames at start-up in both
    assert per_io.layers["apps"] == 10.0 and per_io.layers["builtins"] == 4.0 and per_io.total == 14.0
    assert per_io.builtins_by_caller["apps"] == 4.0 and per_io.builtins_by_caller["other"] == 0.0
    assert per_io.own("apps") == 14.0
    assert per_io.without_emulator == 14.0  # nothing of the emulator or its transport here


def test_the_short_run_must_be_shorter(capsys: pytest.CaptureFixture[str]) -> None:
    assert cpi.main(["--long", "100", "--short", "100"]) == 2
    assert "--short must be positive and below --long" in capsys.readouterr().err


@pytest.mark.multiprocess
def test_counts_every_process_of_a_topology_on_both_paths() -> None:
    lib_dir()  # skips without a C compiler
    per_run = max(120.0, deadlines.bound(10.0, 10.0, starts=10))
    done = subprocess.run([sys.executable, str(SCRIPT), "--path", "both", "--bridge", "zero-copy", "--long", "300",
                           "--short", "100", "--block-count", "16", "--timeout", f"{per_run:.0f}"],
                          capture_output=True, text=True, timeout=4 * per_run + 120, cwd=ROOT)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    table = out[out.index("Python calls per 4 KiB read IO (300 − 100 IOs)"):]
    count = r"-?\d+\.\d"
    for path in ("emulated", "native"):
        for proc in ("storage", "bridge", "initiator"):
            row = re.search(rf"^\| {path} \| zero-copy \| {proc} \|((?: {count} \|){{9}})$", table, re.M)
            assert row is not None, table
            cells = [float(x) for x in row.group(1).split("|") if x.strip()]
            # "all" is the sum of the layers, each of the eight printed to 0.05: up to 8 × 0.05 apart.
            assert cells[7] == pytest.approx(sum(cells[:7]), abs=0.4 + 1e-9)
            assert cells[8] <= cells[7] + 0.05  # all but the emulator's and the transport's calls
            # Every process runs app code for every IO (a 200-IO difference cannot round that away).
            assert cells[0] > 0
    by_caller = table[table.index("Built-in calls per IO by the layer that made them"):]
    assert len(re.findall(rf"^\| (?:emulated|native) \| zero-copy \| \w+ \|(?: {count} \|){{6}}$", by_caller,
                          re.M)) == 6, by_caller
