"""The initiator's flags: the reference's (`InitiatorConfig`, storage-apps-spec §2.1) plus
reporting flags named after fio's (`InitiatorAppConfig`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import field_validator, model_validator

from apps.common.cli.config import CommonConfig, ControlTimeout, Cpus, ExecutionStrategy, StatsFormat, StatsInterval, \
    existing_file, flag, stats_format_flag, stats_interval_flag

from .metrics import parse_percentile_list

__all__ = ["InitiatorConfig", "InitiatorAppConfig", "OutputFormat", "EtaMode", "IO_TIMEOUT_DEFAULT"]

IO_TIMEOUT_DEFAULT = 8
"""``--io-timeout``: a few seconds more than the gga bridge's ``--target-io-timeout`` (5 s), so a
read that the bridge serves degraded after a stalled target is not counted as timed out."""

OutputFormat = Literal["normal", "json"]
EtaMode = Literal["auto", "always", "never"]


class InitiatorConfig(CommonConfig):
    """``doca_storage_initiator_comch`` (§2.1)."""

    device: str = flag(short="-d", metavar="DEVICE",
                       help="DOCA device: PCI address, IB device name or network interface name")
    cpu: Cpus = flag(kind="int", multi=True, help="CPU id for a worker; repeat for more workers")
    storage_plain_content: Path | None = flag(None, metavar="FILE",
                                              help="file with the expected plain storage content")
    execution_strategy: ExecutionStrategy = flag(metavar="STRATEGY",
                                                 help="read_throughput_test, write_throughput_test, "
                                                      "read_write_data_validity_test or read_only_data_validity_test")
    run_limit_operation_count: int = flag(1_000_000, kind="int", help="transactions per worker")
    transaction_count: int = flag(64, kind="int", help="concurrent transactions per worker")
    command_channel_name: str = flag("doca_storage_comch", help="comch server name to connect to")
    control_timeout: ControlTimeout = flag(5, kind="int",
                                          help="seconds to connect, to wait for each control response (the "
                                               "reference: a fixed 5 s), for the data path and for the "
                                               "service's consumers to expire")
    local_io_region_size: int = flag(0, kind="int", help="local IO region size in bytes (0 = storage capacity)")
    blocks_per_io: int = flag(1, kind="int", help="storage blocks per IO")

    @field_validator("run_limit_operation_count")
    @classmethod
    def _run_limit(cls, v: int) -> int:
        # The reference accepts 0 for validity tests and then hangs; refuse it everywhere.
        if v <= 0:
            raise ValueError(f"{v}: the run limit must be positive")
        return v

    @field_validator("transaction_count")
    @classmethod
    def _transactions(cls, v: int) -> int:
        if not 0 < v <= 0x7FFF:
            raise ValueError(f"{v} must be from 1 to 32767 (the service doubles it into a u16)")
        return v

    @field_validator("local_io_region_size")
    @classmethod
    def _region(cls, v: int) -> int:
        if v < 0:
            raise ValueError(f"{v} must not be negative")
        return v

    @field_validator("blocks_per_io")
    @classmethod
    def _blocks(cls, v: int) -> int:
        if not 0 < v <= 255:
            raise ValueError(f"{v} must be from 1 to 255 (the gga service limit)")
        return v

    @field_validator("storage_plain_content")
    @classmethod
    def _content(cls, v: Path | None) -> Path | None:
        return None if v is None or str(v) == "" else existing_file(v)

    @model_validator(mode="after")
    def _needs_content(self) -> InitiatorConfig:
        if self.execution_strategy == "read_only_data_validity_test" and self.storage_plain_content is None:
            raise ValueError("--storage-plain-content is required for read_only_data_validity_test")
        return self



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
    stats_interval: StatsInterval = stats_interval_flag()
    stats_format: StatsFormat = stats_format_flag()

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
