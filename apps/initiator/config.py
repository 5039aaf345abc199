"""The initiator's flags: the reference's (:class:`apps.storage.cli.config.InitiatorConfig`, §2.1)
plus reporting flags named after fio's."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from apps.storage.cli.config import InitiatorConfig, flag

from .metrics import parse_percentile_list

__all__ = ["InitiatorAppConfig", "OutputFormat", "EtaMode", "IO_TIMEOUT_DEFAULT"]

IO_TIMEOUT_DEFAULT = 8
"""``--io-timeout``: a few seconds more than the gga bridge's ``--target-io-timeout`` (5 s), so a
read that the bridge serves degraded after a stalled target is not counted as timed out."""

OutputFormat = Literal["normal", "json"]
EtaMode = Literal["auto", "always", "never"]


class InitiatorAppConfig(InitiatorConfig):
    """``python -m apps.initiator``: §2.1 plus ``--output-format``, ``--eta``,
    ``--status-interval``, ``--percentile-list``, ``--group-reporting`` and ``--io-timeout``."""

    output_format: OutputFormat = flag("normal", metavar="FORMAT",
                                       help="normal (the reference's statistics block plus latency "
                                            "percentiles) or json (fio's key names, on stdout)")
    eta: EtaMode = flag("auto", metavar="WHEN",
                        help="progress on stderr: auto (a live line on a terminal, plain periodic lines "
                             "otherwise), always (a live line) or never")
    status_interval: int = flag(1, kind="int", help="seconds between plain progress lines (0 = none)")
    percentile_list: str = flag(":".join(f"{p:g}" for p in (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99,
                                                               99.5, 99.9, 99.95, 99.99)),
                                metavar="LIST", help="completion latency percentiles to report, colon separated")
    group_reporting: bool = flag(False, kind="bool",
                                 help="json: one job aggregating every worker instead of one job per worker")
    io_timeout: int = flag(IO_TIMEOUT_DEFAULT, kind="int",
                           help="seconds an IO may wait for the service's response before the run fails with a "
                                "timeout (0 = no deadline)")

    @field_validator("io_timeout")
    @classmethod
    def _io_timeout(cls, v: int) -> int:
        if not 0 <= v <= 3600:
            raise ValueError(f"{v} must be from 0 (no deadline) to 3600 seconds")
        return v

    @field_validator("status_interval")
    @classmethod
    def _interval(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"{v} must not be negative")
        return v

    @field_validator("percentile_list")
    @classmethod
    def _percentiles(cls, v: str) -> str:
        parse_percentile_list(v)
        return v

    @property
    def percentiles(self) -> tuple[float, ...]:
        """:attr:`percentile_list` parsed."""
        return parse_percentile_list(self.percentile_list)
