"""The C headers of ``libdoca``: ``DIR/include/doca_*.h``, for C programs built against the emulator.

One source of truth: the declaration tables of [`doca_py.native.capi`][doca_py.native.capi] decide which
functions a DOCA version exports and their ABI (exactly what ``DIR/lib`` exports); the enums come from
doca_py's Python enums ([`ErrorCode`][doca_py.errors.ErrorCode], [`doca_py.types`][doca_py.types] …); the
C spelling of each prototype and callback typedef (type names, parameter names, stability marker) from
[`prototypes`][doca_py.libdoca.prototypes], DOCA's own headers transcribed. Every prototype is checked
against its table entry before it is written ([`check`][doca_py.libdoca.headers.check]): a disagreement
is a [`HeaderError`][doca_py.libdoca.headers.HeaderError], never a header that compiles but calls with the
wrong ABI.

The headers follow DOCA's: one per DOCA header (``doca_dev.h``, ``doca_mmap.h`` …, 2.6: ``doca_cc*.h`` for
comch), opaque ``struct`` declarations, the header-inline helpers (``doca_version``,
``doca_buf_inventory_buf_get_by_addr``/``_by_data``), the ``DOCA_LOG_*`` macros of that version, and the
stability markers: an experimental function warns as deprecated unless ``DOCA_ALLOW_EXPERIMENTAL_API`` is
defined, as with DOCA (its samples' build defines it).
"""

from __future__ import annotations

import ctypes
import enum
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DocaPyError, ErrorCode
from . import prototypes as P

__all__ = ["HeaderError", "Param", "Prototype", "parse", "check", "prototypes", "render", "write", "HEADERS"]


class HeaderError(DocaPyError):
    """A prototype of [`prototypes`][doca_py.libdoca.prototypes] disagrees with its declaration table (a
    bug of doca_py: the message names the function and the parameter)."""


# -- parsing a C declaration ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    """One parameter: its C type (``const struct doca_buf *``) and name (``src``)."""

    ctype: str
    name: str


@dataclass(frozen=True)
class Prototype:
    """A parsed C function declaration (or callback typedef: ``name`` is the typedef's)."""

    marker: str  # DOCA_STABLE, DOCA_EXPERIMENTAL, DOCA_DEPRECATED or ""
    ret: str
    name: str
    params: tuple[Param, ...]
    variadic: bool
    text: str

    def declaration(self) -> str:
        """The declaration as written into a header (marker on its own line, as DOCA does)."""
        body = self.text.split(" ", 1)[1] if self.marker else self.text
        if self.variadic and self.params and self.params[-1].name == "format":  # doca_log: checked like printf
            n = len(self.params)
            body += f"\n\t__attribute__((format(printf, {n}, {n + 1})))"
        return f"{self.marker}\n{body};" if self.marker else f"{body};"


_MARKERS = ("DOCA_STABLE", "DOCA_EXPERIMENTAL", "DOCA_DEPRECATED")
_FUNC = re.compile(r"^(?P<ret>.*?)\b(?P<name>[A-Za-z_]\w*)\((?P<params>.*)\)$")
_TYPEDEF = re.compile(r"^typedef (?P<ret>.*?)\s*\(\*?\s*(?P<name>\w+)\)\((?P<params>.*)\)$")
_PARAM = re.compile(r"^(?P<type>.*?)(?P<name>[A-Za-z_]\w*)\s*(?P<array>\[[^\]]*\])?$")


def _split_params(text: str) -> tuple[tuple[Param, ...], bool]:
    parts = [p.strip() for p in text.split(",")] if text.strip() not in ("", "void") else []
    variadic = bool(parts) and parts[-1] == "..."
    out = []
    for part in parts[:-1] if variadic else parts:
        m = _PARAM.match(part)
        if m is None or not m["type"].strip() or m["type"].strip() in ("struct", "union", "enum", "const"):
            raise HeaderError(f"cannot read the parameter {part!r}")
        ctype = m["type"].strip() + (" *" if m["array"] else "")
        out.append(Param(ctype, m["name"]))
    return tuple(out), variadic


