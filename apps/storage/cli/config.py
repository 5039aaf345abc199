"""Configuration models of the storage apps (pydantic v2, frozen, ``extra="forbid"``).

Every field is one command-line flag: the long flag is the field name with ``_``
replaced by ``-`` (``block_size`` ↔ ``--block-size``), which is also the key in a
DOCA ``--json`` file. Field metadata (`flag`) gives the short name, the argp
type (``string``/``int``/``bool``) and whether the flag may repeat. `.cli` builds
the argparse parser from these models, so help, JSON keys and validation never drift.

Validation messages name the flag: `validation_messages` turns a pydantic
``ValidationError`` into one ``--flag: problem`` line per problem.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, \
    model_validator

from doca_py.log import LogLevel, parse_level

__all__ = [
    "FlagKind", "flag", "flag_name", "flag_info", "Ipv4Endpoint", "parse_ipv4_endpoint", "MatrixType",
    "ExecutionStrategy", "CommonConfig", "SbcGeneratorConfig", "TargetConfig", "GgaOffloadConfig",
    "ZeroCopyConfig", "InitiatorConfig", "validation_messages", "GENERAL_FIELDS",
]

FlagKind = Literal["string", "int", "bool"]
MatrixType = Literal["vandermonde", "cauchy"]
ExecutionStrategy = Literal["read_throughput_test", "write_throughput_test", "read_write_data_validity_test",
                            "read_only_data_validity_test"]
GENERAL_FIELDS = ("log_level", "sdk_log_level")
"""Fields of `CommonConfig` (DOCA's "general" flags, not the program's)."""


def flag(default: Any = ..., *, help: str, kind: FlagKind = "string", short: str | None = None,
         multi: bool = False, metavar: str | None = None) -> Any:
    """A pydantic ``Field`` describing one flag (``...`` as *default* = required)."""
    extra: dict[str, Any] = {"kind": kind, "multi": multi}
    if short:
        extra["short"] = short
    if metavar:
        extra["metavar"] = metavar
    return Field(default, description=help, json_schema_extra=extra)


def flag_name(field: str) -> str:
    """``--long-name`` of a field."""
    return "--" + field.replace("_", "-")


def flag_info(model: type[BaseModel], field: str) -> dict[str, Any]:
    """The `flag` metadata of *field* (kind, multi, short, metavar)."""
    extra = model.model_fields[field].json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {"kind": "string", "multi": False}


def _level(value: Any) -> LogLevel:
    if isinstance(value, LogLevel):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"log level must be a name or a DOCA number, not {type(value).__name__}")
    return parse_level(value)


Level = Annotated[LogLevel, BeforeValidator(_level)]


class Ipv4Endpoint(NamedTuple):
    """``a.b.c.d:port`` of a storage target."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_ipv4_endpoint(text: str) -> Ipv4Endpoint:
    """Parse ``a.b.c.d:port`` (no hostnames, no IPv6, port mandatory, 1–65535).

    Stricter than the reference's parser (which looks at 22 characters and counts dots):
    each octet must be a decimal 0–255.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected 'a.b.c.d:port', got {type(text).__name__}")
    if any(c.isspace() for c in text):
        raise ValueError(f"{text!r}: whitespace is not allowed in 'a.b.c.d:port'")
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"{text!r}: expected 'a.b.c.d:port' (the port is mandatory)")
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        raise ValueError(f"{text!r}: {host!r} is not an IPv4 address (a.b.c.d)") from None
    if not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"{text!r}: port {port!r} is not a number from 1 to 65535")
    return Ipv4Endpoint(host, int(port))


def _endpoint(value: Any) -> Ipv4Endpoint:
    if isinstance(value, Ipv4Endpoint):
        return value
    return parse_ipv4_endpoint(value)


Endpoint = Annotated[Ipv4Endpoint, BeforeValidator(_endpoint)]


def _existing_file(value: Path) -> Path:
    if not value.exists():
        raise ValueError(f"file {str(value)!r} does not exist")
    if not value.is_file():
        raise ValueError(f"{str(value)!r} is not a regular file")
    return value


class CommonConfig(BaseModel):
    """DOCA general flags shared by every app."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    log_level: Level = flag(LogLevel.INFO, short="-l", metavar="LEVEL",
                            help="application log level: a name (disable, crit, error, warning, info, debug, "
                                 "trace) or a DOCA number (10-70)")
    sdk_log_level: Level = flag(LogLevel.WARNING, metavar="LEVEL", help="DOCA SDK log level (same values)")


