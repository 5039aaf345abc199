"""``benchmarks/e2e/sweep.py``'s report: the markdown table and the SVG plot, from made-up results.

No topology runs here (that is the benchmark itself); this checks that the table has a row per point
and that the plot is well-formed, self-contained SVG with one line per block size whose points sit
where their values say (log scales: higher GiB/s is higher up, more in flight is further right).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

from benchmarks.e2e import run, sweep

SVG = "{http://www.w3.org/2000/svg}"


def _result(block: int, iops: float) -> run.Result:
    sc = replace(run.SCENARIOS["read-4k"], block_size=block)
    cpu = {p: 0.5 for p in run.PROCS}
    return run.Result(sc, duration_s=1.0, operations=int(iops), window_s=1.0, cpu_s=cpu, sys_s=cpu,
                      machine_busy=0.5, latency_mean_us=100, pe_hit_rate="50%")


POINTS: list[sweep.Point] = [
    (4096, 1, _result(4096, 300)), (4096, 8, _result(4096, 1200)), (4096, 64, _result(4096, 5000)),
    (1 << 20, 1, _result(1 << 20, 100)), (1 << 20, 64, _result(1 << 20, 400)),
]


def test_table_has_a_row_per_point() -> None:
    lines = sweep.table(POINTS).splitlines()
    assert len(lines) == 2 + len(POINTS)
    assert lines[2].startswith("| 4 KiB | 1 | 300 | ")
    assert lines[-1].startswith("| 1 MiB | 64 | 400 | 0.391 | ")


def test_plot_is_self_contained_svg_with_a_line_per_block_size() -> None:
    root = ET.fromstring(sweep.svg(POINTS, "title & <more>"))
    assert root.tag == f"{SVG}svg"
    assert not [e for e in root.iter() if any("href" in k for k in e.attrib)]  # nothing external
    lines = root.findall(f"{SVG}polyline")
    assert len(lines) == 2
    xy = [[tuple(map(float, p.split(","))) for p in line.attrib["points"].split()] for line in lines]
    small, big = xy
    assert [x for x, _ in small] == sorted(x for x, _ in small)  # in flight grows to the right
    assert small[0][1] > small[1][1] > small[2][1]  # more GiB/s is higher up (smaller y)
    assert big[0][1] < small[0][1]  # 1 MiB blocks move more GiB/s than 4 KiB at one in flight
    assert len(root.findall(f"{SVG}circle")) == len(POINTS)