def parse(text: str) -> Prototype:
    """Parse one prototype (``[marker] ret name(params)``) or callback typedef of [`prototypes`][doca_py.libdoca.prototypes]."""
    text = " ".join(text.split()).rstrip(";")
    m = _TYPEDEF.match(text)
    marker = ""
    if m is None:
        head = text.split(" ", 1)
        if head[0] in _MARKERS:
            marker, text_body = head[0], head[1]
        else:
            text_body = text
        m = _FUNC.match(text_body)
    if m is None:
        raise HeaderError(f"cannot read the declaration {text!r}")
    params, variadic = _split_params(m["params"])
    return Prototype(marker, m["ret"].strip(), m["name"], params, variadic, text)


# -- the ABI of a C type, against a ctypes type -------------------------------------------------------------

_SCALARS: dict[str, Any] = {
    "doca_error_t": ctypes.c_int, "int": ctypes.c_int, "char": ctypes.c_char,
    "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
    "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
    "size_t": ctypes.c_size_t, "bool": ctypes.c_bool, "_Bool": ctypes.c_bool, "double": ctypes.c_double,
    "float": ctypes.c_float, "void": None,
    "union doca_data": ctypes.c_uint64,  # 8 bytes in one register on both LP64 ABIs (doca-c-api.md §4.1)
    "doca_be16_t": ctypes.c_uint16, "doca_be32_t": ctypes.c_uint32, "doca_be64_t": ctypes.c_uint64,
    "doca_event_handle_t": ctypes.c_int, "doca_notification_handle_t": ctypes.c_int,
}

#: Scalar typedefs the headers declare, with the header that declares them and their type.
SCALAR_TYPEDEFS: dict[str, tuple[str, str]] = {
    "doca_dpa_dev_mmap_t": ("doca_mmap.h", "uint32_t"),
    "doca_dpa_dev_sync_event_t": ("doca_sync_event.h", "uint64_t"),
    "doca_dpa_dev_sync_event_remote_net_t": ("doca_sync_event.h", "uint64_t"),
    "doca_gpu_dev_sync_event_t": ("doca_sync_event.h", "uint64_t"),
    "doca_gpu_dev_sync_event_remote_net_t": ("doca_sync_event.h", "uint64_t"),
    "doca_dpa_dev_rdma_t": ("doca_rdma.h", "uint64_t"),
    "doca_dpa_dev_comch_consumer_completion_t": ("doca_comch_consumer.h", "uint64_t"),
    "doca_dpa_dev_comch_consumer_t": ("doca_comch_consumer.h", "uint64_t"),
    "doca_dpa_dev_comch_producer_t": ("doca_comch_producer.h", "uint64_t"),
}
_ONE_BYTE = (ctypes.c_bool, ctypes.c_uint8)  # bool and uint8_t travel alike (one byte widened in a register)


def _normal(ctype: str) -> tuple[str, int]:
    """``const struct doca_buf * const *`` → ``("struct doca_buf", 2)``: the base type and pointer depth."""
    depth = ctype.count("*")
    base = " ".join(re.sub(r"\bconst\b", " ", ctype.replace("*", " ")).split())
    return base, depth


def _is_callback(base: str) -> bool:
    return base.endswith(("_cb_t", "_callback_t")) or base == "log_flush_callback"


def _is_cfunc(t: Any) -> bool:
    return isinstance(t, type) and hasattr(t, "_flags_") and hasattr(t, "_argtypes_")  # a CFUNCTYPE class


