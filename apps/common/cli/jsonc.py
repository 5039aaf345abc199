"""The JSON of DOCA's ``--json`` files: what json-c's tokener accepts in its default (non-strict) mode.

DOCA argp reads the file with json-c, so NVIDIA's example configurations may hold ``/* … */`` and
``// …`` comments and a trailing comma before ``]`` or ``}``; `loads` accepts those, and nests at
most `MAX_DEPTH` levels (json-c's ``JSON_TOKENER_DEFAULT_DEPTH``). Integers must fit in 64 bits
(json-c keeps them as ``int64_t``). Every problem is one `JsoncError` naming the line and column,
never a Python traceback (Python's own parser recurses without bound and refuses integers of more
than 4,300 digits with a bare ``ValueError``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "JsoncError", "loads"]

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects (json-c's default tokener depth)."""
_INT_LIMIT = 1 << 64
_WS = " \t\r\n"


class JsoncError(ValueError):
    """The text is not a JSON document json-c would accept (the message names line and column)."""


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {col}"


def _strip(text: str) -> str:
    """*text* with comments turned into blanks and trailing commas removed (positions of the rest kept
    for error messages), after checking the nesting depth."""
    out = list(text)
    i, n, depth = 0, len(text), 0
    last_comma = -1  # position of a ',' not yet followed by a value
    prev = ""  # the last significant character
    while i < n:
        c = text[i]
        if c == '"':
            last_comma, prev = -1, '"'
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] in "/*":
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2)
            if end < 0:
                if text[i + 1] == "*":
                    raise JsoncError(f"unterminated /* comment at {_where(text, i)}")
                end = n
            elif text[i + 1] == "*":
                end += 2
            for k in range(i, end):
                if out[k] != "\n":
                    out[k] = " "
            i = end
            continue
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise JsoncError(f"nested deeper than {MAX_DEPTH} levels at {_where(text, i)}")
        elif c in "]}":
            depth -= 1
            if last_comma >= 0:
                out[last_comma] = " "  # json-c (non-strict) accepts a trailing comma
        if c == ",":
            # only after a value: json-c refuses "[,]" and "[1,,]" even when not strict
            last_comma = i if prev not in ("", "[", "{", ",", ":") else -1
        elif c not in _WS and c not in "]}":
            last_comma = -1
        if c not in _WS:
            prev = c
        i += 1
    return "".join(out)


def _int(token: str) -> int:
    if len(token.lstrip("-")) > 20:
        raise JsoncError(f"integer {token[:24]}… does not fit in 64 bits")
    value = int(token)
    if not -(1 << 63) <= value < _INT_LIMIT:
        raise JsoncError(f"integer {token} does not fit in 64 bits")
    return value


def loads(text: str) -> Any:
    """Parse *text* as json-c does (comments, trailing commas, depth ≤ `MAX_DEPTH`, 64-bit integers);
    `JsoncError` on anything else."""
    stripped = _strip(text)
    try:
        return json.loads(stripped, parse_int=_int)
    except JsoncError:
        raise
    except json.JSONDecodeError as exc:
        raise JsoncError(f"{exc.msg} at {_where(text, exc.pos)}") from None
    except (ValueError, RecursionError) as exc:  # a last guard: one line, never a traceback
        raise JsoncError(str(exc).split("\n")[0]) from None
