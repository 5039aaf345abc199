"""The JSON of DOCA's ``--json`` files: what json-c's tokener accepts in its default (non-strict) mode.

DOCA argp reads the file with json-c, whose tokener, unless told to be strict, also takes:

* ``/* … */`` and ``// …`` comments wherever white space may be;
* a trailing comma before ``]`` or ``}`` (never ``[,]`` nor ``[1,,]``);
* strings and object keys in single quotes (``'03:00.0'``): inside them ``"`` is an ordinary
  character, and ``\\'`` is refused as json-c refuses it (its escapes are JSON's);
* ``true``, ``false``, ``null``, ``NaN`` and ``Infinity`` / ``-Infinity`` in any case (``TRUE``, ``nan``);
* numbers as json-c scans them: leading zeros (``010`` is ten), ``1.`` and ``-.5``, a dangling
  exponent (``1e``, ``2e+``) dropped;
* raw control characters inside strings.

`loads` accepts those and nests at most `MAX_DEPTH` levels (json-c's ``JSON_TOKENER_DEFAULT_DEPTH``,
counting every value). It refuses two things json-c lets through: an integer that does not fit in
64 bits (json-c clamps it silently) and text after the document (json-c stops reading there).
Every problem is one `JsoncError` naming the line and column, never a Python traceback.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["MAX_DEPTH", "JsoncError", "loads"]

MAX_DEPTH = 32
"""Deepest nesting of values (json-c's default tokener depth: ``[]`` 32 deep, a value 31 deep)."""
_INT_MIN, _INT_LIMIT = -(1 << 63), 1 << 64
_WS = " \t\r\n"  # json-c's is_ws_char: no \v nor \f
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_FLOAT = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # what strtod takes of json-c's number text
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "nan": math.nan, "infinity": math.inf}


class JsoncError(ValueError):
    """The text is not a JSON document json-c would accept (the message names line and column)."""


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {col}"


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