def abi_matches(ctype: str, t: Any) -> bool:
    """Whether the C type *ctype* is passed like the ctypes type *t* (``None``: ``void``).

    Scalars must match in kind and size; a ``c_void_p`` takes any pointer, ``c_char_p`` a ``char *``,
    ``POINTER(x)`` a pointer to what matches *x*, a ``CFUNCTYPE`` a callback typedef.
    """
    base, depth = _normal(ctype)
    if depth == 0:
        if base in SCALAR_TYPEDEFS:
            base = SCALAR_TYPEDEFS[base][1]
        if base in _SCALARS:
            want = _SCALARS[base]
            return want is t or (want in _ONE_BYTE and t in _ONE_BYTE)
        if base.startswith("enum "):
            return t is ctypes.c_int
        if _is_callback(base):
            return t is ctypes.c_void_p or _is_cfunc(t)
        return False
    if t is ctypes.c_void_p:
        return True
    if t is ctypes.c_char_p:
        return depth == 1 and base == "char"
    if _is_cfunc(t):  # a function type taken by pointer (doca_mmap_memrange_free_cb_t *)
        return depth == 1 and _is_callback(base)
    inner = getattr(t, "_type_", None)
    if isinstance(inner, type):  # POINTER(x)
        if issubclass(inner, ctypes.Structure):
            return depth == 1 and base.startswith("struct ")
        return abi_matches(base + " *" * (depth - 1), inner)
    return False


def _callback_matches(typedef: Prototype, t: Any) -> bool:
    restype = getattr(t, "_restype_", None)
    argtypes = getattr(t, "_argtypes_", ())
    return (len(typedef.params) == len(argtypes) and abi_matches(typedef.ret, restype)
            and all(abi_matches(p.ctype, a) for p, a in zip(typedef.params, argtypes)))


def check(proto: Prototype, restype: Any, argtypes: Iterable[Any], typedefs: dict[str, Prototype] | None = None,
          variadic: bool = False) -> list[str]:
    """What disagrees between the prototype *proto* and the table's ABI (``[]``: nothing).

    A parameter of a callback typedef given a ``CFUNCTYPE`` is checked parameter by parameter against
    the typedef (from *typedefs*).
    """
    args = tuple(argtypes)
    where = proto.name
    if proto.variadic != variadic:
        return [f"{where}: variadic in {'C' if proto.variadic else 'the table'} only"]
    if len(proto.params) != len(args):
        return [f"{where}: {len(proto.params)} parameters in C, {len(args)} in the table"]
    problems = []
    if not abi_matches(proto.ret, restype):
        problems.append(f"{where}: returns {proto.ret!r} in C, {getattr(restype, '__name__', restype)} in the table")
    for i, (param, t) in enumerate(zip(proto.params, args)):
        if not abi_matches(param.ctype, t):
            problems.append(f"{where}: parameter {i} ({param.ctype} {param.name}) is "
                            f"{getattr(t, '__name__', t)} in the table")
            continue
        base, depth = _normal(param.ctype)
        if _is_cfunc(t) and typedefs is not None:
            td = typedefs.get(base)
            if td is None:
                problems.append(f"{where}: parameter {i}: no typedef {base}")
            elif not _callback_matches(td, t):
                problems.append(f"{where}: parameter {i}: the typedef {base} does not match the table's callback")
    return problems


# -- what a version declares --------------------------------------------------------------------------------

def _v26(version: tuple[int, int]) -> bool:
    return version < (3, 0)


def _functions(version: tuple[int, int]) -> dict[str, tuple[str, Prototype]]:
    """Every prototype the data spells for *version*: name → (header, prototype)."""
    out: dict[str, tuple[str, Prototype]] = {}
    for header, rows in P.PROTOTYPES.items():
        for row in rows:
            proto = parse(row)
            out[proto.name] = (header, proto)
    if _v26(version):
        for header, rows in P.PROTOTYPES_26.items():
            for row in rows:
                proto = parse(row)
                out[proto.name] = (header, proto)
    return out


def _typedefs(version: tuple[int, int]) -> dict[str, tuple[str, Prototype]]:
    table = dict(P.TYPEDEFS)
    if _v26(version):
        table.update(P.TYPEDEFS_26)
    out: dict[str, tuple[str, Prototype]] = {}
    for header, rows in table.items():
        for row in rows:
            proto = parse(row)
            out[proto.name] = (header, proto)
    return out


