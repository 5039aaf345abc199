"""The emulator's side of libdoca: slot functions, C handles, out-parameters and C callbacks.

Rules every slot function follows (they are called from C, through ``ctypes`` callbacks):

* Arguments arrive as C passes them: pointers as ``int | None``, integers as ``int``.
* A ``doca_error_t`` function returns the code; a [`DocaError`][doca_py.errors.DocaError] raised inside
  becomes its code, a strict-mode finding of the emulator (``DocaUsageError``) ``DOCA_ERROR_BAD_STATE``
  with its message logged, any other exception ``DOCA_ERROR_UNKNOWN`` with its traceback logged. Nothing
  propagates into C. Pointer-returning functions return ``NULL`` (``None``) on failure, ``void`` ones
  log and return.
* Every object C sees is a stable handle: an address in a reserved range no one can touch
  (``PROT_NONE``), mapped to the emulator's object. A handle lives until the object is destroyed.
"""

from __future__ import annotations

import ctypes
import itertools
import mmap as _mmap
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ...errors import DocaError, DocaInvalidValue, DocaUsageError, ErrorCode
from ...log import logger

__all__ = ["IMPLS", "impl", "HANDLES", "Handles", "obj", "opt", "handle", "forget", "out_ptr", "out_u8",
           "out_u16", "out_u32", "out_u64", "out_int", "out_bytes", "read_str", "c_string", "log",
           "TaskCompletionFn", "CtxStateFn", "c_function"]

log = logger.getChild("libdoca")

_UNKNOWN = int(ErrorCode.UNKNOWN)
_INVALID = int(ErrorCode.INVALID_VALUE)
_BAD_STATE = int(ErrorCode.BAD_STATE)

#: C function name -> the Python that serves it (the serve modules register with :func:`impl`).
IMPLS: dict[str, Callable[..., Any]] = {}

F = TypeVar("F", bound=Callable[..., Any])


def impl(*names: str) -> Callable[[F], F]:
    """Serve the C functions *names* with the decorated function (one function may serve several
    spellings: ``doca_comch_*`` and 2.6's ``doca_cc_*``)."""

    def deco(fn: F) -> F:
        for name in names:
            if name in IMPLS:
                raise RuntimeError(f"{name} is served twice")
            IMPLS[name] = fn
        return fn

    return deco


class Handles:
    """Stable C pointers for the emulator's objects.

    The addresses come from a reserved, inaccessible range: unique, never valid memory (a C program
    that dereferences an opaque DOCA handle faults at once instead of reading something), and never
    reused while the process lives.
    """

    SLOT = 64  # bytes per handle: room for C code that compares or hashes handles, nothing to read

    def __init__(self, size: int = 1 << 30) -> None:
        self._base = _reserve(size)
        self._next = itertools.count()
        self._limit = size // self.SLOT
        self._lock = threading.Lock()
        self.by_addr: dict[int, object] = {}
        self._by_id: dict[int, int] = {}

    def addr(self, o: object) -> int:
        """The handle of *o*, made on first use."""
        a = self._by_id.get(id(o))
        if a is not None:
            return a
        with self._lock:
            a = self._by_id.get(id(o))
            if a is None:
                n = next(self._next)
                if n >= self._limit:
                    raise MemoryError("libdoca: out of handles")
                a = self._base + n * self.SLOT
                self.by_addr[a] = o
                self._by_id[id(o)] = a
        return a

    def get(self, a: int | None) -> object | None:
        return self.by_addr.get(a) if a else None

    def forget(self, o: object) -> None:
        """Drop *o*'s handle (its object is destroyed); the address is not reused."""
        with self._lock:
            a = self._by_id.pop(id(o), None)
            if a is not None:
                self.by_addr.pop(a, None)


def _reserve(size: int) -> int:
    """*size* bytes of address space, inaccessible and never backed (``PROT_NONE``, ``MAP_NORESERVE``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    flags = _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS | 0x4000  # MAP_NORESERVE (Linux)
    addr = libc.mmap(None, size, 0, flags, -1, 0)  # PROT_NONE
    if addr is None or addr == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "libdoca: cannot reserve the handle area")
    return int(addr)


HANDLES = Handles()
"""The process's handle table."""

T = TypeVar("T")


def obj(a: int | None, cls: type[T], what: str = "") -> T:
    """The object behind handle *a*, which must be a *cls*; ``DocaInvalidValue`` otherwise (NULL,
    a freed handle, a handle of another kind)."""
    o = HANDLES.by_addr.get(a) if a else None
    if not isinstance(o, cls):
        kind = what or cls.__name__
        if not a:
            raise DocaInvalidValue(f"{kind}: NULL handle")
        raise DocaInvalidValue(f"{kind}: {a:#x} is not a live {kind} handle")
    return o


def opt(a: int | None, cls: type[T], what: str = "") -> T | None:
    """Like :func:`obj`, but NULL gives ``None``."""
    return obj(a, cls, what) if a else None


handle = HANDLES.addr
forget = HANDLES.forget


def _out(ctype: Any) -> Callable[[int | None, Any], None]:
    def write(p: int | None, value: Any) -> None:
        if not p:
            raise DocaInvalidValue("NULL output pointer")
        ctype.from_address(p).value = value

    return write


out_ptr = _out(ctypes.c_void_p)
out_u8 = _out(ctypes.c_uint8)
out_u16 = _out(ctypes.c_uint16)
out_u32 = _out(ctypes.c_uint32)
out_u64 = _out(ctypes.c_uint64)
out_int = _out(ctypes.c_int)


def out_bytes(p: int | None, data: bytes) -> None:
    """Copy *data* to the caller's buffer at *p*."""
    if not p:
        raise DocaInvalidValue("NULL output pointer")
    ctypes.memmove(p, data, len(data))


