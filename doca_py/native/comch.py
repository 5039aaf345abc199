"""Native ``doca_comch`` (libdoca_comch; DOCA 2.6: libdoca_cc): the backend of :mod:`doca_py.comch`.

The functions come from :func:`~doca_py.native.capi.comch.load_comch` under their 3.x
names, whichever library the runtime has. Plumbing as in :mod:`.rdma`: one
:class:`~.engine.EngineTaskPool` per task type and the completion trampolines of
:mod:`.ctx`.

Connections are :class:`NativeComchConnection` wrappers, one per
``doca_comch_connection *`` (cached, so the public
:class:`~doca_py.comch.ComchConnection` in ``owner`` survives). The binding uses the
*connection user data* for the wrapper's registry key (the public layer keeps the
user's connection data in Python). Comch event callbacks carry no ctx user data, so
the module-level ``CFUNCTYPE`` trampolines find the wrapper through that key, or on
first sight through ``doca_comch_server_get_server_ctx`` /
``doca_comch_client_get_client_ctx``. A trampoline only records the event on its
server or client; the Python callbacks run after ``doca_pe_progress`` returns
(:meth:`NativeComchEndpoint.dispatch`). The message-received trampoline copies the
message (``ctypes.string_at``) because DOCA's buffer is valid only during the C call;
the Python callback gets a ``memoryview`` of the copy, released when it returns.

DOCA 2.x (no :data:`~doca_py.native.capi.comch.IMM_MARKER`) has no immediate data:
a producer send with immediate data or a consumer immediate-data length other than
0 raises :class:`~doca_py.errors.DocaNotSupported` naming the loaded version, and
the immediate-data getters report nothing. DOCA 2.6 has no
``doca_comch_server_disconnect`` either (its stub raises ``DocaNotSupported``).

Nothing here touches DOCA at import time: the library is opened on first use.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from ..abc import BufHandle, DevInfoHandle, MmapHandle
from ..errors import DocaBadState, DocaInvalidValue, DocaNotConnected, DocaNotSupported, check
from .capi import BoundLib, format_version
from .capi.comch import (
    IMM_MARKER,
    ComchEventConnectionStatusChangedCb,
    ComchEventConsumerCb,
    ComchEventMsgRecvCb,
    load_comch,
)
from .ctx import NativeCtx
from .engine import EngineTask, EngineTaskPool, buf_ptr, devinfo_ptr, get_u32, init_ctx, is_supported

__all__ = [
    "NativeComchConnection",
    "NativeComchEndpoint",
    "NativeComchServer",
    "NativeComchClient",
    "NativeComchConsumer",
    "NativeComchProducer",
    "NativeComchTaskSend",
    "NativeComchConsumerTaskPostRecv",
    "NativeComchProducerTaskSend",
    "EVENTS",
    "has_imm_api",
    "server_create",
    "client_create",
    "consumer_create",
    "producer_create",
    "cap_server_is_supported",
    "cap_client_is_supported",
    "cap_get_max_name_len",
    "cap_get_max_msg_size",
    "cap_get_max_recv_queue_size",
    "cap_get_max_clients",
    "cap_get_max_send_tasks",
    "consumer_cap_is_supported",
    "consumer_cap_get_max_num_tasks",
    "consumer_cap_get_max_buf_size",
    "consumer_cap_get_max_buf_list_len",
    "consumer_cap_get_max_consumers",
    "consumer_cap_get_max_imm_data_len",
    "producer_cap_is_supported",
    "producer_cap_get_max_num_tasks",
    "producer_cap_get_max_buf_size",
    "producer_cap_get_max_buf_list_len",
    "producer_cap_get_max_producers",
]

_byref = ctypes.byref
_RUNNING = 2  # DOCA_CTX_STATE_RUNNING
_U32 = 0xFFFFFFFF

#: Event kinds of ``set_event_cb`` (as :mod:`doca_py.comch` names them).
EVENTS = ("msg_recv", "connect", "disconnect", "new_consumer", "expired_consumer")

_keys = itertools.count(1)
#: Live servers and clients by their ``doca_comch_server *`` / ``doca_comch_client *``.
_endpoints: dict[int, NativeComchEndpoint] = {}
#: Connection wrappers by registry key (= the connection user data).
_conns: dict[int, NativeComchConnection] = {}


def _cl() -> BoundLib:
    return load_comch()


def has_imm_api(l: BoundLib | None = None) -> bool:
    """Whether the loaded comch library has immediate data (DOCA 3.x producer ABI, §6.2 #15)."""
    return IMM_MARKER not in (l or _cl()).missing


def _loaded(l: BoundLib) -> str:
    return f"the loaded libdoca_{l.libname} (DOCA {format_version(l.version)})"


def _need_imm(what: str) -> DocaNotSupported:
    l = _cl()
    return DocaNotSupported(
        f"{what} needs comch immediate data (DOCA 3.0+: doca_comch_producer_task_send_alloc_init with "
        f"imm_data/imm_data_len); {_loaded(l)} has none")


def _u32(value: int, what: str) -> int:
    v = int(value)
    if not 0 <= v <= _U32:
        raise DocaInvalidValue(f"{what} {v} does not fit the 32-bit C parameter")
    return v


# -- event trampolines ------------------------------------------------------------------------------
def _conn_of(conn_ptr: int) -> NativeComchConnection | None:
    """The wrapper of a connection named by a callback (made on first sight)."""
    l = _cl()
    c = _conns.get(l.doca_comch_connection_get_user_data(conn_ptr))
    if c is not None and c.ptr == conn_ptr:
        return c
    ep_ptr = l.doca_comch_server_get_server_ctx(conn_ptr) or l.doca_comch_client_get_client_ctx(conn_ptr)
    ep = _endpoints.get(ep_ptr) if ep_ptr else None
    # Not ours (user data differs): a new connection, maybe at a recycled address.
    return None if ep is None else ep.conn_for(conn_ptr, fresh=True)


def _on_msg(event: int | None, buf: int | None, length: int, conn_ptr: int | None) -> None:
    c = _conn_of(conn_ptr) if conn_ptr else None
    if c is not None:
        # DOCA's buffer is valid only during this call: copy now.
        data = ctypes.string_at(buf, length) if buf and length else b""
        c.ep.pending.append((c, ("msg_recv", data)))


def _status_event(connect: bool) -> Callable[[int | None, int | None, int], None]:
    def trampoline(event: int | None, conn_ptr: int | None, ok: int) -> None:
        c = _conn_of(conn_ptr) if conn_ptr else None
        if c is not None:
            c.connected = connect and bool(ok)
            c.ep.pending.append((c, ("connect" if connect else "disconnect", bool(ok))))

    return trampoline


def _consumer_event(kind: str) -> Callable[[int | None, int | None, int], None]:
    def trampoline(event: int | None, conn_ptr: int | None, consumer_id: int) -> None:
        c = _conn_of(conn_ptr) if conn_ptr else None
        if c is not None:
            c.ep.pending.append((c, (kind, consumer_id)))

    return trampoline


#: Registered by ``set_event_cb``; kept alive for the process.
MSG_RECV_CB = ComchEventMsgRecvCb(_on_msg)
CONNECT_CB = ComchEventConnectionStatusChangedCb(_status_event(True))
DISCONNECT_CB = ComchEventConnectionStatusChangedCb(_status_event(False))
NEW_CONSUMER_CB = ComchEventConsumerCb(_consumer_event("new_consumer"))
EXPIRED_CONSUMER_CB = ComchEventConsumerCb(_consumer_event("expired_consumer"))


# -- connections ------------------------------------------------------------------------------------
class NativeComchConnection:
    """A ``doca_comch_connection *`` of one :class:`NativeComchEndpoint`."""

    __slots__ = ("ep", "ptr", "owner", "key", "connected")

    def __init__(self, ep: NativeComchEndpoint, ptr: int) -> None:
        self.ep = ep
        self.ptr = ptr
        #: The public ComchConnection.
        self.owner: object = None
        #: Registry key, stored as the connection user data.
        self.key = next(_keys)
        #: Up until a disconnect event (server side) or the client's stop.
        self.connected = True
        _conns[self.key] = self
        check(_cl().doca_comch_connection_set_user_data(ptr, self.key), "doca_comch_connection_set_user_data")

    def _p(self, what: str) -> int:
        if not self.connected:
            raise DocaNotConnected(f"{what}: the comch connection is closed")
        return self.ptr

    def is_server_side(self) -> bool:
        return self.ep.server_side

    def is_connected(self) -> bool:
        if not self.connected:
            return False
        return self.ep.server_side or self.ep.get_state() == _RUNNING

    def update_info(self) -> None:
        check(_cl().doca_comch_connection_update_info(self._p("doca_comch_connection_update_info")),
              "doca_comch_connection_update_info")

    def get_counter(self, counter: int) -> int:
        if not 1 <= counter <= 4:
            raise DocaInvalidValue(f"unknown doca_comch_counter {counter}")
        v = ctypes.c_uint64()
        check(_cl().doca_comch_connection_get_counter(self._p("doca_comch_connection_get_counter"), counter,
                                                      _byref(v)), "doca_comch_connection_get_counter")
        return v.value

    def forget(self) -> None:
        """The C connection is gone (ctx stopped or destroyed): drop it from the registry."""
        self.connected = False
        _conns.pop(self.key, None)

    def __repr__(self) -> str:
        side = "server" if self.ep.server_side else "client"
        return f"<NativeComchConnection {side} {self.ptr:#x} {'up' if self.connected else 'down'}>"


# -- tasks ------------------------------------------------------------------------------------------
class NativeComchTaskSend(EngineTask):
    """``doca_comch_task_send *``: one control message (DOCA copies it at allocation)."""

    __slots__ = ("conn", "data")

    def __init__(self, ptr: int, pool: EngineTaskPool) -> None:
        super().__init__(ptr, pool)
        self.conn: NativeComchConnection | None = None
        self.data = b""  # kept alive with the task, in case DOCA only references it

    def get_connection(self) -> NativeComchConnection | None:
        return self.conn

    def get_msg(self) -> bytes:
        return self.data


class NativeComchConsumerTaskPostRecv(EngineTask):
    """``doca_comch_consumer_task_post_recv *``."""

    __slots__ = ()

    def set_buf(self, buf: BufHandle) -> None:
        _cl().doca_comch_consumer_task_post_recv_set_buf(self.ptr, buf_ptr(buf))

    def get_buf(self) -> int | None:
        """The receive ``doca_buf *``."""
        return cast("int | None", _cl().doca_comch_consumer_task_post_recv_get_buf(self.ptr))

    @property
    def producer_id(self) -> int:
        """The producer that filled the buffer (0 if none)."""
        return int(_cl().doca_comch_consumer_task_post_recv_get_producer_id(self.ptr))

    @property
    def imm(self) -> bytes:
        """A copy of the received immediate data (empty if none, and always on DOCA 2.x)."""
        l = _cl()
        if not has_imm_api(l):
            return b""
        n = int(l.doca_comch_consumer_task_post_recv_get_imm_data_len(self.ptr))
        p = l.doca_comch_consumer_task_post_recv_get_imm_data(self.ptr) if n else None
        return ctypes.string_at(p, n) if p else b""


class NativeComchProducerTaskSend(EngineTask):
    """``doca_comch_producer_task_send *``."""

    __slots__ = ("imm_keep",)

    def __init__(self, ptr: int, pool: EngineTaskPool) -> None:
        super().__init__(ptr, pool)
        self.imm_keep = b""  # the immediate data passed to DOCA, kept alive with the task

    def set_buf(self, buf: BufHandle) -> None:
        _cl().doca_comch_producer_task_send_set_buf(self.ptr, buf_ptr(buf))

    def get_buf(self) -> int | None:
        """The source ``doca_buf *``."""
        return cast("int | None", _cl().doca_comch_producer_task_send_get_buf(self.ptr))

    @property
    def consumer_id(self) -> int:
        return int(_cl().doca_comch_producer_task_send_get_consumer_id(self.ptr))

    def set_consumer_id(self, consumer_id: int) -> None:
        if not 0 < consumer_id <= _U32:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        _cl().doca_comch_producer_task_send_set_consumer_id(self.ptr, consumer_id)

    @property
    def imm(self) -> bytes:
        """A copy of the task's immediate data (always empty on DOCA 2.x)."""
        l = _cl()
        if not has_imm_api(l):
            return b""
        n = int(l.doca_comch_producer_task_send_get_imm_data_len(self.ptr))
        p = l.doca_comch_producer_task_send_get_imm_data(self.ptr) if n else None
        return ctypes.string_at(p, n) if p else b""

    def set_imm_data(self, imm: bytes) -> None:
        data = bytes(imm)
        l = _cl()
        if not has_imm_api(l):
            if data:
                raise _need_imm("doca_comch_producer_task_send_set_imm_data")
            return
        self.imm_keep = data
        l.doca_comch_producer_task_send_set_imm_data(self.ptr, data or None, len(data))


# -- server and client ------------------------------------------------------------------------------
def _no_wrap(conn: Any) -> object:
    return conn


class NativeComchEndpoint(NativeCtx):
    """What ``doca_comch_server *`` and ``doca_comch_client *`` share (and their ctx)."""

    def __init__(self, ptr: int | None, server_side: bool) -> None:
        l = _cl()
        side = "server" if server_side else "client"
        self.ptr = ptr
        self.server_side = server_side
        self.side = side
        init_ctx(self, ptr, getattr(l, f"doca_comch_{side}_as_ctx"), getattr(l, f"doca_comch_{side}_destroy"),
                 f"doca_comch_{side}")
        name = f"doca_comch_{side}_task_send"
        self.send = EngineTaskPool(self, partial(getattr(l, f"{name}_set_conf"), ptr), name,
                                   l.doca_comch_task_send_as_task, NativeComchTaskSend, "send")
        self._alloc_name = f"{name}_alloc_init"
        self.wrap: Callable[[Any], object] = _no_wrap
        self.cbs: dict[str, Callable[..., None] | None] = dict.fromkeys(EVENTS)
        self.by_ptr: dict[int, NativeComchConnection] = {}
        assert ptr
        _endpoints[ptr] = self

    # -- configuration ------------------------------------------------------------------------------
    def _set(self, name: str, value: int) -> None:
        fn = f"doca_comch_{self.side}_set_{name}"
        check(getattr(_cl(), fn)(self.ptr, _u32(value, name)), fn)

    def _get(self, name: str) -> int:
        return get_u32(getattr(_cl(), f"doca_comch_{self.side}_get_{name}"), self.ptr)

    def set_max_msg_size(self, value: int) -> None:
        self._set("max_msg_size", value)

    def get_max_msg_size(self) -> int:
        return self._get("max_msg_size")

    def set_recv_queue_size(self, value: int) -> None:
        self._set("recv_queue_size", value)

    def get_recv_queue_size(self) -> int:
        return self._get("recv_queue_size")

    def set_wrap(self, wrap: Callable[[Any], object]) -> None:
        self.wrap = wrap

    def set_event_cb(self, kind: str, cb: Callable[..., None] | None) -> None:
        l, side = _cl(), self.side
        if kind == "msg_recv":
            fn = f"doca_comch_{side}_event_msg_recv_register"
            check(getattr(l, fn)(self.ptr, MSG_RECV_CB), fn)
        elif kind in ("connect", "disconnect"):
            if not self.server_side:
                raise DocaInvalidValue("connection status events exist only on a comch server")
            fn = "doca_comch_server_event_connection_status_changed_register"
            check(getattr(l, fn)(self.ptr, CONNECT_CB, DISCONNECT_CB), fn)
        elif kind in ("new_consumer", "expired_consumer"):
            fn = f"doca_comch_{side}_event_consumer_register"
            check(getattr(l, fn)(self.ptr, NEW_CONSUMER_CB, EXPIRED_CONSUMER_CB), fn)
        else:
            raise DocaInvalidValue(f"unknown comch event {kind!r}; one of {', '.join(EVENTS)}")
        self.cbs[kind] = cb

    # -- connections -------------------------------------------------------------------------------
    def conn_for(self, ptr: int, fresh: bool = False) -> NativeComchConnection:
        """The wrapper of ``doca_comch_connection *`` *ptr*; a new one if *fresh* or unseen."""
        c = self.by_ptr.get(ptr)
        if c is None or fresh:
            if c is not None:
                c.forget()
            c = self.by_ptr[ptr] = NativeComchConnection(self, ptr)
        return c

    def _own(self, conn: Any) -> NativeComchConnection:
        if conn.__class__ is not NativeComchConnection or conn.ep is not self:
            raise DocaInvalidValue(f"the connection does not belong to this comch {self.side}")
        return conn

    def _forget_conns(self) -> None:
        for c in self.by_ptr.values():
            c.forget()
        self.by_ptr.clear()

    # -- tasks ---------------------------------------------------------------------------------------
    def task_send_alloc_init(self, conn: Any, data: Any) -> NativeComchTaskSend:
        c = self._own(conn)
        if data.__class__ is not bytes:
            with memoryview(data) as mv:
                data = mv.tobytes()
        pool = self.send
        what = self._alloc_name
        rc = getattr(_cl(), what)(self.ptr, c._p(what), data, len(data), _byref(pool.out))
        t = cast(NativeComchTaskSend, pool.take(rc, what))
        t.conn = c
        t.data = data
        return t

    # -- lifecycle -----------------------------------------------------------------------------------
    def destroy(self) -> None:
        NativeCtx.destroy(self)
        if self.ptr:
            _endpoints.pop(self.ptr, None)
        self._forget_conns()

    def dispatch(self) -> bool:
        """Run the Python side of recorded completions and events (called by the Pe)."""
        pending = self.pending
        if not pending:
            return False
        self.pending = []
        for i, (obj, what) in enumerate(pending):
            try:
                if obj.__class__ is NativeComchConnection:
                    kind, arg = what
                    cb = self.cbs[kind]
                    if cb is None:
                        continue
                    owner = obj.owner
                    if owner is None:
                        owner = obj.owner = self.wrap(obj)
                    if kind == "msg_recv":
                        with memoryview(arg) as msg:
                            cb(msg, owner)
                    else:
                        cb(owner, arg)
                elif obj is self:
                    if self.state_cb is not None:
                        self.state_cb(*what)
                else:
                    obj.inflight = False
                    cb = obj.pool.success if what else obj.pool.error
                    cb(obj.owner)
            except BaseException:
                self.pending[:0] = pending[i + 1:]  # keep the rest for the next progress
                raise
        return True


class NativeComchServer(NativeComchEndpoint):
    """``doca_comch_server *`` (DPU side)."""

    def __init__(self, ptr: int | None) -> None:
        super().__init__(ptr, True)

    def disconnect(self, conn: Any) -> None:
        """``doca_comch_server_disconnect`` (DOCA 3.x); the disconnect event follows."""
        c = self._own(conn)
        check(_cl().doca_comch_server_disconnect(self.ptr, c._p("doca_comch_server_disconnect")),
              "doca_comch_server_disconnect")

    def get_connections(self) -> list[NativeComchConnection]:
        """Connections seen and not reported disconnected."""
        return [c for c in self.by_ptr.values() if c.connected]


class NativeComchClient(NativeComchEndpoint):
    """``doca_comch_client *`` (host side)."""

    def __init__(self, ptr: int | None) -> None:
        super().__init__(ptr, False)

    def start(self) -> int:
        # A (re)started client gets a new connection: forget the previous one.
        self._forget_conns()
        return NativeCtx.start(self)

    def get_connection(self) -> NativeComchConnection:
        """``doca_comch_client_get_connection`` (``DocaBadState`` until the ctx is RUNNING)."""
        if self.get_state() != _RUNNING:
            raise DocaBadState("the comch client has no connection until its ctx is RUNNING")
        out = ctypes.c_void_p()
        check(_cl().doca_comch_client_get_connection(self.ptr, _byref(out)), "doca_comch_client_get_connection")
        if not out.value:
            raise DocaBadState("doca_comch_client_get_connection returned no connection")
        return self.conn_for(out.value)


# -- fast path --------------------------------------------------------------------------------------
class NativeComchConsumer(NativeCtx):
    """``doca_comch_consumer *`` and its ctx."""

    def __init__(self, ptr: int | None, conn: NativeComchConnection) -> None:
        l = _cl()
        self.ptr = ptr
        self.conn = conn
        init_ctx(self, ptr, l.doca_comch_consumer_as_ctx, l.doca_comch_consumer_destroy, "doca_comch_consumer")
        name = "doca_comch_consumer_task_post_recv"
        self.post_recv = EngineTaskPool(self, partial(l.doca_comch_consumer_task_post_recv_set_conf, ptr), name,
                                        l.doca_comch_consumer_task_post_recv_as_task,
                                        NativeComchConsumerTaskPostRecv, "post_recv")
        self._id: int | None = None

    def get_id(self) -> int:
        if self._id is None:
            self._id = get_u32(_cl().doca_comch_consumer_get_id, self.ptr)
        return self._id

    def set_imm_data_len(self, n: int) -> None:
        v = _u32(n, "imm_data_len")
        l = _cl()
        if not has_imm_api(l):
            if v == 0:
                return  # what DOCA 2.x has
            raise _need_imm(f"imm_data_len={v}")
        check(l.doca_comch_consumer_set_imm_data_len(self.ptr, v), "doca_comch_consumer_set_imm_data_len")

    def get_imm_data_len(self) -> int:
        l = _cl()
        if not has_imm_api(l):
            return 0
        return get_u32(l.doca_comch_consumer_get_imm_data_len, self.ptr)

    def task_post_recv_alloc_init(self, buf: BufHandle) -> NativeComchConsumerTaskPostRecv:
        pool = self.post_recv
        what = "doca_comch_consumer_task_post_recv_alloc_init"
        rc = _cl().doca_comch_consumer_task_post_recv_alloc_init(self.ptr, buf_ptr(buf), _byref(pool.out))
        return cast(NativeComchConsumerTaskPostRecv, pool.take(rc, what))


class NativeComchProducer(NativeCtx):
    """``doca_comch_producer *`` and its ctx."""

    def __init__(self, ptr: int | None, conn: NativeComchConnection) -> None:
        l = _cl()
        self.ptr = ptr
        self.conn = conn
        init_ctx(self, ptr, l.doca_comch_producer_as_ctx, l.doca_comch_producer_destroy, "doca_comch_producer")
        name = "doca_comch_producer_task_send"
        self.send = EngineTaskPool(self, partial(l.doca_comch_producer_task_send_set_conf, ptr), name,
                                   l.doca_comch_producer_task_send_as_task, NativeComchProducerTaskSend, "send")
        self._id: int | None = None

    def get_id(self) -> int:
        if self._id is None:
            self._id = get_u32(_cl().doca_comch_producer_get_id, self.ptr)
        return self._id

    def task_send_alloc_init(self, buf: BufHandle, imm: bytes, consumer_id: int) -> NativeComchProducerTaskSend:
        """A send of *buf* (with *imm*, DOCA 3.x only) to the remote consumer *consumer_id*."""
        if not 0 < consumer_id <= _U32:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        data = bytes(imm)
        l = _cl()
        pool = self.send
        what = "doca_comch_producer_task_send_alloc_init"
        if has_imm_api(l):
            rc = l.doca_comch_producer_task_send_alloc_init(self.ptr, buf_ptr(buf), data or None, len(data),
                                                            consumer_id, _byref(pool.out))
        elif data:
            raise _need_imm(f"a producer send with {len(data)} bytes of immediate data")
        else:
            rc = l.doca_comch_producer_task_send_alloc_init(self.ptr, buf_ptr(buf), consumer_id, _byref(pool.out))
        t = cast(NativeComchProducerTaskSend, pool.take(rc, what))
        t.imm_keep = data
        return t


# -- factories --------------------------------------------------------------------------------------
def _name(name: str) -> bytes:
    raw = name.encode()
    if not raw or b"\0" in raw:
        raise DocaInvalidValue(f"comch server name must be non-empty and without NUL, got {name!r}")
    return raw


def _conn(conn: Any) -> NativeComchConnection:
    if conn.__class__ is not NativeComchConnection:
        raise DocaInvalidValue("not a native comch connection")
    return conn


def server_create(dev: object, rep: object, name: str) -> NativeComchServer:
    """``doca_comch_server_create`` on native dev and dev-rep handles."""
    out = ctypes.c_void_p()
    check(_cl().doca_comch_server_create(getattr(dev, "ptr"), getattr(rep, "ptr"), _name(name), _byref(out)),
          "doca_comch_server_create")
    return NativeComchServer(out.value)


def client_create(dev: object, name: str) -> NativeComchClient:
    """``doca_comch_client_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(_cl().doca_comch_client_create(getattr(dev, "ptr"), _name(name), _byref(out)), "doca_comch_client_create")
    return NativeComchClient(out.value)


def consumer_create(conn: Any, mmap: MmapHandle) -> NativeComchConsumer:
    """``doca_comch_consumer_create`` on a connection and a native mmap."""
    c = _conn(conn)
    out = ctypes.c_void_p()
    check(_cl().doca_comch_consumer_create(c._p("doca_comch_consumer_create"), getattr(mmap, "ptr"), _byref(out)),
          "doca_comch_consumer_create")
    return NativeComchConsumer(out.value, c)


def producer_create(conn: Any) -> NativeComchProducer:
    """``doca_comch_producer_create`` on a connection."""
    c = _conn(conn)
    out = ctypes.c_void_p()
    check(_cl().doca_comch_producer_create(c._p("doca_comch_producer_create"), _byref(out)),
          "doca_comch_producer_create")
    return NativeComchProducer(out.value, c)


# -- capabilities -----------------------------------------------------------------------------------
def _u32_cap(name: str, devinfo: DevInfoHandle) -> int:
    return get_u32(getattr(_cl(), name), devinfo_ptr(devinfo))


def _u32_cap_or(name: str, devinfo: DevInfoHandle, older: int) -> int:
    """A capability DOCA 2.6 lacks: *older* (what 2.6 implies) when the symbol is absent."""
    fn = getattr(_cl(), name)
    return get_u32(fn, devinfo_ptr(devinfo)) if fn else older


def cap_server_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_cl().doca_comch_cap_server_is_supported, devinfo)


def cap_client_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_cl().doca_comch_cap_client_is_supported, devinfo)


def cap_get_max_name_len(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_cap_get_max_name_len", devinfo)


def cap_get_max_msg_size(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_cap_get_max_msg_size", devinfo)


def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_cap_get_max_recv_queue_size", devinfo)


def cap_get_max_clients(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_cap_get_max_clients", devinfo)


def cap_get_max_send_tasks(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_cap_get_max_send_tasks", devinfo)


def consumer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_cl().doca_comch_consumer_cap_is_supported, devinfo)


def consumer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_consumer_cap_get_max_num_tasks", devinfo)


def consumer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_consumer_cap_get_max_buf_size", devinfo)


def consumer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    """Chained receive buffers; 1 on DOCA 2.6, which has no such capability."""
    return _u32_cap_or("doca_comch_consumer_cap_get_max_buf_list_len", devinfo, 1)


def consumer_cap_get_max_consumers(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_consumer_cap_get_max_consumers", devinfo)


def consumer_cap_get_max_imm_data_len(devinfo: DevInfoHandle) -> int:
    """Immediate-data bytes; 0 on DOCA 2.x, which has no immediate data."""
    return _u32_cap_or("doca_comch_consumer_cap_get_max_imm_data_len", devinfo, 0)


def producer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(_cl().doca_comch_producer_cap_is_supported, devinfo)


def producer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_producer_cap_get_max_num_tasks", devinfo)


def producer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_producer_cap_get_max_buf_size", devinfo)


def producer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    """Chained send buffers; 1 on DOCA 2.6, which has no such capability."""
    return _u32_cap_or("doca_comch_producer_cap_get_max_buf_list_len", devinfo, 1)


def producer_cap_get_max_producers(devinfo: DevInfoHandle) -> int:
    return _u32_cap("doca_comch_producer_cap_get_max_producers", devinfo)
