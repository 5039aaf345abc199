"""The target's flags (``doca_storage_target_rdma``, storage-apps-spec §2.4) plus
``--listen-address``, ``--first-message-timeout``, ``--control-timeout`` and ``--idle-timeout``."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import field_validator

from apps.common.cli.config import CommonConfig, Cpus, StatsFormat, StatsInterval, existing_file, flag, \
    stats_format_flag, stats_interval_flag

__all__ = ["TargetConfig"]


class TargetConfig(CommonConfig):
    """``doca_storage_target_rdma`` (§2.4)."""

    device: str = flag(short="-d", metavar="DEVICE",
                       help="RDMA device: PCI address, IB device name or network interface name")
    cpu: Cpus = flag(kind="int", multi=True, help="CPU id for a worker; repeat for more workers")
    listen_port: int = flag(kind="int", help="TCP port for the control connection (0 = any free port)")
    listen_address: str = flag("0.0.0.0", metavar="ADDR",
                               help="IPv4 address the control port listens on (0.0.0.0 = every interface, as the "
                                    "reference; 127.0.0.1 = this machine only)")
    first_message_timeout: int = flag(0, kind="int",
                                      help="seconds a client may take, once connected, to send its first control "
                                           "message (which must be a query_storage_request) before it is dropped; "
                                           "0 = no limit (the default: a service connects at start and sends its "
                                           "first request only when its initiator does)")
    control_timeout: int = flag(30, kind="int",
                                help="seconds the requester may stay silent in a session before the target ends it "
                                     "(status 1): no control message while one is expected, or, once the data "
                                     "path has carried io, no io message and no stop_storage_request; a stop of "
                                     "the target itself is not counted; 0 = no limit (the reference)")
    idle_timeout: int = flag(0, kind="int",
                             help="seconds the requester may send nothing at all in a session (no control message, "
                                  "no io message) before the target ends it (status 1), even while the data path "
                                  "runs with no io for this target, where --control-timeout cannot tell an idle "
                                  "requester from a stopped one; 0 = no limit (the default: an idle session is "
                                  "legitimate, e.g. the parity target of a read-only run)")
    binary_content: Path | None = flag(None, metavar="FILE",
                                       help="initial content: an .sbc file (detected by magic) or a raw file of "
                                            "exactly block-size x block-count bytes")
    block_count: int = flag(128, kind="int", help="number of blocks (ignored with an .sbc file)")
    block_size: int = flag(4096, kind="int", help="block size in bytes (ignored with an .sbc file)")
    stats_interval: StatsInterval = stats_interval_flag()
    stats_format: StatsFormat = stats_format_flag()

    @field_validator("listen_port")
    @classmethod
    def _port(cls, v: int) -> int:
        if not 0 <= v <= 65535:
            raise ValueError(f"{v} does not fit in u16 (0-65535)")
        return v

    @field_validator("listen_address")
    @classmethod
    def _address(cls, v: str) -> str:
        try:
            return str(ipaddress.IPv4Address(v))
        except ValueError:
            raise ValueError(f"{v!r} is not an IPv4 address (a.b.c.d)") from None

    @field_validator("first_message_timeout")
    @classmethod
    def _first_message_timeout(cls, v: int) -> int:
        if not 0 <= v <= 86400:
            raise ValueError(f"{v} must be from 0 (no limit) to 86400 seconds")
        return v

    @field_validator("control_timeout", "idle_timeout")
    @classmethod
    def _control_timeout(cls, v: int) -> int:
        if not 0 <= v <= 86400:
            raise ValueError(f"{v} must be from 0 (no limit) to 86400 seconds")
        return v

    @field_validator("binary_content")
    @classmethod
    def _content(cls, v: Path | None) -> Path | None:
        return None if v is None or str(v) == "" else existing_file(v)

    @field_validator("block_count", "block_size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if not 0 < v <= 0xFFFFFFFF:
            raise ValueError(f"{v} must be from 1 to 4294967295")
        return v
