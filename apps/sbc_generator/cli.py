"""The generator's command line: its parser (``--help``, man page) and ``main``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from doca_py.errors import ErrorCode

from apps.common.cli.argp import DocaArgumentParser, build_parser_for, parse_config, run_main, setup_logging, \
    version_text
from apps.common.errors import StorageAppError

from .config import SbcGeneratorConfig
from .generator import MAX_REPORTED_PROBLEMS, Printer, generate, verify

__all__ = ["APP_NAME", "build_parser", "parse_args", "main"]

APP_NAME = "doca_storage_gga_offload_sbc_generator"


def build_parser() -> DocaArgumentParser:
    """The argparse parser of the generator (also used for ``--help`` and man pages)."""
    return build_parser_for(
        SbcGeneratorConfig, prog="python -m apps.sbc_generator",
        description="Generate the data_1 / data_2 / data_p .sbc files of the DOCA storage gga offload "
                    "application from a plain input file.",
        epilog="Use the zero-padded input (a whole number of blocks) as the initiator's --storage-plain-content.")


def parse_args(argv: Sequence[str] | None = None) -> SbcGeneratorConfig:
    """Parse and validate a command line (exits with status 2 on errors)."""
    return parse_config(SbcGeneratorConfig, build_parser(), argv)


def _print_config(config: SbcGeneratorConfig, out: Printer) -> None:
    out("Configuration: {")
    for name in ("device", "original_input_data", "block_size", "matrix_type", "data_1", "data_2", "data_p"):
        out(f"\t{name.replace('_', '-')} : \"{getattr(config, name)}\",")
    out(f"\tverify : {'only' if config.verify_only else 'yes' if config.verify else 'no'}")
    out("}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, generate and/or verify; 0 on success, 1 on any failure."""
    config = parse_args(argv)
    setup_logging(config)

    def run() -> int:
        print(version_text(APP_NAME))
        _print_config(config, print)
        if not config.verify_only:
            generate(config)
        if config.verify or config.verify_only:
            report = verify(config)
            if not report.ok:
                for problem in report.problems[:MAX_REPORTED_PROBLEMS]:
                    sys.stderr.write(f"verify: {problem}\n")
                more = len(report.problems) - MAX_REPORTED_PROBLEMS
                if more > 0:
                    sys.stderr.write(f"verify: ... and {more} more bad blocks\n")
                raise StorageAppError(ErrorCode.IO_FAILED, f"Verification failed: {len(report.problems)} of "
                                                           f"{report.block_count} blocks are bad")
        return 0

    return run_main(run)
