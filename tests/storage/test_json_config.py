"""``-j/--json`` of the seven apps: the JSON that DOCA's argp (json-c) reads, and one line plus exit
status 2 for every configuration file it would not (issue 26 items 12 and 13)."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apps.common.cli import jsonc

ROOT = Path(__file__).resolve().parents[2]
APPS = ["apps.sbc_generator", "apps.storage_target", "apps.gga_offload", "apps.zero_copy", "apps.initiator",
        "apps.file_compression", "apps.secure_channel"]


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DOCA_PY_IMPL="emulated", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


# -- the parser -------------------------------------------------------------------------------------
def test_comments_and_trailing_commas_are_json_c_s() -> None:
    text = """
    /*
     * written in NVIDIA's style: a block comment, line comments, trailing commas
     */
    {
        "doca_general_flags": {
            // "log-level": 60,
            "log-level": 50,
        },
        "doca_program_flags": {
            "cpu": [0, 1, /* the third one later */],
            "name": "a // b /* c */",   // comment markers inside strings are text
        },
    }
    """
    assert jsonc.loads(text) == {"doca_general_flags": {"log-level": 50},
                                 "doca_program_flags": {"cpu": [0, 1], "name": "a // b /* c */"}}


@pytest.mark.parametrize("text", ["[,]", "[1,,]", '{"a": 1,,}', '{,}', '{"a":,}', "/* open", '{"a": 1} x'])
def test_what_json_c_refuses_is_refused(text: str) -> None:
    with pytest.raises(jsonc.JsoncError, match="line 1 column"):
        jsonc.loads(text)


def test_depth_and_integers_are_bounded_as_in_json_c() -> None:
    assert jsonc.loads("[" * 32 + "]" * 32) is not None
    with pytest.raises(jsonc.JsoncError, match="nested deeper than 32 levels"):
        jsonc.loads("[" * 33 + "]" * 33)
    with pytest.raises(jsonc.JsoncError, match="nested deeper"):
        jsonc.loads("[" * 100_000)  # Python's parser would recurse until RecursionError
    assert jsonc.loads("[18446744073709551615, -9223372036854775808]") == [2**64 - 1, -2**63]
    for big in ("18446744073709551616", "9" * 5000):
        with pytest.raises(jsonc.JsoncError, match="does not fit in 64 bits"):
            jsonc.loads('{"cpu": ' + big + "}")


def test_single_quotes_and_literals_in_any_case_are_json_c_s() -> None:
    # json-c (not strict) reads single-quoted keys and strings, and true/false/null/NaN/Infinity in any case
    text = """{'doca_program_flags': {'device': '03:00.0', "name": 'say "hi"', 'verify': TRUE, 'check': False,
              'none': NULL, 'big': -INFINITY, 'odd': [nan, Infinity], 'cpu': [010, 1., -.5, 2e+]}}"""
    flags = jsonc.loads(text)["doca_program_flags"]
    assert flags["device"] == "03:00.0" and flags["name"] == 'say "hi"'
    assert flags["verify"] is True and flags["check"] is False and flags["none"] is None
    assert flags["big"] == -math.inf and math.isnan(flags["odd"][0]) and flags["odd"][1] == math.inf
    assert flags["cpu"] == [10, 1.0, -0.5, 2.0] and isinstance(flags["cpu"][0], int)


@pytest.mark.parametrize("text,message", [
    ("['it\\'s']", "unknown escape \\' at line 1 column 5"),  # json-c's escapes are JSON's, in either quotes
    ("[nul]", "unknown literal 'nul' at line 1 column 2"),
    ("[inf]", "unknown literal 'inf' at line 1 column 2"),
    ("[truex]", "expecting ',' or ']', found 'x' at line 1 column 6"),
    ("[+1]", "expecting a value, found '+' at line 1 column 2"),
    ("[.5]", "expecting a value, found '.' at line 1 column 2"),
    ("[1.-5]", "malformed number '1.-5' at line 1 column 2"),
    ("{'a' 1}", "expecting ':', found '1' at line 1 column 6"),
    ("null x", "unexpected text after the JSON document at line 1 column 6"),
    ("['open", "unterminated string at line 1 column 2"),
])
def test_what_json_c_refuses_is_refused_with_where(text: str, message: str) -> None:
    with pytest.raises(jsonc.JsoncError) as err:
        jsonc.loads(text)
    assert str(err.value) == message


class _JsonC:
    """json-c itself (``libjson-c.so.5``, the library DOCA's argp reads ``-j`` files with) through ctypes."""

    class _Iter(ctypes.Structure):
        _fields_ = [("opaque", ctypes.c_void_p)]

    def __init__(self) -> None:
        lib = ctypes.CDLL(ctypes.util.find_library("json-c") or "libjson-c.so.5")
        vp, it = ctypes.c_void_p, ctypes.POINTER(self._Iter)
        for name, res, args in [
            ("json_tokener_new", vp, []), ("json_tokener_free", None, [vp]),
            ("json_tokener_parse_ex", vp, [vp, ctypes.c_char_p, ctypes.c_int]),
            ("json_tokener_get_error", ctypes.c_int, [vp]), ("json_object_put", ctypes.c_int, [vp]),
            ("json_object_get_type", ctypes.c_int, [vp]), ("json_object_get_boolean", ctypes.c_int, [vp]),
            ("json_object_get_double", ctypes.c_double, [vp]), ("json_object_get_int64", ctypes.c_int64, [vp]),
            ("json_object_get_uint64", ctypes.c_uint64, [vp]), ("json_object_array_length", ctypes.c_size_t, [vp]),
            ("json_object_array_get_idx", vp, [vp, ctypes.c_size_t]),
            ("json_object_get_string_len", ctypes.c_int, [vp]), ("json_object_get_string", vp, [vp]),
            ("json_object_iter_begin", self._Iter, [vp]), ("json_object_iter_end", self._Iter, [vp]),
            ("json_object_iter_equal", ctypes.c_int, [it, it]), ("json_object_iter_next", None, [it]),
            ("json_object_iter_peek_name", ctypes.c_char_p, [it]), ("json_object_iter_peek_value", vp, [it]),
        ]:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.lib = lib

    def _value(self, obj: int | None) -> Any:
        lib = self.lib
        kind = lib.json_object_get_type(obj) if obj else 0
        if kind == 0:
            return None
        if kind == 1:
            return bool(lib.json_object_get_boolean(obj))
        if kind == 2:
            return lib.json_object_get_double(obj)
        if kind == 3:
            value = lib.json_object_get_int64(obj)
            return lib.json_object_get_uint64(obj) if value == (1 << 63) - 1 else value
        if kind == 5:
            return [self._value(lib.json_object_array_get_idx(obj, i)) for i in range(lib.json_object_array_length(obj))]
        if kind == 6:
            return ctypes.string_at(lib.json_object_get_string(obj), lib.json_object_get_string_len(obj)).decode()
        out = {}
        pos, end = lib.json_object_iter_begin(obj), lib.json_object_iter_end(obj)
        while not lib.json_object_iter_equal(ctypes.byref(pos), ctypes.byref(end)):
            out[lib.json_object_iter_peek_name(ctypes.byref(pos)).decode()] = \
                self._value(lib.json_object_iter_peek_value(ctypes.byref(pos)))
            lib.json_object_iter_next(ctypes.byref(pos))
        return out

    def parse(self, text: str) -> tuple[bool, Any]:
        """(accepted, value) as ``json_tokener_parse`` reads *text*."""
        tok = self.lib.json_tokener_new()
        try:
            obj = self.lib.json_tokener_parse_ex(tok, text.encode(), -1)
            if self.lib.json_tokener_get_error(tok):
                return False, None
            try:
                return True, self._value(obj)
            finally:
                if obj:
                    self.lib.json_object_put(obj)
        finally:
            self.lib.json_tokener_free(tok)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


_PIECES = ["[", "]", "{", "}", ",", ":", " ", "\n", "\t", "'a'", '"b"', "'", '"', "\\", "\\u", "d83d", "dc00", "0041",
           "\\n", "\\'", "1", "0", "-", "+", ".", "e", "E", "true", "TRUE", "fAlSe", "null", "NULL", "nan", "NaN",
           "Infinity", "iNFINITY", "inf", "tru", "/*", "*/", "//", "/", "x", "é", "9" * 20]


def test_the_parser_reads_what_json_c_reads() -> None:
    """Differential: json-c itself and `loads` on the same texts (fragments of JSON, json-c's extensions
    and mistakes, seeded): the same verdict and the same value, except where `loads` is stricter on
    purpose (text after the document, integers beyond 64 bits, a document cut short inside a comment,
    which json-c returns the last value of)."""
    try:
        ref = _JsonC()
    except OSError:
        pytest.skip("json-c (libjson-c.so.5) is not installed")
    rnd = random.Random(35)
    texts = ["{'a': 'b\"c'}", "[True, FALSE, Null, nan, NAN, Infinity, -infinity, iNfInItY]", "[010, 1., -.5, 1e, 2e+]",
             "['\\u00e9\\ud83d\\ude00', '\\ud83d', '\\ude00x', '\\ud83d\\n', '\\ud83d\\ud83d\\ude00']", "[\"a\tb\"]",
             "[" * 31 + "1" + "]" * 31, "[" * 32 + "1" + "]" * 32, "[" * 32 + "]" * 32, "[" * 33 + "]" * 33]
    texts += ["".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 14))) for _ in range(4000)]
    disagree = []
    for text in texts:
        ok, value = ref.parse(text)
        try:
            mine: Any = jsonc.loads(text)
        except jsonc.JsoncError as exc:
            if ok and not _stricter_on_purpose(text, str(exc), value):
                disagree.append((text, "json-c reads", value, "loads refuses", str(exc)))
            continue
        if not ok or not _same(mine, value):
            disagree.append((text, "json-c", (ok, value), "loads", mine))
    assert not disagree, "\n".join(map(repr, disagree[:20]))
    assert sum(1 for t in texts if ref.parse(t)[0]) > 400  # the fuzz reaches accepted documents too


