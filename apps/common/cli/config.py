"""What the storage apps' configuration models share (pydantic v2, frozen, ``extra="forbid"``).

Each app's own model lives in its package (``apps.<app>.config``: ``TargetConfig``,
``ZeroCopyConfig``, ``InitiatorConfig``, ``SbcGeneratorConfig``, ``GgaOffloadConfig``); here
are the base (`CommonConfig`, `ServiceConfig`) and the field types and validators they share.

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
    "ExecutionStrategy", "CommonConfig", "ServiceConfig", "Cpus", "ControlTimeout", "Endpoint",
    "existing_file", "validation_messages", "GENERAL_FIELDS", "StatsInterval", "StatsFormat", "stats_interval_flag",
    "stats_format_flag",
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


def existing_file(value: Path) -> Path:
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


def _stats_interval(value: int) -> int:
    if not 0 <= value <= 3600:
        raise ValueError(f"{value} must be from 0 (no live statistics) to 3600 seconds")
    return value


#: ``--stats-interval`` in seconds: 0 (off) to 3600.
StatsInterval = Annotated[int, AfterValidator(_stats_interval)]
#: ``--stats-format``.
StatsFormat = Literal["text", "json"]


def stats_interval_flag() -> Any:
    """The ``--stats-interval`` flag (off by default) of the apps with live statistics."""
    return flag(0, kind="int", help="print live statistics (IO/s, MiB/s, in flight, errors, degraded reads) every "
                                    "N seconds; 0 = never")


def stats_format_flag() -> Any:
    """The ``--stats-format`` flag: text lines or JSON lines."""
    return flag("text", metavar="FORMAT", help="live statistics as text lines or as json lines (stable keys)")


#: ``--cpu``, repeated: at least one, none negative, none twice.
Cpus = Annotated[list[int], AfterValidator(_cpus)]
#: ``--control-timeout`` in seconds: positive.
ControlTimeout = Annotated[int, AfterValidator(_control_timeout)]


class ServiceConfig(CommonConfig):
    """The flags both bridges share (§2.2, §2.3): device, representor, workers, comch server, timeout."""

    device: str = flag(short="-d", metavar="DEVICE",
                       help="BlueField device: PCI address, IB device name or network interface name")
    representor: str = flag(short="-r", metavar="PCI_ADDR", help="PCI address of the host-side representor")
    cpu: Cpus = flag(kind="int", multi=True, help="CPU id for a worker; repeat for more workers")
    command_channel_name: str = flag("doca_storage_comch", help="comch server name")
    control_timeout: ControlTimeout = flag(5, kind="int", help="control timeout in seconds (must not be 0)")
    stats_interval: StatsInterval = stats_interval_flag()
    stats_format: StatsFormat = stats_format_flag()

    @field_validator("command_channel_name")
    @classmethod
    def _channel(cls, v: str) -> str:
        if not v:
            raise ValueError("the comch server name must not be empty")
        return v


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
