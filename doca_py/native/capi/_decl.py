"""Declaration machinery for the raw layer: C signatures as data, bound per DOCA version.

A `Decl` describes one exported C function: its 3.x signature, the DOCA
versions that export it, and `Variant` signatures for older runtimes where
the same symbol has a different ABI (``doca-c-api.md`` §6.2). `bind` turns a
table of them into a `BoundLib` for one opened library and one runtime version.

Bound functions are plain ``ctypes`` function pointers with ``argtypes``/``restype``
set and no ``errcheck``: functions returning ``doca_error_t`` return the raw ``int``,
which callers pass to [`doca_py.errors.check`][doca_py.errors.check]. That keeps the per-call cost at
one ctypes call on the hot path.

Type conventions (``doca-c-api.md`` §2 "ctypes quick mapping"):

* ``union doca_data`` by value (argument, return, callback parameter) → ``c_uint64``;
  both LP64 ABIs pass the 8-byte union like a ``uint64_t``.
* opaque ``struct doca_x *`` → ``c_void_p``; out-handles ``T **`` → ``POINTER(c_void_p)``.
* ``const char *`` inputs → ``c_char_p``; caller-filled ``char *`` buffers → ``POINTER(c_char)``.
* ``doca_error_t`` and enums → ``c_int``.
"""

from __future__ import annotations

import ctypes
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import DocaNotSupported

__all__ = [
    "Decl",
    "Variant",
    "BoundLib",
    "MissingFunction",
    "KEEPS_GIL",
    "MAY_BLOCK",
    "bind",
    "keeps_gil",
    "format_version",
    "pre3",
    "register",
    "registered",
    "Version",
    "TaskCompletionCb",
    "CtxStateChangedCb",
    "MmapMemrangeFreeCb",
    "LogFlushCb",
    "GraphCompletionCb",
    "GraphUserNodeCb",
]

Version = tuple[int, int, int]
"""A DOCA version as ``(major, minor, patch)``; ``(3, 0, 58)`` for ``"3.0.0058"``."""

# ctypes types are classes whose common base is private; ``Any`` keeps mypy quiet.
CType = Any

# Callback types, created once: CFUNCTYPE builds a new class per call, and ctypes
# caches nothing, so a per-call CFUNCTYPE(...) would allocate on every registration.
TaskCompletionCb = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
"""``doca_task_completion_cb_t(task, task_user_data, ctx_user_data)`` — every task callback."""

CtxStateChangedCb = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_int)
"""``doca_ctx_state_changed_callback_t(ctx_user_data, ctx, prev_state, next_state)``."""

MmapMemrangeFreeCb = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
"""``doca_mmap_memrange_free_cb_t(addr, len, cookie)``."""

LogFlushCb = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
"""``log_flush_callback(buf)`` of the buffer log backends."""

GraphCompletionCb = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
"""``doca_graph_completion_cb_t(instance, instance_user_data, graph_user_data)``: a graph instance
completed (its graph's completion or error callback)."""

GraphUserNodeCb = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
"""``doca_graph_user_node_cb_t(cookie)``: a user node's work; returns a ``doca_error_t``."""


_PLATFORMS = {"win32": "Windows", "linux": "Linux"}


def format_version(version: Version) -> str:
    """``(3, 0, 58)`` → ``"3.0.0058"``, DOCA's own spelling."""
    return f"{version[0]}.{version[1]}.{version[2]:04d}"


@dataclass(frozen=True, slots=True)
class Variant:
    """An older ABI of a symbol: used when the runtime version is below ``before``.

    If ``marker`` is set, the variant is chosen by the *absence* of that companion
    symbol instead, which pins the change more precisely than a version number
    (``doca-c-api.md`` §6.1).
    """

    before: tuple[int, int]
    """The variant applies to runtimes below this ``(major, minor)``."""
    restype: CType
    """The ``ctypes`` return type on those runtimes."""
    argtypes: tuple[CType, ...]
    """The ``ctypes`` argument types on those runtimes."""
    marker: str | None = None
    """A companion symbol whose absence selects this variant (instead of the version)."""


def pre3(restype: CType, argtypes: Iterable[CType], *, marker: str | None = None) -> Variant:
    """The 2.x signature of a symbol whose ABI changed by 3.0 (§6.2)."""
    return Variant((3, 0), restype, tuple(argtypes), marker)


