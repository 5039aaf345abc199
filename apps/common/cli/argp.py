"""DOCA-argp-style command lines on argparse.

Every app gets DOCA's general flags (``-h``, ``-v/--version``, ``-l/--log-level``,
``--sdk-log-level``, ``-j/--json FILE``) plus its program flags, generated from its
`.config` model. A JSON file holds flags by **long name**, either flat or grouped
as DOCA does:

```json
{"doca_general_flags": {"log-level": 60},
 "doca_program_flags": {"device": "03:00.0", "cpu": [0, 1], "block-size": 4096}}
```

The file is read as DOCA's argp reads it with json-c (`.jsonc`): ``/* */`` and ``//`` comments,
trailing commas, single-quoted strings and ``TRUE``/``False``/``NULL`` in any case are accepted, nesting
is limited to 32 levels and integers to 64 bits.
Command-line flags win over the JSON file. Problems are reported one per line as
``<prog>: error: <problem>`` and the program exits with status 2 (`EXIT_USAGE`, as every app and
tool of doca_py does; DOCA argp itself exits 1). ``<prog>`` is the name the user typed: the console
script's name, or ``python -m apps.<app>``.
"""

from __future__ import annotations

import argparse
import enum
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

import doca_py
from doca_py.log import parse_level, to_python_level

from apps.common.cli import jsonc
from apps.common.cli.config import GENERAL_FIELDS, CommonConfig, flag_info, flag_name, validation_messages
from apps.common.cli.usage import EXIT_USAGE, UsageParser, command_name

__all__ = ["DocaArgumentParser", "build_parser_for", "parse_config", "json_to_argv", "setup_logging", "run_main",
           "version_text", "EXIT_FAILURE", "EXIT_USAGE"]

EXIT_FAILURE = 1
ConfigT = TypeVar("ConfigT", bound=CommonConfig)
_JSON_GROUPS = ("doca_program_flags", "doca_general_flags")


def version_text(prog: str) -> str:
    """``"<prog>: v<version>"`` (the doca_py version and backend)."""
    return f"{prog}: v{doca_py.__version__} (doca_py, {doca_py.impl} backend)"


class DocaArgumentParser(UsageParser):
    """An ``ArgumentParser`` that exits with status 2 on errors and can report several."""


