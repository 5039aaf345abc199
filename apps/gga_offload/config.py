"""The gga bridge's flags (``doca_storage_comch_to_rdma_gga_offload``, storage-apps-spec §2.2):
the bridges' shared ones plus the three targets, the EC matrix, the recovery schedule, the deadline
for reaching the targets and the per-IO deadline towards them."""

from __future__ import annotations

from pydantic import field_validator

from apps.common.cli.config import Endpoint, MatrixType, ServiceConfig, flag

__all__ = ["GgaOffloadConfig"]


class GgaOffloadConfig(ServiceConfig):
    """``doca_storage_comch_to_rdma_gga_offload`` (§2.2)."""

    data_1_storage: Endpoint = flag(help="a.b.c.d:port of the data_1 target", metavar="ADDR:PORT")
    data_2_storage: Endpoint = flag(help="a.b.c.d:port of the data_2 target", metavar="ADDR:PORT")
    data_p_storage: Endpoint = flag(help="a.b.c.d:port of the parity target", metavar="ADDR:PORT")
    matrix_type: MatrixType = flag("vandermonde", help="erasure-coding matrix: vandermonde or cauchy",
                                   metavar="TYPE")
    trigger_recovery_read_every_n: int = flag(0, kind="int", help="make every N-th block read a recovery read "
                                                                  "(0 = never)")
    target_connect_timeout: int = flag(60, kind="int",
                                       help="seconds from the start within which the three storage targets must "
                                            "accept the control connection (retried every 0.1 s while one refuses, "
                                            "the attempts counted in the log); then the service ends with status 1; "
                                            "0 = retry for ever (the reference)")
    target_io_timeout: int = flag(5, kind="int",
                                  help="seconds a storage target may take to answer an IO request before it is "
                                       "treated as stalled (reads are then served from the two other targets, "
                                       "writes refused); 0 = no deadline")

    @field_validator("trigger_recovery_read_every_n")
    @classmethod
    def _every_n(cls, v: int) -> int:
        if not 0 <= v <= 0xFFFF:
            raise ValueError(f"{v} does not fit in u16 (0-65535)")
        return v

    @field_validator("target_connect_timeout")
    @classmethod
    def _target_connect_timeout(cls, v: int) -> int:
        if not 0 <= v <= 86400:
            raise ValueError(f"{v} must be from 0 (retry for ever) to 86400 seconds")
        return v

    @field_validator("target_io_timeout")
    @classmethod
    def _target_io_timeout(cls, v: int) -> int:
        if not 0 <= v <= 3600:
            raise ValueError(f"{v} must be from 0 (no deadline) to 3600 seconds")
        return v
