"""``samples/doca_rdma/rdma_receive`` (DOCA 3.0) written with asyncio (:mod:`doca_py.aio`).

The same receive as ``rdma_receive.py``, without a progress loop or a state machine in
callbacks: the event loop drives the progress engine and the sample awaits each step. Its
peer is ``aio_rdma_send.py`` (or ``rdma_send.py``); start the receiver first::

    python examples/aio_rdma_receive.py -d mlx5_0 -ld /tmp/recv.desc -re /tmp/send.desc
    python examples/aio_rdma_send.py -d mlx5_0 -ld /tmp/send.desc -re /tmp/recv.desc -s "Hi DOCA RDMA!"
    # the receiver prints 'Got from sender: "Hi DOCA RDMA!"'

``allocate_rdma_resources`` → ``doca_rdma_task_receive_set_conf`` → connection callbacks →
inventory → ``aio.attach(pe)`` → ``start()``; ``await started()`` → export, descriptor
exchange, ``connect`` → ``await runner.until(established)`` → ``task.submit(); await task``
→ the message → ``stop()``; ``await stopped()`` → cleanup.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import doca_py as d
from doca_py import aio
from doca_py.rdma import Rdma, RdmaTaskReceive

from _common import error_of, run_sample, setup_logging
from _rdma_common import (INVENTORY_NUM_INITIAL_ELEMENTS, NUM_RDMA_TASKS, RdmaConfig, aio_start_and_connect, aio_stop,
                          allocate_rdma_resources, config_from_args, destroy_rdma_resources, get_string,
                          register_rdma_common_params, set_aio_connection_callbacks)

log = setup_logging("RDMA_RECEIVE_AIO")

MAX_BUFF_SIZE = 256  # maximum DOCA buffer size
TIMEOUT = 10.0  # seconds, for each wait


def rdma_receive_completed_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    log.info("RDMA receive task was done Successfully")


def rdma_receive_error_callback(task: RdmaTaskReceive, task_user_data: Any, ctx_user_data: Any) -> None:
    log.error("RDMA receive task failed: %s", task.get_status().c_name)


async def rdma_receive(cfg: RdmaConfig) -> d.ErrorCode:
    mmap_permissions = d.AccessFlag.LOCAL_READ_WRITE
    rdma_permissions = d.AccessFlag.LOCAL_READ_WRITE
    resources = allocate_rdma_resources(cfg, mmap_permissions, rdma_permissions,
                                        Rdma.cap_task_receive_is_supported, log)
    rdma = resources.rdma
    try:
        rdma.task_receive_set_conf(rdma_receive_completed_callback, rdma_receive_error_callback, NUM_RDMA_TASKS)
        set_aio_connection_callbacks(rdma)
        rdma.user_data = resources  # doca_ctx_set_user_data
        inventory = resources.buf_inventory = d.BufInventory(INVENTORY_NUM_INITIAL_ELEMENTS)
        async with aio.attach(resources.pe) as runner:  # the loop progresses the PE from now on
            await aio_start_and_connect(resources, runner, "sender", TIMEOUT)

            local_range, _ = resources.mmap.get_memrange()
            dst_buf = inventory.buf_get_by_addr(resources.mmap, local_range, MAX_BUFF_SIZE)
            task = rdma.task_receive_allocate_init(dst_buf)
            log.info("Submitting RDMA receive task")
            try:
                task.submit()
                await task
                # The received bytes are the destination's data now.
                text = get_string(bytes(dst_buf.data_view()), MAX_BUFF_SIZE)
                if text is None:
                    log.error("The message that was received from sender exceeds buffer size %d", MAX_BUFF_SIZE)
                    result = d.ErrorCode.INVALID_VALUE
                else:
                    log.info('Got from sender: "%s"', text)
                    result = d.ErrorCode.SUCCESS
            except d.DocaError as exc:
                result = error_of(exc)
            finally:
                task.free()
                dst_buf.dec_refcount()

            await aio_stop(resources, TIMEOUT)
        return result
    finally:
        if resources.buf_inventory is not None:
            resources.buf_inventory.close()
        destroy_rdma_resources(resources, cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="DOCA RDMA receive with asyncio (doca_py.aio)")
    register_rdma_common_params(parser)
    cfg = config_from_args(parser.parse_args(argv))
    return run_sample(log, lambda: asyncio.run(rdma_receive(cfg)))


if __name__ == "__main__":
    sys.exit(main())