def prototypes(version: tuple[int, int]) -> dict[str, list[Prototype]]:
    """The checked prototypes *version* exports, by header, in table order.

    Raises [`HeaderError`][doca_py.libdoca.headers.HeaderError] for a function the tables export that has no
    C spelling, or whose spelling disagrees with its table entry.
    """
    from . import cgen

    spelled = _functions(version)
    typedefs = {name: td for name, (_, td) in _typedefs(version).items()}
    out: dict[str, list[Prototype]] = {}
    problems: list[str] = []
    for entries in cgen.exported(version).values():
        for entry in entries:
            hit = spelled.get(entry.name)
            if hit is None:
                problems.append(f"{entry.name}: exported by DOCA {version[0]}.{version[1]} but not spelled in "
                                "doca_py.libdoca.prototypes")
                continue
            header, proto = hit
            problems += check(proto, entry.restype, entry.argtypes, typedefs, entry.decl.variadic)
            out.setdefault(header, []).append(proto)
    if problems:
        raise HeaderError("the C prototypes disagree with the declaration tables:\n  " + "\n  ".join(problems))
    return out


# -- enums: doca_py's Python enums, with DOCA's C names --------------------------------------------------------

@dataclass(frozen=True)
class _Enum:
    header: str
    c_name: str
    members: Callable[[tuple[int, int]], list[tuple[str, int]]]
    since: tuple[int, int] = (0, 0)
    until: tuple[int, int] = (99, 0)
    flags: bool = False


def _prefixed(cls: type[enum.IntEnum] | type[enum.IntFlag], prefix: str) -> Callable[[tuple[int, int]], list[tuple[str, int]]]:
    def members(version: tuple[int, int]) -> list[tuple[str, int]]:
        return [(getattr(m, "c_name", None) or f"{prefix}{m.name}", int(m)) for m in cls]
    return members


# Error codes DOCA added after 2.6 (doca-c-api.md §3.1): a 2.6 header does not have them.
_ERRORS_SINCE_3 = frozenset({ErrorCode.AUTHENTICATION, ErrorCode.BAD_CONFIG, ErrorCode.SKIPPED})


def _errors(version: tuple[int, int]) -> list[tuple[str, int]]:
    return [(c.c_name, int(c)) for c in ErrorCode if not (_v26(version) and c in _ERRORS_SINCE_3)]


def _enums() -> list[_Enum]:
    from .. import types as T
    from ..comch_connection import ComchCounter
    from ..ec import EcMatrixType
    from ..log import LogLevel
    from ..native.capi.rdma import RdmaSrqType
    from ..rdma_connection import RdmaAddrType
    from ..rdma_options import RdmaTransportType
    from ..rdma_tasks import RdmaOpcode

    return [
        _Enum("doca_types.h", "doca_access_flag", _prefixed(T.AccessFlag, "DOCA_ACCESS_FLAG_"), flags=True),
        _Enum("doca_types.h", "doca_pci_func_type", _prefixed(T.PciFuncType, "DOCA_PCI_FUNC_TYPE_")),
        _Enum("doca_types.h", "doca_mtu_size", _prefixed(T.MtuSize, "")),
        _Enum("doca_dev.h", "doca_devinfo_rep_filter", _prefixed(T.DevinfoRepFilter, "DOCA_DEVINFO_REP_FILTER_"),
              flags=True),
        _Enum("doca_pe.h", "doca_task_submit_flag", _prefixed(T.TaskSubmitFlag, "DOCA_TASK_SUBMIT_FLAG_"),
              since=(3, 0), flags=True),
        _Enum("doca_pe.h", "doca_pe_event_mode", _prefixed(T.PeEventMode, "DOCA_PE_EVENT_MODE_"), since=(3, 0)),
        _Enum("doca_ctx.h", "doca_ctx_states", _prefixed(T.CtxState, "DOCA_CTX_STATE_")),
        _Enum("doca_log.h", "doca_log_level", _prefixed(LogLevel, "DOCA_LOG_LEVEL_")),
        _Enum("doca_erasure_coding.h", "doca_ec_matrix_type", _prefixed(EcMatrixType, "DOCA_EC_MATRIX_TYPE_")),
        _Enum("doca_rdma.h", "doca_rdma_transport_type", _prefixed(RdmaTransportType, "DOCA_RDMA_TRANSPORT_TYPE_")),
        _Enum("doca_rdma.h", "doca_rdma_addr_type", _prefixed(RdmaAddrType, "DOCA_RDMA_ADDR_TYPE_"), since=(3, 0)),
        _Enum("doca_rdma.h", "doca_rdma_opcode", _prefixed(RdmaOpcode, "DOCA_RDMA_OPCODE_")),
        _Enum("doca_rdma.h", "doca_rdma_srq_type", _prefixed(RdmaSrqType, "DOCA_RDMA_SRQ_TYPE_"), until=(2, 6)),
        _Enum("doca_comch.h", "doca_comch_counter", _prefixed(ComchCounter, "DOCA_COMCH_COUNTER_"), since=(3, 0)),
        _Enum("doca_cc.h", "doca_cc_counter", _prefixed(ComchCounter, "DOCA_CC_COUNTER_"), until=(2, 6)),
    ]


