"""``-j/--json`` of the seven apps: the JSON that DOCA's argp (json-c) reads, and one line plus exit
status 2 for every configuration file it would not (issue 26 items 12 and 13)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

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