def _cpus(value: list[int]) -> list[int]:
    if not value:
        raise ValueError("at least one CPU id is required")
    bad = [c for c in value if c < 0]
    if bad:
        raise ValueError(f"CPU ids must be >= 0, got {bad}")
    dup = sorted({c for c in value if value.count(c) > 1})
    if dup:
        raise ValueError(f"CPU ids must not repeat, got {dup} more than once")
    return value


def _control_timeout(value: int) -> int:
    if value <= 0:
        raise ValueError(f"{value}: the control timeout must be a positive number of seconds")
    return value


#: ``--cpu``, repeated: at least one, none negative, none twice.
Cpus = Annotated[list[int], AfterValidator(_cpus)]
#: ``--control-timeout`` in seconds: positive.
ControlTimeout = Annotated[int, AfterValidator(_control_timeout)]


class SbcGeneratorConfig(CommonConfig):
    """``doca_storage_gga_offload_sbc_generator`` (§2.5, §6.5)."""

    device: str = flag(short="-d", metavar="DEVICE",
                       help="DOCA device with erasure-coding support: PCI address (03:00.0), IB device name "
                            "(mlx5_0) or network interface name")
    original_input_data: Path = flag(help="plain input file (padded with zeros to a whole number of blocks)",
                                     metavar="FILE")
    block_size: int = flag(4096, kind="int", help="plain block size B in bytes; a multiple of 128 so that each "
                                                  "half is a multiple of 64 bytes as doca_ec requires")
    matrix_type: MatrixType = flag("vandermonde", help="erasure-coding matrix: vandermonde or cauchy",
                                   metavar="TYPE")
    data_1: Path = flag(help="output .sbc file for the first halves of the compressed blocks", metavar="FILE")
    data_2: Path = flag(help="output .sbc file for the second halves", metavar="FILE")
    data_p: Path = flag(help="output .sbc file for the parity halves", metavar="FILE")
    verify: bool = flag(False, kind="bool", help="after writing, read the three files back, recover each half "
                                                 "from the other half and the parity, decompress and compare "
                                                 "with the input")
    verify_only: bool = flag(False, kind="bool", help="do not write anything: verify existing --data-1/--data-2/"
                                                      "--data-p files against --original-input-data")

    @field_validator("original_input_data")
    @classmethod
    def _input_exists(cls, v: Path) -> Path:
        return _existing_file(v)

    @field_validator("block_size")
    @classmethod
    def _block_size(cls, v: int) -> int:
        if v <= 0 or v % 64:
            raise ValueError(f"{v} is not a positive multiple of 64")
        if v % 128:
            raise ValueError(f"{v} is a multiple of 64 but not of 128: its halves ({v // 2} bytes) would not be "
                             f"a multiple of 64 bytes, which doca_ec requires")
        if v > 0xFFFFFFFF:
            raise ValueError(f"{v} does not fit in u32")
        return v

    @model_validator(mode="after")
    def _distinct_files(self) -> SbcGeneratorConfig:
        outs = {"--data-1": self.data_1, "--data-2": self.data_2, "--data-p": self.data_p}
        seen: dict[Path, str] = {self.original_input_data.resolve(): "--original-input-data"}
        for name, path in outs.items():
            key = path.resolve()
            if key in seen:
                raise ValueError(f"{name} and {seen[key]} name the same file {str(path)!r}")
            seen[key] = name
        if self.verify_only:
            missing = [f"{n} {str(p)!r}" for n, p in outs.items() if not p.is_file()]
            if missing:
                raise ValueError(f"--verify-only needs existing files: {', '.join(missing)} not found")
        return self


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
    binary_content: Path | None = flag(None, metavar="FILE",
                                       help="initial content: an .sbc file (detected by magic) or a raw file of "
                                            "exactly block-size x block-count bytes")
    block_count: int = flag(128, kind="int", help="number of blocks (ignored with an .sbc file)")
    block_size: int = flag(4096, kind="int", help="block size in bytes (ignored with an .sbc file)")

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

    @field_validator("binary_content")
    @classmethod
    def _content(cls, v: Path | None) -> Path | None:
        return None if v is None or str(v) == "" else _existing_file(v)

    @field_validator("block_count", "block_size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if not 0 < v <= 0xFFFFFFFF:
            raise ValueError(f"{v} must be from 1 to 4294967295")
        return v


class _ServiceConfig(CommonConfig):
    device: str = flag(short="-d", metavar="DEVICE",
                       help="BlueField device: PCI address, IB device name or network interface name")
    representor: str = flag(short="-r", metavar="PCI_ADDR", help="PCI address of the host-side representor")
    cpu: Cpus = flag(kind="int", multi=True, help="CPU id for a worker; repeat for more workers")
    command_channel_name: str = flag("doca_storage_comch", help="comch server name")
    control_timeout: ControlTimeout = flag(5, kind="int", help="control timeout in seconds (must not be 0)")

    @field_validator("command_channel_name")
    @classmethod
    def _channel(cls, v: str) -> str:
        if not v:
            raise ValueError("the comch server name must not be empty")
        return v


class GgaOffloadConfig(_ServiceConfig):
    """``doca_storage_comch_to_rdma_gga_offload`` (§2.2)."""

    data_1_storage: Endpoint = flag(help="a.b.c.d:port of the data_1 target", metavar="ADDR:PORT")
    data_2_storage: Endpoint = flag(help="a.b.c.d:port of the data_2 target", metavar="ADDR:PORT")
    data_p_storage: Endpoint = flag(help="a.b.c.d:port of the parity target", metavar="ADDR:PORT")
    matrix_type: MatrixType = flag("vandermonde", help="erasure-coding matrix: vandermonde or cauchy",
                                   metavar="TYPE")
    trigger_recovery_read_every_n: int = flag(0, kind="int", help="make every N-th block read a recovery read "
                                                                  "(0 = never)")
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

    @field_validator("target_io_timeout")
    @classmethod
    def _target_io_timeout(cls, v: int) -> int:
        if not 0 <= v <= 3600:
            raise ValueError(f"{v} must be from 0 (no deadline) to 3600 seconds")
        return v


class ZeroCopyConfig(_ServiceConfig):
    """``doca_storage_comch_to_rdma_zero_copy`` (§2.3)."""

    storage_server: Endpoint = flag(help="a.b.c.d:port of the storage target", metavar="ADDR:PORT")


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
    control_timeout: ControlTimeout = flag(5, kind="int", help="seconds to connect and to wait for the data path")
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
        return None if v is None or str(v) == "" else _existing_file(v)

    @model_validator(mode="after")
    def _needs_content(self) -> InitiatorConfig:
        if self.execution_strategy == "read_only_data_validity_test" and self.storage_plain_content is None:
            raise ValueError("--storage-plain-content is required for read_only_data_validity_test")
        return self


def validation_messages(exc: ValidationError) -> list[str]:
    """One ``--flag: problem`` line per error in *exc*."""
    out: list[str] = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if isinstance(p, str)]
        msg = str(err.get("msg", "invalid value"))
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        if err.get("type") == "missing":
            msg = "is required"
        elif err.get("type") == "extra_forbidden":
            msg = "is not a flag of this program"
        elif err.get("type") == "literal_error":
            msg = f"{err.get('input')!r} is not allowed: {msg[0].lower() + msg[1:]}"
        out.append(f"{flag_name(loc[0])}: {msg}" if loc else msg)
    return out