def _enum_text(spec: _Enum, version: tuple[int, int]) -> str:
    rows = []
    for name, value in spec.members(version):
        shown = f"(1 << {value.bit_length() - 1})" if spec.flags and value and value & (value - 1) == 0 else str(value)
        rows.append(f"\t{name} = {shown},")
    return f"enum {spec.c_name} {{\n" + "\n".join(rows) + "\n};"


# -- the hand-written parts of each header -----------------------------------------------------------------------

def _version_text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}.0000"  # what libdoca's doca_version_runtime reports


_COMPAT = """\
#if defined(__GNUC__) || defined(__clang__)
#define DOCA_STABLE __attribute__((visibility("default")))
#ifndef DOCA_ALLOW_EXPERIMENTAL_API
#define DOCA_EXPERIMENTAL __attribute__((deprecated("Symbol is defined as experimental"))) DOCA_STABLE
#else
#define DOCA_EXPERIMENTAL DOCA_STABLE
#endif
#ifndef DOCA_ALLOW_DEPRECATED_API
#define DOCA_DEPRECATED __attribute__((deprecated("Symbol is defined as deprecated"))) DOCA_STABLE
#else
#define DOCA_DEPRECATED DOCA_STABLE
#endif
#else
#define DOCA_STABLE
#define DOCA_EXPERIMENTAL
#define DOCA_DEPRECATED
#endif"""

_COMMON_DEFINES = """\
#if defined(__GNUC__) || defined(__clang__)
#define doca_likely(x) __builtin_expect(!!(x), 1)
#define doca_unlikely(x) __builtin_expect(!!(x), 0)
#else
#define doca_likely(x) (x)
#define doca_unlikely(x) (x)
#endif"""

_ERROR_MACROS = """\
/* Whether r is an error (any code but DOCA_SUCCESS), as the unlikely case. */
#define DOCA_IS_ERROR(r) doca_unlikely((r) != DOCA_SUCCESS)

/* Keep the first error: r takes t only while r is still DOCA_SUCCESS. */
#define DOCA_ERROR_PROPAGATE(r, t) \\
	do { \\
		if ((r) == DOCA_SUCCESS) \\
			(r) = (t); \\
	} while (0)"""

_TYPES = """\
typedef int doca_event_handle_t; /* an fd on Linux */
#define doca_event_invalid_handle -1
typedef doca_event_handle_t doca_notification_handle_t;

#define DOCA_GID_BYTE_LENGTH 16

/* Passed by value: 8 bytes, in one register on x86-64 and AArch64. */
union doca_data {
	void *ptr;
	uint64_t u64;
};

struct doca_gather_list {
	void *addr;
	uint64_t len;
	struct doca_gather_list *next;
};

/* Big-endian (network order) integers. */
typedef uint16_t doca_be16_t;
typedef uint32_t doca_be32_t;
typedef uint64_t doca_be64_t;"""