@dataclass(frozen=True, slots=True)
class Decl:
    """One exported C function.

    ``since``/``until`` give the first/last DOCA ``(major, minor)`` known to export it
    (``None``: no limit known) and only shape the `MissingFunction` message;
    presence is always decided by looking the symbol up. ``platform`` restricts a
    symbol to one ``sys.platform`` prefix (``"win32"`` for Windows-only functions).
    ``variadic`` marks a trailing ``...``: extra arguments must be ctypes objects.
    """

    name: str
    """The C function name."""
    restype: CType
    """The ``ctypes`` return type."""
    argtypes: tuple[CType, ...]
    """The ``ctypes`` argument types."""
    since: tuple[int, int] | None = None
    """The first DOCA ``(major, minor)`` known to export it (``None``: no limit known)."""
    until: tuple[int, int] | None = None
    """The last DOCA ``(major, minor)`` known to export it (``None``: no limit known)."""
    variants: tuple[Variant, ...] = ()
    """Older signatures under the same name ([`Variant`][doca_py.native.capi.Variant])."""
    platform: str | None = None
    """A ``sys.platform`` prefix the symbol is restricted to (``None``: any)."""
    variadic: bool = False
    """Whether the C function ends in ``...`` (extra arguments must be ctypes objects)."""
    note: str = ""
    """A free-form remark on the declaration."""

    def signature(self, version: Version, has_symbol: Callable[[str], bool] | None = None) -> tuple[CType, tuple[CType, ...]]:
        """``(restype, argtypes)`` for a runtime of *version*."""
        for var in self.variants:
            if var.marker is not None and has_symbol is not None:
                if not has_symbol(var.marker):
                    return var.restype, var.argtypes
            elif version[:2] < var.before:
                return var.restype, var.argtypes
        return self.restype, self.argtypes

    def availability(self) -> str:
        """Human text on which DOCA versions export the symbol."""
        if self.platform is not None:
            return f"it exists only on {_PLATFORMS.get(self.platform, self.platform)} builds of DOCA"
        parts = []
        if self.since is not None:
            parts.append(f"from DOCA {self.since[0]}.{self.since[1]}")
        if self.until is not None:
            parts.append(f"up to DOCA {self.until[0]}.{self.until[1]}")
        text = (
            "it is exported " + " ".join(parts)
            if parts
            else "DOCA 2.6 to 3.x all export it, so this library is incomplete or not DOCA's"
        )
        return f"{text} ({self.note})" if self.note else text


# -- GIL policy ------------------------------------------------------------------------------------
# A ``ctypes.CDLL`` function releases the GIL for the call and takes it back after (≈ 2 atomic
# hand-overs, and with two worker threads a GIL switch at every call); a ``ctypes.PyDLL`` one keeps it.
# Keeping it is cheaper, and safe, only for a call that never blocks and never waits for another
# thread: DOCA's data path (``doca_pe_progress`` polls, ``doca_task_submit`` posts, task and buffer
# getters/setters touch memory, task/buffer allocation takes from a preallocated pool). Everything
# else releases it: waits (``doca_pe_wait``-style event handles, ``doca_sync_event_wait_*``), context
# and memory start/stop (may wait for the device or flush), connect/listen/accept, device open and
# capability queries (syscalls into the driver), notification arming (syscalls).

KEEPS_GIL = re.compile(
    r"""^(?!.*_set_conf$)(?!.*_cap_)doca_(?:                # never a ctx's task configuration or a capability
        pe_progress$
      | task_                                               # submit, try_submit, free, status, user data, ctx
      | buf_(?:get|set|reset|inc|dec|chain|unchain|is)_    # doca_buf getters/setters, refcounts, lists
      | buf_inventory_buf_                                  # take a doca_buf from an inventory (no syscall)
      | buf_pool_buf_alloc
      | error_get_(?:name|descr)$
      | (?:ctx|mmap|buf_inventory|buf_pool|comch_connection|cc_connection|rdma_connection)_[gs]et_user_data$
      | graph_instance_(?:submit|set_(?:ctx|user|sub_graph)_node_data|[gs]et_user_data)$  # a graph's run
      | [a-z0-9_]+?_task_[a-z0-9_]+?_                      # a task type's alloc, cast, getters and setters
            (?:alloc_init|allocate_init|as_task|as_doca_task|(?:set|get)_[a-z0-9_]+)$
    )""",
    re.X,
)
"""Names of the DOCA functions bound through ``ctypes.PyDLL`` (the GIL kept during the call): the
data path's never-blocking calls. Every other declared function is bound through ``ctypes.CDLL`` and
releases the GIL. The one place the policy is decided; see [`keeps_gil`][doca_py.native.capi.keeps_gil]."""

MAY_BLOCK: frozenset[str] = frozenset({
    # Configuration-time calls of an RDMA ctx that the task pattern above would otherwise match.
    "doca_rdma_task_receive_set_dst_buf_list_len",
    "doca_rdma_task_receive_get_dst_buf_list_len",
    "doca_rdma_srq_task_receive_set_dst_buf_list_len",
    "doca_rdma_srq_task_receive_get_dst_buf_list_len",
    # A capability query on a devinfo (the header names it without ``_cap_``).
    "doca_mmap_advise_task_cache_invalidate_get_max_buf_size",
})
"""Functions the pattern would keep the GIL for but that are not on the data path: released."""


def keeps_gil(name: str) -> bool:
    """Whether the DOCA function *name* is called with the GIL kept (``PyDLL``) rather than released."""
    return name not in MAY_BLOCK and KEEPS_GIL.match(name) is not None


