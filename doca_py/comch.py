"""``doca_comch``: the host ↔ DPU communication channel (DOCA 3.x API).

Control messages (server on the DPU, client on the host):

```python
server = ComchServer(dpu_dev, host_pf_rep, "my-service"); pe.connect_ctx(server)
server.task_send_set_conf(on_sent, on_send_error, 8)
server.event_msg_recv_register(on_msg)                 # on_msg(msg: memoryview, conn)
server.event_connection_status_changed_register(on_connect, on_disconnect)
server.start()                                         # RUNNING

client = ComchClient(host_dev, "my-service"); pe.connect_ctx(client)
client.task_send_set_conf(on_sent, on_send_error, 8); client.event_msg_recv_register(on_msg)
client.start()                                         # STARTING; RUNNING from progress once connected
client.task_send_alloc_init(client.get_connection(), b"hello").submit()
```

Fast path (either side, on an established connection):

```python
consumer = ComchConsumer(conn, mmap); pe.connect_ctx(consumer)
consumer.task_post_recv_set_conf(on_recv, on_recv_error, 64); consumer.start()   # STARTING
consumer.task_post_recv_alloc_init(buf).submit()       # the peer learns consumer.get_id() (new_consumer)
producer = ComchProducer(conn); pe.connect_ctx(producer)
producer.task_send_set_conf(on_sent, on_error, 64); producer.start()
task = producer.task_send_alloc_init(src, b"imm", remote_consumer_id)
try:
    task.submit()
except DocaAgain:                                      # no receive posted by that consumer yet:
    retry.append(task)                                 # keep the task, submit it after a later progress
```

A received message is a ``memoryview`` valid only during the callback (it is released
afterwards); copy it with ``bytes(msg)`` to keep it. Producer data is written after the
consumer buffer's data, whose data length grows (DOCA's destination rule).

As in DOCA 3.x, ``submit`` only hands a task over: its work (the message or the source
buffer's bytes put on the link, the receive buffer posted) happens in ``Pe.progress()``.
A producer send whose remote consumer has no receive posted is refused by ``submit``
itself with [`DocaAgain`][doca_py.errors.DocaAgain] (``DOCA_ERROR_AGAIN``); the caller keeps
the task. The producer's error callback reports fatal errors only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ._args import check_str, expect, wrong_type
from ._backend import backend
from ._backend.protocols.comch import (
    ComchClientHandle,
    ComchConnectionHandle,
    ComchEndpointHandle,
    ComchServerHandle,
)
from .comch_tasks import ComchConsumerTaskPostRecv, ComchProducerTaskSend, ComchTaskSend
from .ctx import Ctx, TaskCallback
from .dev import Dev, DevInfo, DevRep, devinfo_handle
from .errors import DocaInvalidValue, DocaUsageError
from .types import CtxState
from .comch_connection import (
    ComchConnection,
    ComchCounter,
    ConnectionStatusCallback,
    ConsumerCallback,
    MsgRecvCallback,
)
from .comch_fast_path import ComchConsumer, ComchProducer

__all__ = [
    "ComchServer", "ComchClient", "ComchOptions", "ComchConnection", "ComchConsumer", "ComchProducer",
    "ComchTaskSend", "ComchConsumerTaskPostRecv", "ComchProducerTaskSend", "ComchCounter",
    "MsgRecvCallback", "ConnectionStatusCallback", "ConsumerCallback",
    "cap_get_max_name_len", "cap_get_max_msg_size", "cap_get_max_recv_queue_size", "cap_get_max_clients",
    "cap_get_max_send_tasks",
]


# -- capabilities (doca_comch_cap_*) -----------------------------------------------------------------
def cap_get_max_name_len(devinfo: DevInfo) -> int:
    """``doca_comch_cap_get_max_name_len``: longest server name, counting the terminating NUL as DOCA does."""
    return backend.comch.cap_get_max_name_len(devinfo_handle(devinfo))


def cap_get_max_msg_size(devinfo: DevInfo) -> int:
    """``doca_comch_cap_get_max_msg_size``: largest control message."""
    return backend.comch.cap_get_max_msg_size(devinfo_handle(devinfo))


def cap_get_max_recv_queue_size(devinfo: DevInfo) -> int:
    """``doca_comch_cap_get_max_recv_queue_size``: deepest receive queue of a server or client."""
    return backend.comch.cap_get_max_recv_queue_size(devinfo_handle(devinfo))


def cap_get_max_clients(devinfo: DevInfo) -> int:
    """``doca_comch_cap_get_max_clients``: clients one server accepts."""
    return backend.comch.cap_get_max_clients(devinfo_handle(devinfo))


def cap_get_max_send_tasks(devinfo: DevInfo) -> int:
    """``doca_comch_cap_get_max_send_tasks``: send tasks a server or client may configure."""
    return backend.comch.cap_get_max_send_tasks(devinfo_handle(devinfo))


# -- server and client ---------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ComchOptions:
    """The settings of a [`ComchServer`][doca_py.comch.ComchServer] or [`ComchClient`][doca_py.comch.ComchClient]
    in one value (as cuda.core's ``StreamOptions``).

    Pass it to ``configure`` or to the constructor (``options=``) while the ctx is IDLE. ``None`` leaves a
    setting as it is; each field goes through the DOCA-named setter of the same name.
    """

    max_msg_size: int | None = None
    """``doca_comch_server/client_set_max_msg_size``."""
    recv_queue_size: int | None = None
    """``doca_comch_server/client_set_recv_queue_size``."""


class _Endpoint(Ctx):
    """What [`ComchServer`][doca_py.comch.ComchServer] and [`ComchClient`][doca_py.comch.ComchClient] share."""

    _h: ComchEndpointHandle

    def _setup(self, dev: Dev, options: ComchOptions | None, wrap: bool) -> None:
        dev._adopt(self)
        self._dev = dev
        if wrap:  # another wrapper's handle (from_handle) keeps that wrapper's connections
            self._h.set_wrap(self._conn)
        if options is not None:
            self.configure(options)

    def configure(self, options: ComchOptions) -> None:
        """Python-only: apply every setting of *options* that is not ``None`` through its DOCA-named setter
        (``set_max_msg_size``, ``set_recv_queue_size``).

        :raises DocaBadState: when the ctx is not IDLE.
        :raises DocaInvalidValue: for a value the setter refuses (the ones before it stay set).
        """
        if options.max_msg_size is not None:
            self.set_max_msg_size(options.max_msg_size)
        if options.recv_queue_size is not None:
            self.set_recv_queue_size(options.recv_queue_size)

    def _conn(self, h: ComchConnectionHandle) -> ComchConnection:
        c = cast("ComchConnection | None", h.owner)
        if c is None:
            c = ComchConnection(h, cast("ComchServer | ComchClient", self))
            h.owner = c
        return c

    # -- configuration (IDLE) ----------------------------------------------------------------------
    def set_max_msg_size(self, size: int) -> None:
        """``doca_comch_server_set_max_msg_size`` / ``doca_comch_client_set_max_msg_size``: largest message this side
        sends or accepts; a connection uses the smaller of both sides'."""
        self._check_open()
        self._h.set_max_msg_size(size)

    def get_max_msg_size(self) -> int:
        """``doca_comch_server_get_max_msg_size`` / ``doca_comch_client_get_max_msg_size``: the max msg size."""
        return self._h.get_max_msg_size()

    def set_recv_queue_size(self, size: int) -> None:
        """``doca_comch_server_set_recv_queue_size`` / ``doca_comch_client_set_recv_queue_size``: messages that may
        wait for ``Pe.progress`` before the link stops reading (back-pressure)."""
        self._check_open()
        self._h.set_recv_queue_size(size)

    def get_recv_queue_size(self) -> int:
        """``doca_comch_server_get_recv_queue_size`` / ``doca_comch_client_get_recv_queue_size``: the recv queue
        size."""
        return self._h.get_recv_queue_size()

    def get_device(self) -> Dev:
        """``doca_comch_server_get_device`` / ``doca_comch_client_get_device``: the device."""
        return self._dev

    def task_send_set_conf(self, success: TaskCallback[ComchTaskSend], error: TaskCallback[ComchTaskSend],
                           num_tasks: int) -> None:
        """``doca_comch_server_task_send_set_conf`` / ``doca_comch_client_task_send_set_conf``: register the send
        completion callbacks and size the task pool (before start)."""
        self._set_conf(self._h.send, success, error, num_tasks)

    def event_msg_recv_register(self, cb: MsgRecvCallback) -> None:
        """``doca_comch_server_event_msg_recv_register`` / ``doca_comch_client_event_msg_recv_register``: ``cb(msg,
        connection)`` for each message received (from ``Pe.progress``).

        *msg* is a read-only ``memoryview`` released when *cb* returns: copy it
        (``bytes(msg)``) to keep it."""
        self._check_open()
        self._h.set_event_cb("msg_recv", cb)

    def event_consumer_register(self, new_consumer: ConsumerCallback, expired_consumer: ConsumerCallback) -> None:
        """``doca_comch_server_event_consumer_register`` / ``doca_comch_client_event_consumer_register``:
        ``cb(connection, remote_consumer_id)`` when the peer starts / stops a consumer."""
        self._check_open()
        self._h.set_event_cb("new_consumer", new_consumer)
        self._h.set_event_cb("expired_consumer", expired_consumer)

    # -- tasks (RUNNING) ---------------------------------------------------------------------------------
    def task_send_alloc_init(self, connection: ComchConnection, data: Any, user_data: Any = None) -> ComchTaskSend:
        """``doca_comch_server_task_send_alloc_init`` / ``doca_comch_client_task_send_alloc_init``: a send task
        carrying a copy of *data* (bytes-like, at most the connection's max message size: ``DocaInvalidValue``
        otherwise; ``DocaNoMemory`` when the pool is empty)."""
        if connection.__class__ is not ComchConnection or connection._ctx is not self:
            if not isinstance(connection, ComchConnection):
                raise wrong_type(f"{type(self).__name__}.task_send_alloc_init", ComchConnection, connection=connection)
            raise DocaUsageError("the connection does not belong to this comch ctx")
        h = self._h.task_send_alloc_init(connection._h, data)
        # Ctx._wrap_task, inlined: this is the per-message path.
        t = cast("ComchTaskSend | None", h.owner)
        if t is None:
            t = self._wrap_task(h, ComchTaskSend, user_data)
        else:
            t.user_data = user_data
            t._allocated = True
            h.submitted = False
        t._conn = connection
        return t


class ComchServer(_Endpoint):
    """``doca_comch_server`` (DPU side): serves clients of the host function *rep* under *name*.

    ``start`` returns RUNNING; a second server with the same name on the same host
    function fails to start with ``DocaAlreadyExist``."""

    @classmethod
    def from_handle(cls, dev: Dev, rep: DevRep, name: str, handle: ComchServerHandle | int,
                    user_data: Any = None) -> ComchServer:
        """Python-only: wrap an existing ``doca_comch_server`` serving *name* on *dev* / *rep*, without taking
        ownership.

        *handle* is another wrapper's ``handle``: on the native backend the address of a C ``doca_comch_server``, on the
        emulated backend the backend object. The wrapper is borrowed: its ``close`` never stops or destroys
        the DOCA object, which its creator destroys after closing this wrapper. Connections stay those of
        the wrapper that owns the handle; a wrapper of a bare address wraps them itself.
        """
        if isinstance(handle, int):
            c = cls(dev, rep, name, user_data, _handle=backend.borrow_comch_server(handle))
        else:
            c = cls(dev, rep, name, user_data, _handle=handle, _wrap=False)
        c._borrow()
        return c

    def __init__(self, dev: Dev, rep: DevRep, name: str, user_data: Any = None, *,
                 options: ComchOptions | None = None, _handle: ComchServerHandle | None = None,
                 _wrap: bool = True) -> None:
        expect("ComchServer", Dev, dev=dev)
        expect("ComchServer", DevRep, rep=rep)
        check_str("ComchServer", "name", name)
        dev._check_open()
        rep._check_open()
        self._h: ComchServerHandle = backend.comch.server_create(dev._h, rep._h, name) if _handle is None \
            else _handle
        super().__init__(self._h, user_data)
        self._setup(dev, options, _wrap)
        self._rep = rep
        self.name = name
        """The service name clients connect to (``doca_comch_server_create``)."""

    def event_connection_status_changed_register(self, connect: ConnectionStatusCallback,
                                                 disconnect: ConnectionStatusCallback) -> None:
        """``doca_comch_server_event_connection_status_changed_register``: ``connect(connection, True)`` when a client
        connects, ``disconnect(connection, True)`` when it goes away (closed, crashed, or
        [`disconnect`][doca_py.comch.ComchServer.disconnect] ed)."""
        self._check_open()
        self._h.set_event_cb("connect", connect)
        self._h.set_event_cb("disconnect", disconnect)

    def disconnect(self, connection: ComchConnection) -> None:
        """``doca_comch_server_disconnect``: drop one client (``DocaInUse`` while this side still
        has consumers or producers on it). The disconnect callback follows."""
        expect("ComchServer.disconnect", ComchConnection, connection=connection)
        if connection._ctx is not self:
            raise DocaUsageError("the connection does not belong to this server")
        self._h.disconnect(connection._h)

    def get_connections(self) -> list[ComchConnection]:
        """Python-only: the connected clients (not in DOCA, which reports them through the callbacks)."""
        return [self._conn(h) for h in self._h.get_connections()]

    def get_device_rep(self) -> DevRep:
        """``doca_comch_server_get_device_rep``: the device rep."""
        return self._rep

    @staticmethod
    def cap_is_supported(devinfo: DevInfo) -> bool:
        """``doca_comch_cap_server_is_supported``."""
        return backend.comch.cap_server_is_supported(devinfo_handle(devinfo))

    def __enter__(self) -> ComchServer:
        return self


class ComchClient(_Endpoint):
    """``doca_comch_client`` (host side): connects to the server *name* of its device's function.

    ``start`` returns STARTING; ``Pe.progress`` moves the ctx to RUNNING once connected,
    then [`get_connection`][doca_py.comch.ComchClient.get_connection] is valid. If the server goes away the ctx moves to
    STOPPING and then IDLE (once every task is freed); it can be started again."""

    @classmethod
    def from_handle(cls, dev: Dev, name: str, handle: ComchClientHandle | int, user_data: Any = None) -> ComchClient:
        """Python-only: wrap an existing ``doca_comch_client`` of *name* on *dev*, without taking ownership.

        *handle* is another wrapper's ``handle``: on the native backend the address of a C ``doca_comch_client``, on the
        emulated backend the backend object. The wrapper is borrowed: its ``close`` never stops or destroys
        the DOCA object, which its creator destroys after closing this wrapper. Connections stay those of
        the wrapper that owns the handle; a wrapper of a bare address wraps them itself.
        """
        if isinstance(handle, int):
            c = cls(dev, name, user_data, _handle=backend.borrow_comch_client(handle))
        else:
            c = cls(dev, name, user_data, _handle=handle, _wrap=False)
        c._borrow()
        return c

    def __init__(self, dev: Dev, name: str, user_data: Any = None, *, options: ComchOptions | None = None,
                 _handle: ComchClientHandle | None = None, _wrap: bool = True) -> None:
        expect("ComchClient", Dev, dev=dev)
        check_str("ComchClient", "name", name)
        dev._check_open()
        self._h: ComchClientHandle = backend.comch.client_create(dev._h, name) if _handle is None else _handle
        super().__init__(self._h, user_data)
        self._setup(dev, options, _wrap)
        self.name = name
        """The service name of the server (``doca_comch_client_create``)."""

    def _wait_hint(self, target: CtxState, state: CtxState) -> str:
        if target is CtxState.RUNNING and state is CtxState.STARTING:
            return (f"a comch client goes RUNNING once connected to its server: is a ComchServer named "
                    f"{self.name!r} started on the DPU, on this host function's representor?")
        return super()._wait_hint(target, state)

    def get_connection(self) -> ComchConnection:
        """``doca_comch_client_get_connection`` (``DocaBadState`` until RUNNING)."""
        return self._conn(self._h.get_connection())

    @staticmethod
    def cap_is_supported(devinfo: DevInfo) -> bool:
        """``doca_comch_cap_client_is_supported``."""
        return backend.comch.cap_client_is_supported(devinfo_handle(devinfo))

    def __enter__(self) -> ComchClient:
        return self