_INVENTORY_INLINE = """\
/* An empty buffer over [addr, addr + len): a destination. */
static inline doca_error_t doca_buf_inventory_buf_get_by_addr(struct doca_buf_inventory *inventory,
							      struct doca_mmap *mmap, void *addr, size_t len,
							      struct doca_buf **buf)
{
	return doca_buf_inventory_buf_get_by_args(inventory, mmap, addr, len, addr, 0, buf);
}

/* A buffer whose data is all of [data, data + data_len): a source. */
static inline doca_error_t doca_buf_inventory_buf_get_by_data(struct doca_buf_inventory *inventory,
							      struct doca_mmap *mmap, void *data, size_t data_len,
							      struct doca_buf **buf)
{
	return doca_buf_inventory_buf_get_by_args(inventory, mmap, data, data_len, data, data_len, buf);
}"""


def _log_macros(version: tuple[int, int]) -> str:
    # 2.6's DOCA_LOG takes the level's suffix (DOCA_LOG(INFO, ...)), 3.x the level itself.
    level = "DOCA_LOG_LEVEL_##level" if _v26(version) else "level"
    lvl: Callable[[str], str] = (lambda s: s.split("DOCA_LOG_LEVEL_")[1]) if _v26(version) else (lambda s: s)
    lines = [
        f"#define DOCA_LOG(level, format, ...) \\\n\tdoca_log({level}, log_source, __FILE__, __LINE__, __func__, "
        "format, ##__VA_ARGS__)",
    ]
    for short, full in (("CRIT", "DOCA_LOG_LEVEL_CRIT"), ("ERR", "DOCA_LOG_LEVEL_ERROR"),
                        ("WARN", "DOCA_LOG_LEVEL_WARNING"), ("INFO", "DOCA_LOG_LEVEL_INFO"),
                        ("DBG", "DOCA_LOG_LEVEL_DEBUG")):
        lines.append(f"#define DOCA_LOG_{short}(format, ...) DOCA_LOG({lvl(full)}, format, ##__VA_ARGS__)")
    lines += [
        "#ifdef DOCA_LOGGING_ALLOW_TRACE",
        f"#define DOCA_LOG_TRC(format, ...) DOCA_LOG({lvl('DOCA_LOG_LEVEL_TRACE')}, format, ##__VA_ARGS__)",
        "#else",
        "#define DOCA_LOG_TRC(format, ...) \\\n\tdo {                      \\\n\t} while (0)",
        "#endif",
        "",
        "/* One log source per file (source may be any text: DMA_LOCAL_COPY::MAIN), registered before main()",
        " * runs, by a constructor. */",
        "#define DOCA_LOG_REGISTER(source) \\",
        "\tstatic int log_source; \\",
        "\tstatic void __attribute__((constructor(101), used)) doca_log_register_file_source(void) \\",
        "\t{ \\",
        "\t\tdoca_log_register_source(#source, &log_source); \\",
        "\t}",
    ]
    return "\n".join(lines)


def _version_macros(version: tuple[int, int]) -> str:
    major, minor = version
    return f"""\
#define DOCA_VERSION_MAJOR {major}
#define DOCA_VERSION_MINOR {minor}
#define DOCA_VERSION_PATCH 0
#define DOCA_VERSION_STRING "{_version_text(version)}"

#define DOCA_VERSION_CALC_EXACT(major, minor, patch) ((size_t)((major) << 24 | (minor) << 16 | (patch)))
#define DOCA_VERSION_EXACT DOCA_VERSION_CALC_EXACT(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)
#define DOCA_VERSION_CALC(major, minor, patch) ((size_t)((major) << 24 | (minor) << 16 | ((patch) * 1000)))
#define DOCA_VERSION_OFFICIAL DOCA_VERSION_CALC(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)
#define DOCA_VERSION_EQ_CURRENT(major, minor, patch) (DOCA_VERSION_CALC(major, minor, patch) == DOCA_VERSION_OFFICIAL)
#define DOCA_VERSION_LTE_CURRENT(major, minor, patch) (DOCA_VERSION_CALC(major, minor, patch) <= DOCA_VERSION_OFFICIAL)

/* The version these headers are for (doca_version_runtime: the loaded library's). */
static inline const char *doca_version(void)
{{
	return DOCA_VERSION_STRING;
}}"""


