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

The fast path (consumer, producer) is in :mod:`.comch_fastpath`, the connection
wrappers and event trampolines in :mod:`.comch_connection`; this module re-exports
both. Nothing here touches DOCA at import time: the library is opened on first use.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from .._backend.protocols.core import DevInfoHandle
from ..errors import DocaBadState, DocaInvalidValue, check
from .comch_connection import (
    CONNECT_CB,
    DISCONNECT_CB,
    EXPIRED_CONSUMER_CB,
    MSG_RECV_CB,
    NEW_CONSUMER_CB,
    RUNNING,
    NativeComchConnection,
    cl,
    endpoints,
    has_imm_api,
    u32,
    u32_cap,
)
from .comch_fastpath import (
    NativeComchConsumer,
    NativeComchConsumerTaskPostRecv,
    NativeComchProducer,
    NativeComchProducerTaskSend,
    consumer_cap_get_max_buf_list_len,
    consumer_cap_get_max_buf_size,
    consumer_cap_get_max_consumers,
    consumer_cap_get_max_imm_data_len,
    consumer_cap_get_max_num_tasks,
    consumer_cap_is_supported,
    consumer_create,
    producer_cap_get_max_buf_list_len,
    producer_cap_get_max_buf_size,
    producer_cap_get_max_num_tasks,
    producer_cap_get_max_producers,
    producer_cap_is_supported,
    producer_create,
)
from .ctx import NativeCtx, rest_after
from .engine import EngineTask, EngineTaskPool, get_u32, init_ctx, is_supported

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

#: Event kinds of ``set_event_cb`` (as :mod:`doca_py.comch` names them).
EVENTS = ("msg_recv", "connect", "disconnect", "new_consumer", "expired_consumer")

#: Per side: what a server or client calls → C function (spelled out so ``grep`` finds each use).
SIDE_FNS: dict[str, dict[str, str]] = {
    "server": {
        "name": "doca_comch_server",
        "as_ctx": "doca_comch_server_as_ctx",
        "destroy": "doca_comch_server_destroy",
        "send_set_conf": "doca_comch_server_task_send_set_conf",
        "send_alloc_init": "doca_comch_server_task_send_alloc_init",
        "set_max_msg_size": "doca_comch_server_set_max_msg_size",
        "get_max_msg_size": "doca_comch_server_get_max_msg_size",
        "set_recv_queue_size": "doca_comch_server_set_recv_queue_size",
        "get_recv_queue_size": "doca_comch_server_get_recv_queue_size",
        "event_msg_recv_register": "doca_comch_server_event_msg_recv_register",
        "event_consumer_register": "doca_comch_server_event_consumer_register",
    },
    "client": {
        "name": "doca_comch_client",
        "as_ctx": "doca_comch_client_as_ctx",
        "destroy": "doca_comch_client_destroy",
        "send_set_conf": "doca_comch_client_task_send_set_conf",
        "send_alloc_init": "doca_comch_client_task_send_alloc_init",
        "set_max_msg_size": "doca_comch_client_set_max_msg_size",
        "get_max_msg_size": "doca_comch_client_get_max_msg_size",
        "set_recv_queue_size": "doca_comch_client_set_recv_queue_size",
        "get_recv_queue_size": "doca_comch_client_get_recv_queue_size",
        "event_msg_recv_register": "doca_comch_client_event_msg_recv_register",
        "event_consumer_register": "doca_comch_client_event_consumer_register",
    },
}


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


# -- server and client ------------------------------------------------------------------------------
def _no_wrap(conn: Any) -> object:
    return conn


