"""libdoca_comch's fast path served by the emulator: ``doca_comch_consumer``, ``doca_comch_producer`` and
their tasks (DOCA 2.6: ``doca_cc_consumer``/``doca_cc_producer``). The DPA-only functions stay unserved.

Immediate data (3.x): the getters return a pointer to a copy the task keeps until its data changes, so
the pointer stays valid as long as DOCA's does (until the task is re-submitted or freed). DOCA 2.x's
producer ``task_send_alloc_init`` has no immediate-data parameters; the one function serves both ABIs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from ...emulated import comch as emu
from ...emulated.comch import (EmuComchConsumer, EmuComchConsumerTaskPostRecv, EmuComchProducer,
                               EmuComchProducerTaskSend)
from ...emulated.ctx import EmuTask
from ...emulated.mmap import EmuMmap
from ...errors import DocaError, DocaInvalidValue
from ._core import handle, log, obj, out_ptr, out_u32
from .comch import conn_of, serves, supported, u32_cap
from .common import TaskRec, alloc_or_fail, buf_of, ctx_extra, forget_ctx, task_set_conf

__all__: list[str] = []


def _consumer(p: int | None) -> EmuComchConsumer:
    return obj(p, EmuComchConsumer, "doca_comch_consumer")


def _producer(p: int | None) -> EmuComchProducer:
    return obj(p, EmuComchProducer, "doca_comch_producer")


def _recv_task(p: int | None) -> EmuComchConsumerTaskPostRecv:
    return obj(p, EmuComchConsumerTaskPostRecv, "doca_comch_consumer_task_post_recv")


def _send_task(p: int | None) -> EmuComchProducerTaskSend:
    return obj(p, EmuComchProducerTaskSend, "doca_comch_producer_task_send")


def _imm_ptr(t: EmuTask, imm: bytes) -> int | None:
    """The address of *t*'s immediate data for C (NULL if none), a copy kept in the task's record."""
    if not imm:
        return None
    rec = t.owner
    if not isinstance(rec, TaskRec):
        raise DocaInvalidValue("task was not allocated through libdoca")
    kept = rec.extra
    if kept is None or kept[0] != imm:
        kept = rec.extra = (imm, ctypes.create_string_buffer(imm, len(imm)))
    return ctypes.addressof(kept[1])


def _read_imm(p: int | None, n: int) -> bytes:
    if n and not p:
        raise DocaInvalidValue(f"{n} bytes of immediate data at NULL")
    return ctypes.string_at(p or 0, n) if n else b""


# -- capabilities ------------------------------------------------------------------------------------

supported("doca_comch_consumer_cap_is_supported", emu.consumer_cap_is_supported, "a comch consumer")
supported("doca_comch_producer_cap_is_supported", emu.producer_cap_is_supported, "a comch producer")
u32_cap("doca_comch_consumer_cap_get_max_num_tasks", emu.consumer_cap_get_max_num_tasks)
u32_cap("doca_comch_consumer_cap_get_max_buf_size", emu.consumer_cap_get_max_buf_size)
u32_cap("doca_comch_consumer_cap_get_max_buf_list_len", emu.consumer_cap_get_max_buf_list_len)
u32_cap("doca_comch_consumer_cap_get_max_consumers", emu.consumer_cap_get_max_consumers)
u32_cap("doca_comch_consumer_cap_get_max_imm_data_len", emu.consumer_cap_get_max_imm_data_len)
u32_cap("doca_comch_producer_cap_get_max_num_tasks", emu.producer_cap_get_max_num_tasks)
u32_cap("doca_comch_producer_cap_get_max_buf_size", emu.producer_cap_get_max_buf_size)
u32_cap("doca_comch_producer_cap_get_max_buf_list_len", emu.producer_cap_get_max_buf_list_len)
u32_cap("doca_comch_producer_cap_get_max_producers", emu.producer_cap_get_max_producers)


# -- consumer ----------------------------------------------------------------------------------------

@serves("doca_comch_consumer_create")
def _consumer_create(conn: int | None, mmap: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer")
    c = emu.consumer_create(conn_of(conn), obj(mmap, EmuMmap, "doca_mmap"))
    out_ptr(out, ctx_extra(c).handle)


@serves("doca_comch_consumer_destroy")
def _consumer_destroy(p: int | None) -> None:
    c = _consumer(p)
    c.destroy()
    forget_ctx(c)


@serves("doca_comch_consumer_as_ctx")
def _consumer_as_ctx(p: int | None) -> int:
    return ctx_extra(_consumer(p)).handle


@serves("doca_comch_consumer_get_id")
def _consumer_id(p: int | None, out: int | None) -> None:
    out_u32(out, _consumer(p).get_id())


@serves("doca_comch_consumer_set_imm_data_len")
def _consumer_set_imm(p: int | None, n: int) -> None:
    _consumer(p).set_imm_data_len(n)


@serves("doca_comch_consumer_get_imm_data_len")
def _consumer_get_imm(p: int | None, out: int | None) -> None:
    out_u32(out, _consumer(p).get_imm_data_len())


@serves("doca_comch_consumer_task_post_recv_set_conf")
def _recv_set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
    task_set_conf(_consumer(p).post_recv, ok, err, num)


@serves("doca_comch_consumer_task_post_recv_alloc_init")
def _recv_alloc(p: int | None, buf: int | None, out: int | None) -> None:
    c = _consumer(p)
    b = buf_of(buf)
    alloc_or_fail(lambda: c.task_post_recv_alloc_init(b), 0, out)


@serves("doca_comch_consumer_task_post_recv_as_task")
def _recv_as_task(p: int | None) -> int:
    return handle(_recv_task(p))


@serves("doca_comch_consumer_task_post_recv_get_buf")
def _recv_get_buf(p: int | None) -> int | None:
    b = _recv_task(p).buf
    return handle(b) if b is not None else None


def _void(what: str, fn: Callable[[], None]) -> None:
    """A ``void`` setter: C learns nothing of a refusal, so it is logged where it can be seen (the slot
    wrapper logs DocaErrors at debug level only)."""
    try:
        fn()
    except DocaError as exc:
        log.warning("libdoca: %s refused: %s", what, exc)


@serves("doca_comch_consumer_task_post_recv_set_buf")
def _recv_set_buf(p: int | None, buf: int | None) -> None:
    # A buffer of another mmap is taken: the submit refuses it (INVALID_VALUE), as DOCA checks it there.
    _void("doca_comch_consumer_task_post_recv_set_buf", lambda: _recv_task(p).set_buf(buf_of(buf)))


@serves("doca_comch_consumer_task_post_recv_get_producer_id")
def _recv_producer(p: int | None) -> int:
    return _recv_task(p).producer_id


@serves("doca_comch_consumer_task_post_recv_get_imm_data")
def _recv_imm(p: int | None) -> int | None:
    t = _recv_task(p)
    return _imm_ptr(t, t.imm)


@serves("doca_comch_consumer_task_post_recv_get_imm_data_len")
def _recv_imm_len(p: int | None) -> int:
    return len(_recv_task(p).imm)


# -- producer ----------------------------------------------------------------------------------------

@serves("doca_comch_producer_create")
def _producer_create(conn: int | None, out: int | None) -> None:
    if not out:
        raise DocaInvalidValue("NULL output pointer")
    pr = emu.producer_create(conn_of(conn))
    out_ptr(out, ctx_extra(pr).handle)


@serves("doca_comch_producer_destroy")
def _producer_destroy(p: int | None) -> None:
    pr = _producer(p)
    pr.destroy()
    forget_ctx(pr)


@serves("doca_comch_producer_as_ctx")
def _producer_as_ctx(p: int | None) -> int:
    return ctx_extra(_producer(p)).handle


@serves("doca_comch_producer_get_id")
def _producer_id(p: int | None, out: int | None) -> None:
    out_u32(out, _producer(p).get_id())


@serves("doca_comch_producer_task_send_set_conf")
def _send_set_conf(p: int | None, ok: int | None, err: int | None, num: int) -> None:
    task_set_conf(_producer(p).send, ok, err, num)


@serves("doca_comch_producer_task_send_alloc_init")
def _send_alloc(p: int | None, buf: int | None, *rest: int | None) -> None:
    """3.x ``(producer, buf, imm_data, imm_data_len, consumer_id, →task)``; 2.x (no immediate data)
    ``(producer, buf, consumer_id, →task)``."""
    pr = _producer(p)
    b = buf_of(buf)
    if len(rest) == 4:
        imm_p, imm_len, cid, out = rest
        imm = _read_imm(imm_p, imm_len or 0)
    else:
        cid, out = rest
        imm = b""
    alloc_or_fail(lambda: pr.task_send_alloc_init(b, imm, cid or 0), 0, out)


@serves("doca_comch_producer_task_send_as_task")
def _send_as_task(p: int | None) -> int:
    return handle(_send_task(p))


@serves("doca_comch_producer_task_send_get_buf")
def _send_get_buf(p: int | None) -> int | None:
    b = _send_task(p).buf
    return handle(b) if b is not None else None


@serves("doca_comch_producer_task_send_set_buf")
def _send_set_buf(p: int | None, buf: int | None) -> None:
    _void("doca_comch_producer_task_send_set_buf", lambda: _send_task(p).set_buf(buf_of(buf)))


@serves("doca_comch_producer_task_send_get_consumer_id")
def _send_consumer(p: int | None) -> int:
    return _send_task(p).consumer_id


@serves("doca_comch_producer_task_send_set_consumer_id")
def _send_set_consumer(p: int | None, cid: int) -> None:
    t = _send_task(p)
    # Any uint32_t is taken; 0 names no consumer: the send fails at the peer as an unknown id (NOT_FOUND)
    # instead of going, unnoticed by C, to the consumer set before.
    t.consumer_id = cid


@serves("doca_comch_producer_task_send_get_imm_data")
def _send_imm(p: int | None) -> int | None:
    t = _send_task(p)
    return _imm_ptr(t, t.imm)


@serves("doca_comch_producer_task_send_get_imm_data_len")
def _send_imm_len(p: int | None) -> int:
    return len(_send_task(p).imm)


@serves("doca_comch_producer_task_send_set_imm_data")
def _send_set_imm(p: int | None, data: int | None, n: int) -> None:
    _void("doca_comch_producer_task_send_set_imm_data", lambda: _send_task(p).set_imm_data(_read_imm(data, n)))