def _dev_macros() -> str:
    from .. import types as T

    sizes = [("VUID", T.DEVINFO_VUID_SIZE), ("IPV4_ADDR", T.DEVINFO_IPV4_ADDR_SIZE),
             ("IPV6_ADDR", T.DEVINFO_IPV6_ADDR_SIZE), ("MAC_ADDR", T.DEVINFO_MAC_ADDR_SIZE),
             ("IFACE_NAME", T.DEVINFO_IFACE_NAME_SIZE), ("IBDEV_NAME", T.DEVINFO_IBDEV_NAME_SIZE),
             ("PCI_ADDR", T.DEVINFO_PCI_ADDR_SIZE), ("PCI_BDF", T.DEVINFO_PCI_BDF_SIZE)]
    rep = [("VUID", T.DEVINFO_VUID_SIZE), ("PCI_ADDR", T.DEVINFO_PCI_ADDR_SIZE), ("PCI_BDF", T.DEVINFO_PCI_BDF_SIZE)]
    return "\n".join([*(f"#define DOCA_DEVINFO_{n}_SIZE {v}" for n, v in sizes),
                      *(f"#define DOCA_DEVINFO_REP_{n}_SIZE {v}" for n, v in rep)])


_GID = """\
struct doca_rdma_gid {
	uint8_t raw[DOCA_GID_BYTE_LENGTH];
};"""

#: The headers written, in order, with the libraries whose functions they declare (the base headers first).
HEADERS: tuple[str, ...] = (
    "doca_compat.h", "doca_common_defines.h", "doca_error.h", "doca_types.h", "doca_version.h",
    "doca_dev.h", "doca_mmap.h", "doca_buf.h", "doca_buf_inventory.h", "doca_buf_pool.h", "doca_pe.h",
    "doca_ctx.h", "doca_log.h", "doca_sync_event.h", "doca_mmap_advise.h", "doca_rdma_bridge.h", "doca_graph.h",
    "doca_dma.h", "doca_compress.h", "doca_erasure_coding.h", "doca_rdma.h",
    "doca_comch.h", "doca_comch_consumer.h", "doca_comch_producer.h",
    "doca_cc.h", "doca_cc_consumer.h", "doca_cc_producer.h",
)
_BASE = HEADERS[:5]


def _before(header: str, version: tuple[int, int]) -> list[str]:
    """Declarations of *header* that come before its typedefs and prototypes."""
    if header == "doca_compat.h":
        return [_COMPAT]
    if header == "doca_common_defines.h":
        return [_COMMON_DEFINES]
    if header == "doca_error.h":
        return [_enum_text(_Enum("doca_error.h", "doca_error", _errors), version).replace(
            "enum doca_error {", "typedef enum doca_error {").replace("\n};", "\n} doca_error_t;"), _ERROR_MACROS]
    if header == "doca_types.h":
        return [_TYPES]
    if header == "doca_version.h":
        return [_version_macros(version)]
    if header == "doca_dev.h":
        return [_dev_macros()]
    if header == "doca_rdma.h":
        return [_GID]
    return []


def _after(header: str, version: tuple[int, int]) -> list[str]:
    """Declarations of *header* that use its prototypes (inline helpers, macros)."""
    if header == "doca_buf_inventory.h":
        return [_INVENTORY_INLINE]
    if header == "doca_log.h":
        return [_log_macros(version)]
    return []


# -- rendering ---------------------------------------------------------------------------------------------