class MissingFunction:
    """Stands in for a function the loaded library does not export.

    Calling it raises [`DocaNotSupported`][doca_py.errors.DocaNotSupported] naming the function,
    the loaded version and the versions that have it. It is falsy, so
    ``if lib.doca_x:`` tests for presence.
    """

    __slots__ = ("__name__", "decl", "message")

    def __init__(self, decl: Decl, libname: str, version: Version, message: str | None = None) -> None:
        self.__name__ = decl.name
        self.decl = decl
        """The declaration of the missing function."""
        self.message = message or (
            f"{decl.name} is not exported by the loaded libdoca_{libname} "
            f"(DOCA {format_version(version)}); {decl.availability()}"
        )
        """The text of the [`DocaNotSupported`][doca_py.errors.DocaNotSupported] a call raises."""

    def __call__(self, *args: object) -> Any:
        raise DocaNotSupported(self.message)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<missing DOCA function {self.__name__}>"


class BoundLib:
    """The functions of one DOCA library, as attributes named like the C functions.

    Present symbols are ``ctypes`` function pointers (truthy); absent ones are
    `MissingFunction` stubs (falsy). Header-inline C helpers may be added as
    Python functions under their C names (listed in ``lib.python_impl``).
    ``lib.cdll``, ``lib.libname``, ``lib.version``, ``lib.decls`` and ``lib.missing``
    (names of absent symbols) describe the binding.
    """

    cdll: ctypes.CDLL
    libname: str
    version: Version
    decls: Mapping[str, Decl]
    missing: frozenset[str]
    python_impl: frozenset[str]

    def __init__(self, cdll: ctypes.CDLL, libname: str, version: Version, decls: Mapping[str, Decl]) -> None:
        self.cdll = cdll
        """The ``ctypes.CDLL`` the functions are bound on."""
        self.libname = libname
        """The short library name (``"common"``, ``"rdma"`` …)."""
        self.version = version
        """The runtime version the signatures were chosen for."""
        self.decls = decls
        """The declarations, by function name."""
        self.missing = frozenset()
        """Names of declared functions the library does not export."""
        self.python_impl = frozenset()
        """Names of header-inline C helpers provided as Python functions."""

    def has(self, name: str) -> bool:
        """Whether *name* can be called: an exported symbol or a Python inline helper.

        ``name not in lib.missing`` asks only about the exported symbol.
        """
        return bool(self.__dict__.get(name))

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that were never bound: not in the table at all.
        raise AttributeError(f"{name} is not declared for libdoca_{self.__dict__.get('libname', '?')}")

    def __repr__(self) -> str:
        ver = format_version(self.version)
        return f"<BoundLib libdoca_{self.libname} {ver}: {len(self.decls) - len(self.missing)}/{len(self.decls)} functions>"


def _has_symbol(cdll: ctypes.CDLL, name: str) -> bool:
    try:
        cdll[name]
    except AttributeError:
        return False
    return True


def bind(cdll: ctypes.CDLL, decls: Iterable[Decl], version: Version, *, libname: str) -> BoundLib:
    """Bind every declaration of *decls* on *cdll* for a runtime of *version*.

    Each present symbol gets a fresh function object (``cdll[name]``), so two
    bindings of one library never share ``argtypes``. A function of the data path
    ([`keeps_gil`][doca_py.native.capi.keeps_gil]) is looked up through a ``ctypes.PyDLL`` on the
    same handle, so it keeps the GIL; the others release it. Absent or foreign-platform
    symbols become `MissingFunction` stubs.
    """
    table = {d.name: d for d in decls}
    lib = BoundLib(cdll, libname, version, table)
    missing: set[str] = set()
    # The same dlopen handle, as a PyDLL: its functions keep the GIL during the call (keeps_gil).
    pydll = ctypes.PyDLL(cdll._name, handle=cdll._handle)
    for decl in table.values():
        fn: Any = None
        if decl.platform is None or sys.platform.startswith(decl.platform):
            try:
                fn = (pydll if keeps_gil(decl.name) else cdll)[decl.name]
            except AttributeError:
                fn = None
        if fn is None:
            setattr(lib, decl.name, MissingFunction(decl, libname, version))
            missing.add(decl.name)
            continue
        restype, argtypes = decl.signature(version, lambda s: _has_symbol(cdll, s))
        fn.restype = restype
        fn.argtypes = list(argtypes)
        setattr(lib, decl.name, fn)
    lib.missing = frozenset(missing)
    return lib


_TABLES: dict[str, tuple[Decl, ...]] = {}


def register(libname: str, decls: tuple[Decl, ...]) -> tuple[Decl, ...]:
    """Register the declaration table of ``libdoca_<libname>`` (used by the probe)."""
    _TABLES[libname] = decls
    return decls


def registered() -> dict[str, tuple[Decl, ...]]:
    """Tables registered so far, by short library name."""
    return dict(_TABLES)
