"""No test gives an app a literal time-out (issue 35 item 25): every ``--control-timeout``,
``--target-io-timeout``, ``--first-message-timeout``, ``--io-timeout``, ``--idle-timeout``, per-run ``--timeout``, File
Compression's and Secure Channel's ``-t``, ``control_timeout=``-style argument and comch retry window
that a test passes to a running app comes from tests/deadlines.py (`product_timeout`, `bound`), so a
loaded machine cannot make a healthy peer miss it.

Not counted: what a test only parses (inside ``parse_args(...)``), ``0`` (no deadline), and a line that
says why its literal cannot mislead (``# deadline: <why>``: no peer at all, or one that never fires).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent
FLAGS = {"--control-timeout", "--target-io-timeout", "--first-message-timeout", "--io-timeout", "--idle-timeout",
         "--timeout"}
SHORT_T = ("file_compression", "secure_channel")  # where -t is a time-out (elsewhere: a block count …)
KEYWORDS = {"control_timeout", "target_io_timeout", "first_message_timeout", "io_timeout", "idle_timeout"}
ENV = "DOCA_PY_COMCH_RETRY_WINDOW"
PARSERS = {"parse_args", "parse_config", "model_validate"}


def _literal(node: ast.AST | None) -> bool:
    """A number, or a string of one, that is not 0."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and \
            not isinstance(node.value, bool):
        text = str(node.value)
        return text.replace(".", "", 1).isdigit() and float(text) != 0
    return False


def _parsed_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in PARSERS:
                return True
    return False


def _findings(path: Path) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    flags = FLAGS | ({"-t"} if path.parent.name in SHORT_T else set())
    found: list[tuple[int, str, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Call)):  # "--flag", "<n>" side by side
            items = node.args if isinstance(node, ast.Call) else node.elts
            for flag, value in zip(items, items[1:]):
                if isinstance(flag, ast.Constant) and flag.value in flags and _literal(value):
                    found.append((flag.lineno, f"{flag.value} {value.value}", flag))  # type: ignore[attr-defined]
                if isinstance(flag, ast.Constant) and flag.value == ENV and _literal(value):
                    found.append((flag.lineno, f"{ENV}={value.value}", flag))  # type: ignore[attr-defined]
        if isinstance(node, ast.keyword) and (node.arg in KEYWORDS or node.arg == ENV) and _literal(node.value):
            found.append((node.value.lineno, f"{node.arg}={node.value.value}", node))  # type: ignore[attr-defined]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults) + \
                list(node.args.kw_defaults)
            for arg, default in zip(args, defaults):
                if arg.arg in KEYWORDS and _literal(default):
                    found.append((arg.lineno, f"{arg.arg} defaults to {default.value}", arg))  # type: ignore[union-attr]
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == ENV and _literal(value):
                    found.append((key.lineno, f"{ENV}={value.value}", key))  # type: ignore[attr-defined]
    out = set()
    for lineno, what, where in found:
        if "# deadline:" in lines[lineno - 1] or _parsed_only(where, parents):
            continue
        out.add((lineno, f"{path.relative_to(ROOT.parent)}:{lineno}: {what}"))
    return [text for _, text in sorted(out)]


def test_no_test_gives_an_app_a_literal_time_out() -> None:
    files = [p for p in sorted(ROOT.rglob("*.py")) if p.name not in ("deadlines.py", Path(__file__).name)]
    findings = [f for p in files for f in _findings(p)]
    assert not findings, "literal time-outs given to apps (take them from tests/deadlines.py):\n" + "\n".join(findings)


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        'def f(control_timeout: int = 5): ...\n'
        'Deployment(files, control_timeout=3, extra=("--target-io-timeout", "1"))\n'
        'env.update(DOCA_PY_COMCH_RETRY_WINDOW="1")\n'
        'run(["--io-timeout", "0", "--control-timeout", str(t)])\n'
        'parse_args(["--control-timeout", "7"])\n'
        'run(["--first-message-timeout", "1"])  # deadline: no peer\n')
    found = [f.split(": ", 1)[1] for f in _findings_in(sample)]
    assert found == ["control_timeout defaults to 5", "--target-io-timeout 1", "control_timeout=3",
                     "DOCA_PY_COMCH_RETRY_WINDOW=1"], found


def _findings_in(path: Path) -> list[str]:
    global ROOT
    saved, ROOT = ROOT, path.parent
    try:
        return _findings(path)
    finally:
        ROOT = saved