_STRUCT = re.compile(r"\b(?:struct) ((?:doca|ibv|rdma)_\w+)")
_WORD = re.compile(r"\b\w+\b")


def render(version: tuple[int, int]) -> dict[str, str]:
    """The text of every header of DOCA *version*, by file name (computed once per version)."""
    return dict(_render(version))


@functools.cache
def _render(version: tuple[int, int]) -> dict[str, str]:
    protos = prototypes(version)
    typedefs = _typedefs(version)
    enums = [e for e in _enums() if e.since <= version <= e.until]
    defined_in: dict[str, str] = {name: header for name, (header, _) in typedefs.items()}
    defined_in.update({name: header for name, (header, _) in SCALAR_TYPEDEFS.items()})
    defined_in.update({f"enum {e.c_name}": e.header for e in enums})
    typedefs_of: dict[str, list[Prototype]] = {}
    for name, (header, td) in typedefs.items():
        typedefs_of.setdefault(header, []).append(td)
    # A scalar typedef is written when a prototype (or a typedef) of this version names it.
    used = set(_WORD.findall(" ".join(p.text for ps in protos.values() for p in ps)))
    for _, td in typedefs.values():
        used |= set(_WORD.findall(td.text)) - {td.name}
    out = {}
    for header in HEADERS:
        funcs = protos.get(header, [])
        if header not in _BASE and not funcs:
            continue
        parts: list[str] = []
        parts += _before(header, version)
        parts += [_enum_text(e, version) for e in enums if e.header == header]
        scalars = [f"typedef {t} {n};" for n, (h, t) in SCALAR_TYPEDEFS.items() if h == header and n in used]
        if scalars:
            parts.append("\n".join(scalars))
        parts += [td.text + ";" for td in typedefs_of.get(header, [])]  # all: programs name them too
        parts += [p.declaration() for p in funcs]
        parts += _after(header, version)
        body = "\n\n".join(parts)
        out[header] = _wrap(header, body, defined_in, version)
    return out


def _wrap(header: str, body: str, defined_in: dict[str, str], version: tuple[int, int]) -> str:
    guard = header.upper().replace(".", "_") + "_"
    includes = ["<stddef.h>", "<stdint.h>"]
    if header == "doca_log.h":
        includes.append("<stdio.h>")
    own = ["doca_compat.h", "doca_common_defines.h", "doca_error.h", "doca_types.h"]
    if header == "doca_error.h":
        own = ["doca_compat.h", "doca_common_defines.h"]
    elif header in ("doca_compat.h", "doca_common_defines.h", "doca_types.h"):
        own = []
    elif header == "doca_version.h":
        own = ["doca_compat.h"]
    words = set(_WORD.findall(body)) | {f"enum {m}" for m in re.findall(r"\benum (\w+)", body)}
    for word in sorted(words):
        where = defined_in.get(word)
        if where and where != header and where not in own:
            own.append(where)
    structs = sorted(set(_STRUCT.findall(body)) - set(re.findall(r"\bstruct (\w+) \{", body)))
    lines = [
        f"/* {header}: DOCA {version[0]}.{version[1]} as served by doca_py's emulator (doca_py.libdoca).",
        " * Generated by doca_py.libdoca.headers from doca_py's declaration tables; do not edit. */",
        "",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        *(f"#include {i}" for i in includes if header not in ("doca_compat.h", "doca_common_defines.h")),
        *(f"#include <{h}>" for h in own),
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
    ]
    if structs:
        lines += [f"struct {s};" for s in structs] + [""]
    lines += [body, "", "#ifdef __cplusplus", '} /* extern "C" */', "#endif", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


def write(include_dir: Path, version: tuple[int, int]) -> None:
    """Write the headers of DOCA *version* into *include_dir* (``DIR/include``), replacing what is there."""
    texts = render(version)
    include_dir.mkdir(parents=True, exist_ok=True)
    for old in include_dir.glob("doca_*.h"):
        if old.name not in texts:
            old.unlink()
    for name, text in texts.items():
        (include_dir / name).write_text(text)
