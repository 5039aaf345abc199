"""DOCA-style command lines: flags, --json files, validation messages, exit codes, man pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.sbc_generator import build_parser, parse_args
from apps.common.cli.argp import build_parser_for, parse_config
from apps.initiator.config import InitiatorConfig
from apps.gga_offload.config import GgaOffloadConfig
from apps.common.cli.config import Ipv4Endpoint, parse_ipv4_endpoint
from apps.storage_target.config import TargetConfig
from apps.zero_copy.config import ZeroCopyConfig
from apps.common.cli.manpages import build_manpage
from doca_py.log import LogLevel


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    src = tmp_path / "in.bin"
    src.write_bytes(b"x" * 10)
    return {"input": str(src), "d1": str(tmp_path / "d1.sbc"), "d2": str(tmp_path / "d2.sbc"),
            "dp": str(tmp_path / "dp.sbc"), "dir": str(tmp_path)}


def _gen_argv(f: dict[str, str], *extra: str) -> list[str]:
    return ["-d", "03:00.0", "--original-input-data", f["input"], "--data-1", f["d1"], "--data-2", f["d2"],
            "--data-p", f["dp"], *extra]


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    with pytest.raises(SystemExit) as info:
        parse_args(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    return [line for line in err.splitlines() if ": error: " in line]


def test_generator_defaults_and_flags(files: dict[str, str]) -> None:
    cfg = parse_args(_gen_argv(files))
    assert (cfg.block_size, cfg.matrix_type, cfg.verify, cfg.log_level) == (4096, "vandermonde", False, LogLevel.INFO)
    cfg = parse_args(_gen_argv(files, "--block-size", "8192", "--matrix-type", "cauchy", "-l", "debug",
                               "--sdk-log-level", "70", "--verify"))
    assert (cfg.block_size, cfg.matrix_type, cfg.verify) == (8192, "cauchy", True)
    assert (cfg.log_level, cfg.sdk_log_level) == (LogLevel.DEBUG, LogLevel.TRACE)


def test_every_problem_reported_once_with_exit_2(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    errors = _fails(capsys, ["--block-size", "100", "--matrix-type", "reed", "--bogus", "1"])
    text = "\n".join(errors)
    assert "unrecognized arguments: --bogus 1" in text
    assert "--block-size: 100 is not a positive multiple of 64" in text
    assert "--matrix-type: 'reed' is not allowed" in text
    for flag in ("--device", "--original-input-data", "--data-1", "--data-2", "--data-p"):
        assert f"{flag}: is required" in text
    assert len(errors) == 8


def test_bad_values(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert "not of 128" in _fails(capsys, _gen_argv(files, "--block-size", "192"))[0]
    assert "invalid integer value: 'big'" in _fails(capsys, _gen_argv(files, "--block-size", "big"))[0]
    assert "unknown log level 'loud'" in _fails(capsys, _gen_argv(files, "-l", "loud"))[0]
    missing = dict(files, input=files["dir"] + "/nope")
    assert "--original-input-data: file" in _fails(capsys, _gen_argv(missing))[0]
    same = dict(files, d2=files["d1"])
    assert "--data-2 and --data-1 name the same file" in _fails(capsys, _gen_argv(same))[0]
    assert "--verify-only needs existing files" in _fails(capsys, _gen_argv(files, "--verify-only"))[0]


def test_json_file_flat_grouped_and_precedence(files: dict[str, str], tmp_path: Path) -> None:
    grouped = tmp_path / "grouped.json"
    grouped.write_text(json.dumps({
        "doca_general_flags": {"log-level": 60},
        "doca_program_flags": {"device": "03:00.0", "original-input-data": files["input"], "data-1": files["d1"],
                               "data-2": files["d2"], "data-p": files["dp"], "block-size": 8192,
                               "matrix-type": "cauchy", "verify": True}}))
    cfg = parse_args(["-j", str(grouped)])
    assert (cfg.block_size, cfg.matrix_type, cfg.verify, cfg.log_level) == (8192, "cauchy", True, LogLevel.DEBUG)
    cfg = parse_args(["--json", str(grouped), "--block-size=256", "-l", "error"])  # the command line wins
    assert (cfg.block_size, cfg.log_level) == (256, LogLevel.ERROR)
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"device": "mlx5_0", "original-input-data": files["input"], "data-1": files["d1"],
                                "data-2": files["d2"], "data-p": files["dp"]}))
    assert parse_args(["-j", str(flat)]).device == "mlx5_0"


@pytest.mark.parametrize(("doc", "needle"), [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "must be an object of flags"),
    ('{"colour": 1}', "unknown flag 'colour'"),
    ('{"block-size": [1, 2]}', "--block-size takes a single value"),
    ('{"verify": "yes"}', "--verify must be true or false"),
    ('{"device": {"a": 1}}', "--device must be a string or an integer"),
    ('{"doca_program_flags": 3}', "must be an object of flags"),
])
def test_bad_json_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: str, needle: str) -> None:
    path = tmp_path / "cfg.json"
    path.write_text(doc)
    errors = _fails(capsys, ["-j", str(path)])
    assert needle in errors[0]


def test_missing_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "cannot read JSON file" in _fails(capsys, ["-j", str(tmp_path / "none.json")])[0]


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--original-input-data FILE" in out and "(required)" in out and "(default: 4096)" in out
    with pytest.raises(SystemExit):
        parser.parse_args(["-v"])
    assert "v0." in capsys.readouterr().out


def test_manpage_renders() -> None:
    page = build_manpage(build_parser())
    assert page.startswith(".TH") and "original\\-input\\-data" in page and ".SH" in page


def test_target_and_service_configs(tmp_path: Path) -> None:
    parser = build_parser_for(TargetConfig, "target", "t")
    cfg = parse_config(TargetConfig, parser, ["-d", "mlx5_0", "--cpu", "0", "--cpu", "3", "--listen-port", "0"])
    assert (cfg.cpu, cfg.listen_port, cfg.block_size, cfg.block_count, cfg.binary_content) == ([0, 3], 0, 4096, 128,
                                                                                               None)
    cfg_json = tmp_path / "t.json"
    cfg_json.write_text(json.dumps({"doca_program_flags": {"device": "x", "cpu": [1, 2], "listen-port": 4000}}))
    assert parse_config(TargetConfig, parser, ["-j", str(cfg_json)]).cpu == [1, 2]
    with pytest.raises(SystemExit):
        parse_config(TargetConfig, parser, ["-d", "x", "--cpu", "1", "--cpu", "1", "--listen-port", "70000"])
    gga = parse_config(GgaOffloadConfig, build_parser_for(GgaOffloadConfig, "gga", "g"), [
        "-d", "03:00.0", "-r", "3b:00.0", "--cpu", "0", "--data-1-storage", "10.0.0.1:1234",
        "--data-2-storage", "10.0.0.2:1234", "--data-p-storage", "10.0.0.3:1234"])
    assert gga.data_p_storage == Ipv4Endpoint("10.0.0.3", 1234) and gga.matrix_type == "vandermonde"
    zc = ZeroCopyConfig(device="d", representor="r", cpu=[0], storage_server="127.0.0.1:9")  # type: ignore[arg-type]
    assert str(zc.storage_server) == "127.0.0.1:9" and zc.control_timeout == 5
    ini = InitiatorConfig(device="d", cpu=[0], execution_strategy="read_throughput_test")
    assert (ini.transaction_count, ini.blocks_per_io, ini.run_limit_operation_count) == (64, 1, 1_000_000)
    with pytest.raises(ValueError, match="storage-plain-content is required"):
        InitiatorConfig(device="d", cpu=[0], execution_strategy="read_only_data_validity_test")


@pytest.mark.parametrize("text", ["10.0.0.1", "10.0.0.1:", "10.0.0:80", "host:80", "10.0.0.1:65536",
                                  "10.0.0.1 :80", "[::1]:80", "10.0.0.256:1", "10.0.0.1:0"])
def test_bad_endpoints(text: str) -> None:
    with pytest.raises(ValueError):
        parse_ipv4_endpoint(text)


def test_good_endpoint() -> None:
    assert parse_ipv4_endpoint("192.168.100.2:65535") == ("192.168.100.2", 65535)