def _stricter_on_purpose(text: str, message: str, value: Any) -> bool:
    if "does not fit in 64 bits" in message:
        return True
    where = re.search(r"after the JSON document at line (\d+) column (\d+)$", message)
    if where:  # json-c stopped reading at the end of the document: the text before is what it read
        line, col = int(where.group(1)), int(where.group(2))
        offset = sum(len(s) + 1 for s in text.split("\n")[:line - 1]) + col - 1
        return _same(jsonc.loads(text[:offset]), value)
    # json-c "accepts" a document cut short inside a comment, returning its last value
    return ("found the end" in message or "unterminated /* comment" in message) and "/" in text


# -- every app -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("module", APPS)
@pytest.mark.parametrize("what,content,message", [
    ("deep", '{"doca_program_flags": {"cpu": ' + "[" * 5000 + "]" * 5000 + "}}", "nested deeper than 32"),
    ("bigint", '{"doca_program_flags": {"cpu": ' + "7" * 4301 + "}}", "does not fit in 64 bits"),
])
def test_a_bad_json_file_is_one_line_and_exit_2(module: str, what: str, content: str, message: str,
                                                tmp_path: Path) -> None:
    path = tmp_path / f"{what}.json"
    path.write_text(content)
    out = _run(module, "-j", str(path))
    assert out.returncode == 2, (out.returncode, out.stderr)
    errors = [line for line in out.stderr.splitlines() if not line.startswith("usage:")
              and not line.startswith(" ")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in out.stderr, out.stderr


NVIDIA_STYLE = {
    "apps.file_compression": """{
        "doca_general_flags": {
            // -l: 60 is debug
            "log-level": 60,
        },
        "doca_program_flags": {
            /* the comch device; on the DPU also the representor ("rep-pci") */
            "pci-addr": "03:00.0",
            "file": "%(input)s",
            "timeout": 20,
        }
    }""",
    "apps.secure_channel": """{
        "doca_general_flags": {
            "log-level": 60
        },
        "doca_program_flags": {
            "msg-size": 128,   // bytes per message
            "num-msgs": 10,
            "pci-addr": "03:00.0",
            "rep-pci": "b1:00.0",
        },
    }""",
    "apps.storage_target": """// the storage target, listening for a bridge
    {
        "doca_program_flags": {
            "device": "03:00.0",
            "cpu": [0, 1,],
            "listen-port": 12345,
            /* "binary-content": "data.sbc", */
        },
    }""",
}


@pytest.mark.parametrize("module", sorted(NVIDIA_STYLE))
def test_a_file_written_in_nvidia_s_style_is_read(module: str, tmp_path: Path) -> None:
    data = tmp_path / "input.bin"
    data.write_bytes(b"x" * 100)
    path = tmp_path / "params.json"
    path.write_text(NVIDIA_STYLE[module] % {"input": str(data)} if "%(" in NVIDIA_STYLE[module]
                    else NVIDIA_STYLE[module])
    cli = importlib.import_module(module + ".cli")
    config = cli.parse_args(["-j", str(path)])
    dumped = config.model_dump()
    if module == "apps.file_compression":
        assert dumped["timeout"] == 20 and dumped["file"] == data and dumped["pci_addr"] == "03:00.0"
    elif module == "apps.secure_channel":
        assert (dumped["msg_size"], dumped["num_msgs"], dumped["rep_pci"]) == (128, 10, "b1:00.0")
    else:
        assert dumped["cpu"] == [0, 1] and dumped["listen_port"] == 12345


def test_single_quotes_and_true_in_capitals_reach_the_app(tmp_path: Path) -> None:
    data = tmp_path / "plain.bin"
    data.write_bytes(b"x" * 100)
    path = tmp_path / "generator.json"
    path.write_text("{'doca_program_flags': {'device': '03:00.0', 'original-input-data': '%s', 'verify': TRUE,\n"
                    "    'matrix-type': 'cauchy', 'data-1': 'd1.sbc', 'data-2': 'd2.sbc', 'data-p': 'dp.sbc',\n"
                    "    'verify-only': False}}" % data)
    config = importlib.import_module("apps.sbc_generator.cli").parse_args(["-j", str(path)])
    assert (config.verify, config.verify_only, config.matrix_type) == (True, False, "cauchy")
    assert config.original_input_data == data