def read_str(p: int | None, what: str = "string") -> str:
    """A NUL-terminated C string."""
    if not p:
        raise DocaInvalidValue(f"{what}: NULL")
    raw = ctypes.string_at(p)
    return raw.decode("utf-8", "replace")


_strings: dict[str, ctypes.Array[ctypes.c_char]] = {}


def c_string(text: str) -> int:
    """The address of a NUL-terminated copy of *text* kept for the process (``const char *`` results)."""
    buf = _strings.get(text)
    if buf is None:
        buf = _strings[text] = ctypes.create_string_buffer(text.encode())
    return ctypes.addressof(buf)


TaskCompletionFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
"""A C ``doca_*_task_*_completion_cb_t`` to call (from its address)."""
CtxStateFn = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_int)
"""A C ``doca_ctx_state_changed_callback_t``."""

_fns: dict[tuple[Any, int], Any] = {}


def c_function(proto: Any, addr: int | None) -> Any:
    """A callable for the C function at *addr* with prototype *proto* (cached), or ``None`` for NULL."""
    if not addr:
        return None
    key = (proto, addr)
    fn = _fns.get(key)
    if fn is None:
        fn = _fns[key] = proto(addr)
    return fn


def wrap(name: str, fn: Callable[..., Any], restype: Any) -> Callable[..., Any]:
    """*fn* as a slot function: exceptions become the C result (see the module's rules)."""
    if restype is ctypes.c_int:
        def slot(*args: Any) -> Any:
            try:
                rc = fn(*args)
            except DocaError as exc:
                log.debug("%s: %s", name, exc)
                return int(exc.code)
            except DocaUsageError as exc:  # a strict-mode finding: a refusal C can only see as a state error
                log.warning("%s: %s", name, exc)
                return _BAD_STATE
            except Exception:  # noqa: BLE001 - nothing may escape into C
                log.exception("libdoca: %s failed", name)
                return _UNKNOWN
            return 0 if rc is None else rc
    else:
        def slot(*args: Any) -> Any:
            try:
                return fn(*args)
            except DocaError as exc:
                log.debug("%s: %s", name, exc)
            except DocaUsageError as exc:
                log.warning("%s: %s", name, exc)
            except Exception:  # noqa: BLE001 - nothing may escape into C
                log.exception("libdoca: %s failed", name)
            return None if restype is None else 0
    slot.__name__ = name
    return slot


class CpuLedger:
    """Where the CPU of a libdoca process goes, for ``benchmarks/e2e`` (``DOCA_PY_LIBDOCA_CPU=DIR``).

    ``DIR/<pid>`` is a small shared file of ``(thread id, nanoseconds, calls)`` triples of ``uint64``: one per
    thread that called into libdoca, with the thread CPU time (``time.thread_time_ns``) it spent inside the
    emulator's slot functions and how many calls it made (a reader charges each call's C-to-Python crossing,
    which happens outside the measured span, to the emulator too). A reader adds the CPU of the process's other threads (the emulator's I/O and engine threads)
    to get the emulator's share; the rest of those threads' CPU is the native layer and the application:
    the Python a BlueField's cores would run. Chosen at attach: a process without the variable pays nothing.
    """

    SLOTS = 64

    def __init__(self, directory: str) -> None:
        import os

        self.path = os.path.join(directory, str(os.getpid()))
        with open(self.path, "wb") as f:
            f.write(b"\0" * (24 * self.SLOTS))
        self._file = open(self.path, "r+b")  # noqa: SIM115 - mapped for the process's life
        self._map = _mmap.mmap(self._file.fileno(), 24 * self.SLOTS)
        self._cells = (ctypes.c_uint64 * (3 * self.SLOTS)).from_buffer(self._map)
        self._local = threading.local()
        self._used = 0
        self._lock = threading.Lock()

    def cell(self) -> int:
        """This thread's index (registered on first use)."""
        i: int | None = getattr(self._local, "i", None)
        if i is None:
            with self._lock:
                i = self._used if self._used < self.SLOTS else self.SLOTS - 1
                self._used += 1
            self._cells[3 * i] = threading.get_native_id()
            self._local.i = i
            self._local.depth = 0
        return i

    def timed(self, slot: Callable[..., Any]) -> Callable[..., Any]:
        now = time.thread_time_ns
        cells, local = self._cells, self._local

        def timed_slot(*args: Any) -> Any:
            i = self.cell()
            if local.depth:  # a DOCA call from a C callback inside progress: counted by the outer call
                return slot(*args)
            local.depth = 1
            t0 = now()
            try:
                return slot(*args)
            finally:
                cells[3 * i + 1] += now() - t0
                cells[3 * i + 2] += 1
                local.depth = 0

        timed_slot.__name__ = slot.__name__
        return timed_slot


_ledger: CpuLedger | None = None


def ledger() -> CpuLedger | None:
    """The process's :class:`CpuLedger` when ``DOCA_PY_LIBDOCA_CPU`` names a directory, else ``None``."""
    global _ledger
    import os

    d = os.environ.get("DOCA_PY_LIBDOCA_CPU", "").strip()
    if d and _ledger is None:
        _ledger = CpuLedger(d)
    return _ledger


def unserved(name: str, restype: Any) -> Callable[..., Any]:
    """A DOCA function the emulator does not offer: ``DOCA_ERROR_NOT_SUPPORTED``, logged once."""
    said: list[bool] = []

    def slot(*args: Any) -> Any:
        if not said:
            said.append(True)
            log.warning("libdoca: %s is not supported by the emulator", name)
        if restype is ctypes.c_int:
            return int(ErrorCode.NOT_SUPPORTED)
        return None if restype is None else 0

    slot.__name__ = name
    return slot