def _level_arg(text: str) -> str:
    try:
        parse_level(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _int_arg(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        pass
    try:
        return int(text, 0)  # 0x… / 0o… / 0b… as a convenience
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r}") from None


def _help(model: type[BaseModel], field: str) -> str:
    f = model.model_fields[field]
    text = f.description or ""
    if f.is_required():
        return f"{text} (required)"
    default = f.default
    if default is None or default is False or default == "":
        return text
    shown = default.name.lower() if isinstance(default, enum.Enum) else default
    return f"{text} (default: {shown})"


def build_parser_for(model: type[CommonConfig], prog: str, description: str,
                     epilog: str | None = None) -> DocaArgumentParser:
    """An argparse parser with DOCA's general flags and one flag per field of *model*.

    Program flags default to "absent" so the model applies its own defaults.
    """
    parser = DocaArgumentParser(prog=prog, description=description, epilog=epilog,
                                argument_default=argparse.SUPPRESS)
    general = parser.add_argument_group("DOCA general flags")
    general.add_argument("-v", "--version", action="version", version=version_text("%(prog)s"),
                         help="print the program version and exit")
    general.add_argument("-j", "--json", metavar="FILE",
                         help="read flags from a JSON file (keys are the long flag names; command-line flags "
                              "take precedence)")
    program = parser.add_argument_group("Program flags")
    for name in model.model_fields:
        info = flag_info(model, name)
        group = general if name in GENERAL_FIELDS else program
        names = [info["short"], flag_name(name)] if info.get("short") else [flag_name(name)]
        kwargs: dict[str, Any] = {"dest": name, "help": _help(model, name)}
        if info.get("kind") == "bool":
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = info.get("metavar") or ("N" if info.get("kind") == "int" else "VALUE")
            if info.get("kind") == "int":
                kwargs["type"] = _int_arg
            elif name in GENERAL_FIELDS:
                kwargs["type"] = _level_arg
            if info.get("multi"):
                kwargs["action"] = "append"
        group.add_argument(*names, **kwargs)
    return parser


def _option_map(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: a for a in parser._actions for opt in a.option_strings}


def _on_command_line(action: argparse.Action, argv: Sequence[str]) -> bool:
    for tok in argv:
        if tok == "--":
            break
        for opt in action.option_strings:
            if tok == opt or (opt.startswith("--") and tok.startswith(opt + "=")) or \
                    (not opt.startswith("--") and tok.startswith(opt) and len(tok) > len(opt)):
                return True
    return False


def json_to_argv(parser: argparse.ArgumentParser, data: Any, source: str,
                 argv: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Command-line tokens for the flags in a parsed JSON document, and the problems found.

    Flags also present in *argv* are skipped (the command line wins).
    """
    problems: list[str] = []
    if not isinstance(data, dict):
        return [], [f"{source}: the JSON document must be an object of flags, not {type(data).__name__}"]
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in _JSON_GROUPS:
            if not isinstance(value, dict):
                problems.append(f"{source}: {key!r} must be an object of flags")
                continue
            flat.update(value)
        elif key.startswith("doca_") and key.endswith("_flags"):
            continue  # other DOCA groups (e.g. DPDK flags) do not apply to these apps
        else:
            flat[key] = value
    options = _option_map(parser)
    tokens: list[str] = []
    for key, value in flat.items():
        opt = "--" + str(key).lstrip("-")
        action = options.get(opt)
        if action is None or opt in ("--json", "--help", "--version"):
            problems.append(f"{source}: unknown flag {key!r}")
            continue
        if _on_command_line(action, argv):
            continue
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and not isinstance(action, argparse._AppendAction):
            problems.append(f"{source}: {opt} takes a single value, not a list")
            continue
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                problems.append(f"{source}: {opt} must be true or false")
            elif value:
                tokens.append(opt)
            continue
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                problems.append(f"{source}: {opt} must be a string or an integer, not {json.dumps(v)}")
                continue
            tokens.append(f"{opt}={v}")
    return tokens, problems


def parse_config(model: type[ConfigT], parser: DocaArgumentParser, argv: Sequence[str] | None = None) -> ConfigT:
    """Parse *argv* (default ``sys.argv[1:]``, and then the program is named as the user typed it) plus
    an optional ``--json`` file into *model*.

    On any problem print them all (one per line) and exit with status 2.
    """
    if argv is None:
        parser.prog = command_name(parser.prog)
    args = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("-j", "--json")
    known, _ = pre.parse_known_args(args)
    tokens: list[str] = []
    if known.json:
        path = Path(known.json)
        try:
            data = jsonc.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            parser.fail([f"cannot read JSON file {str(path)!r}: {exc.strerror or exc}"])
        except UnicodeDecodeError as exc:
            parser.fail([f"JSON file {str(path)!r} is not UTF-8 text: {exc.reason} at byte {exc.start}"])
        except jsonc.JsoncError as exc:
            parser.fail([f"JSON file {str(path)!r} is not valid JSON: {exc}"])
        tokens, problems = json_to_argv(parser, data, str(path), args)
        if problems:
            parser.fail(problems)
    ns, unknown = parser.parse_known_args(tokens + args)
    problems = [f"unrecognized arguments: {' '.join(unknown)}"] if unknown else []
    values = {k: v for k, v in vars(ns).items() if k != "json"}
    try:
        config = model.model_validate(values)
    except ValidationError as exc:
        problems += validation_messages(exc)
    if problems:
        parser.fail(problems)
    return config


def setup_logging(config: CommonConfig, stream: Any = None) -> logging.Logger:
    """Configure the ``apps`` logger from ``--log-level`` and ``doca_py.sdk`` from
    ``--sdk-log-level`` (records go to *stream*, default stdout, like DOCA's backends)."""
    handler = logging.StreamHandler(sys.stdout if stream is None else stream)
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(levelname)s][%(name)s] %(message)s"))
    app = logging.getLogger("apps")
    app.handlers[:] = [handler]
    app.setLevel(to_python_level(config.log_level))
    app.propagate = False
    sdk = logging.getLogger("doca_py.sdk")
    sdk.setLevel(to_python_level(config.sdk_log_level))
    if not any(isinstance(h, logging.StreamHandler) for h in sdk.handlers):
        sdk.addHandler(handler)
    return app


def run_main(main: Callable[[], int]) -> int:
    """Run an app's *main*: an exception prints ``EXCEPTION: <text>`` on stderr and gives
    status 1, as the C++ apps do; Ctrl-C prints ``Aborted: User requested abort``."""
    try:
        return main()
    except KeyboardInterrupt:
        sys.stderr.write("Aborted: User requested abort\n")
        return EXIT_FAILURE
    except Exception as exc:  # noqa: BLE001 - the documented top-level behaviour
        sys.stderr.write(f"EXCEPTION: {exc}\n")
        return EXIT_FAILURE