class _Parser:
    """json-c's tokener states as a recursive descent (at most `MAX_DEPTH` frames deep)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str, pos: int | None = None) -> JsoncError:
        return JsoncError(f"{what} at {_where(self.text, self.pos if pos is None else pos)}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def unexpected(self, expecting: str) -> JsoncError:
        c = self.peek()
        return self.fail(f"expecting {expecting}, found {c!r}" if c else f"expecting {expecting}, found the end")

    def skip_ws(self) -> None:
        """Skip white space and comments (json-c's eatws state)."""
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WS:
                self.pos += 1
            elif c == "/":
                kind = text[self.pos + 1: self.pos + 2]
                if kind == "/":
                    end = text.find("\n", self.pos)
                    self.pos = n if end < 0 else end
                elif kind == "*":
                    end = text.find("*/", self.pos + 2)
                    if end < 0:
                        raise self.fail("unterminated /* comment")
                    self.pos = end + 2
                else:
                    raise self.fail("'/' that starts no comment")
            else:
                return

    def value(self, depth: int) -> Any:
        if depth >= MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        c = self.peek()
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.array(depth)
        if c in ('"', "'"):
            return self.string()
        if c == "-" or _is_digit(c):
            return self.number()
        if c in ("t", "T", "f", "F", "n", "N", "i", "I"):
            return self.literal()
        raise self.unexpected("a value")

    def array(self, depth: int) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        self.skip_ws()
        while self.peek() != "]":  # also right after a comma: json-c's trailing comma
            out.append(self.value(depth + 1))
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                self.skip_ws()
            elif self.peek() != "]":
                raise self.unexpected("',' or ']'")
        self.pos += 1
        return out

    def obj(self, depth: int) -> dict[str, Any]:
        self.pos += 1
        out: dict[str, Any] = {}
        self.skip_ws()
        while self.peek() != "}":
            if self.peek() not in ('"', "'"):
                raise self.unexpected("a quoted key")
            key = self.string()
            self.skip_ws()
            if self.peek() != ":":
                raise self.unexpected("':'")
            self.pos += 1
            self.skip_ws()
            out[key] = self.value(depth + 1)  # json-c keeps the last of duplicate keys
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                self.skip_ws()
            elif self.peek() != "}":
                raise self.unexpected("',' or '}'")
        self.pos += 1
        return out

    def string(self) -> str:
        """A string in double or single quotes, with JSON's escapes; a lone surrogate becomes U+FFFD."""
        text, start = self.text, self.pos
        quote = text[start]
        self.pos += 1
        parts: list[str] = []
        high = 0  # a \u high surrogate waiting for its low half
        while True:
            ends = [i for i in (text.find(quote, self.pos), text.find("\\", self.pos)) if i >= 0]
            if not ends:
                raise self.fail("unterminated string", start)
            end = min(ends)
            if end > self.pos and high:
                parts.append("\ufffd")
                high = 0
            parts.append(text[self.pos:end])
            self.pos = end + 1
            if text[end] == quote:
                if high:
                    parts.append("\ufffd")
                return "".join(parts)
            esc = text[self.pos: self.pos + 1]
            if esc == "u":
                hexa = text[self.pos + 1: self.pos + 5]
                if not _HEX4.fullmatch(hexa):
                    raise self.fail("bad \\u escape", end)
                code = int(hexa, 16)
                self.pos += 5
                if high and 0xDC00 <= code <= 0xDFFF:
                    parts.append(chr(0x10000 + ((high & 0x3FF) << 10) + (code & 0x3FF)))
                    high = 0
                    continue
                if high:
                    parts.append("\ufffd")
                    high = 0
                if 0xD800 <= code <= 0xDBFF:
                    high = code
                else:
                    parts.append("\ufffd" if 0xDC00 <= code <= 0xDFFF else chr(code))
                continue
            if high:
                parts.append("\ufffd")
                high = 0
            if esc not in _ESCAPES:
                raise self.fail(f"unknown escape \\{esc}" if esc else "unterminated string", end)
            parts.append(_ESCAPES[esc])
            self.pos += 1

    def number(self) -> Any:
        """json-c's number state: scan digits, one '.', one exponent and the signs it allows there, then
        read the text as strtoll/strtoull or strtod would."""
        text, start, n = self.text, self.pos, len(self.text)
        is_double = is_exponent = False
        neg_ok, pos_ok = True, False
        i = start
        while i < n:
            c = text[i]
            if not (_is_digit(c) or (not is_exponent and c in "eE") or (neg_ok and c == "-")
                    or (pos_ok and c == "+") or (not is_double and c == ".")):
                break
            neg_ok = pos_ok = False
            if c == ".":
                is_double = neg_ok = pos_ok = True
            elif c in "eE":
                is_exponent = is_double = neg_ok = pos_ok = True
            i += 1
        token = text[start:i]
        self.pos = i
        if token == "-" and text[i: i + 1] in ("i", "I"):
            return -self.literal(infinity_only=True)
        if is_double:
            token = token.rstrip("eE+-") or token[:1]
            m = _FLOAT.fullmatch(token)
            if m is None:
                raise self.fail(f"malformed number {token!r}", start)
            return float(token)
        digits = token.lstrip("-")
        if not digits:
            raise self.fail(f"malformed number {token!r}", start)
        if len(digits.lstrip("0")) > 20:
            raise self.fail(f"integer {token[:24]}… does not fit in 64 bits", start)
        value = int(token)
        if not _INT_MIN <= value < _INT_LIMIT:
            raise self.fail(f"integer {token} does not fit in 64 bits", start)
        return value

    def literal(self, infinity_only: bool = False) -> Any:
        """``true``, ``false``, ``null``, ``NaN`` or ``Infinity`` in any case (json-c's strncasecmp); as in
        json-c the literal ends with its last letter (``nullx`` is ``null`` and then an unexpected ``x``)."""
        start = self.pos
        for word, value in _LITERALS.items():
            if (not infinity_only or word == "infinity") and self.text[start: start + len(word)].lower() == word:
                self.pos = start + len(word)
                return value
        end = start + 1
        while end < len(self.text) and end - start < 20 and self.text[end].isascii() and self.text[end].isalpha():
            end += 1
        raise self.fail(f"unknown literal {self.text[start:end]!r}", start)


def loads(text: str) -> Any:
    """Parse *text* as json-c's non-strict tokener does (see the module docstring); `JsoncError` on
    anything else, naming the line and column."""
    parser = _Parser(text)
    parser.skip_ws()
    if not parser.peek():
        raise parser.fail("empty document")
    value = parser.value(0)
    after = parser.pos
    while after < len(text) and text[after] in _WS:
        after += 1
    try:
        parser.skip_ws()
        trailing = bool(parser.peek())
    except JsoncError:  # an unterminated comment after the document
        trailing = True
    if trailing:
        raise parser.fail("unexpected text after the JSON document", after)
    return value