class NativeComchEndpoint(NativeCtx):
    """What ``doca_comch_server *`` and ``doca_comch_client *`` share (and their ctx)."""

    def __init__(self, ptr: int | None, server_side: bool) -> None:
        l = cl()
        side = "server" if server_side else "client"
        self.ptr = ptr
        self.server_side = server_side
        self.side = side
        self.fns = fns = SIDE_FNS[side]
        init_ctx(self, ptr, getattr(l, fns["as_ctx"]), getattr(l, fns["destroy"]), fns["name"])
        self.send = EngineTaskPool(self, partial(getattr(l, fns["send_set_conf"]), ptr), fns["send_set_conf"],
                                   l.doca_comch_task_send_as_task, NativeComchTaskSend, "send")
        self._alloc_name = fns["send_alloc_init"]
        self.wrap: Callable[[Any], object] = _no_wrap
        self.cbs: dict[str, Callable[..., None] | None] = dict.fromkeys(EVENTS)
        self.by_ptr: dict[int, NativeComchConnection] = {}
        assert ptr
        if not (self.borrowed and ptr in endpoints):
            endpoints[ptr] = self  # a borrowed view of an owned endpoint leaves it the events

    # -- configuration ------------------------------------------------------------------------------
    def _set(self, name: str, value: int) -> None:
        fn = self.fns["set_" + name]
        check(getattr(cl(), fn)(self.ptr, u32(value, name)), fn)

    def _get(self, name: str) -> int:
        return get_u32(getattr(cl(), self.fns["get_" + name]), self.ptr)

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
        l = cl()
        if kind == "msg_recv":
            fn = self.fns["event_msg_recv_register"]
            check(getattr(l, fn)(self.ptr, MSG_RECV_CB), fn)
        elif kind in ("connect", "disconnect"):
            if not self.server_side:
                raise DocaInvalidValue("connection status events exist only on a comch server")
            fn = "doca_comch_server_event_connection_status_changed_register"
            check(getattr(l, fn)(self.ptr, CONNECT_CB, DISCONNECT_CB), fn)
        elif kind in ("new_consumer", "expired_consumer"):
            fn = self.fns["event_consumer_register"]
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
        rc = getattr(cl(), what)(self.ptr, c._p(what), data, len(data), _byref(pool.out))
        t = cast(NativeComchTaskSend, pool.take(rc, what))
        t.conn = c
        t.data = data
        return t

    # -- lifecycle -----------------------------------------------------------------------------------
    def destroy(self) -> None:
        NativeCtx.destroy(self)
        if self.ptr:
            if endpoints.get(self.ptr) is self:
                del endpoints[self.ptr]
        self._forget_conns()

    def dispatch(self) -> bool:
        """Run the Python side of recorded completions and events (called by the Pe)."""
        pending = self.pending
        if not pending:
            return False
        # The items recorded before this dispatch run now; what a callback's DOCA call records meanwhile waits
        # for the next progress. The list stays (the tasks keep its bound append): its items move to a copy,
        # so the loop keeps no count; a callback that raises leaves the rest first in line.
        items = pending[:]
        del pending[:]
        try:
            for item in items:
                obj, what = item
                if obj.__class__ is NativeComchConnection:
                    kind, arg = what
                    cb = self.cbs[kind]
                    if cb is not None:
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
                    o = obj.owner
                    if what:
                        obj.on_success(o, o.user_data, obj.cud.user_data)
                    else:
                        self.task_failed(obj)
                        obj.on_error(o, o.user_data, obj.cud.user_data)
        except BaseException:
            pending[:0] = rest_after(items, item)  # the rest: on the next progress, before the newer records
            raise
        return True


class NativeComchServer(NativeComchEndpoint):
    """``doca_comch_server *`` (DPU side)."""

    def __init__(self, ptr: int | None) -> None:
        super().__init__(ptr, True)

    def disconnect(self, conn: Any) -> None:
        """``doca_comch_server_disconnect`` (DOCA 3.x); the disconnect event follows."""
        c = self._own(conn)
        check(cl().doca_comch_server_disconnect(self.ptr, c._p("doca_comch_server_disconnect")),
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
        if self.get_state() != RUNNING:
            raise DocaBadState("the comch client has no connection until its ctx is RUNNING")
        out = ctypes.c_void_p()
        check(cl().doca_comch_client_get_connection(self.ptr, _byref(out)), "doca_comch_client_get_connection")
        if not out.value:
            raise DocaBadState("doca_comch_client_get_connection returned no connection")
        return self.conn_for(out.value)


# -- factories --------------------------------------------------------------------------------------
def _name(name: str) -> bytes:
    raw = name.encode()
    if not raw or b"\0" in raw:
        raise DocaInvalidValue(f"comch server name must be non-empty and without NUL, got {name!r}")
    return raw


def server_create(dev: object, rep: object, name: str) -> NativeComchServer:
    """``doca_comch_server_create`` on native dev and dev-rep handles."""
    out = ctypes.c_void_p()
    check(cl().doca_comch_server_create(getattr(dev, "ptr"), getattr(rep, "ptr"), _name(name), _byref(out)),
          "doca_comch_server_create")
    return NativeComchServer(out.value)


def client_create(dev: object, name: str) -> NativeComchClient:
    """``doca_comch_client_create`` on a native dev handle."""
    out = ctypes.c_void_p()
    check(cl().doca_comch_client_create(getattr(dev, "ptr"), _name(name), _byref(out)), "doca_comch_client_create")
    return NativeComchClient(out.value)


def cap_server_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(cl().doca_comch_cap_server_is_supported, devinfo)


def cap_client_is_supported(devinfo: DevInfoHandle) -> bool:
    return is_supported(cl().doca_comch_cap_client_is_supported, devinfo)


def cap_get_max_name_len(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_cap_get_max_name_len", devinfo)


def cap_get_max_msg_size(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_cap_get_max_msg_size", devinfo)


def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_cap_get_max_recv_queue_size", devinfo)


def cap_get_max_clients(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_cap_get_max_clients", devinfo)


def cap_get_max_send_tasks(devinfo: DevInfoHandle) -> int:
    return u32_cap("doca_comch_cap_get_max_send_tasks", devinfo)
