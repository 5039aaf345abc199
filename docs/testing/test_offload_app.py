"""Tests of offload_app with the doca_py test kit: each side in its own
process, with its own emulated device."""

from __future__ import annotations

import os
import zlib

import pytest

import offload_app


def host(side):
    side.recv(timeout=30)  # the DPU's server is listening
    return offload_app.run_host(side.dev, f"offload-{side.token}", side.args)


def dpu(side):
    return offload_app.run_dpu(side.dev, side.rep, f"offload-{side.token}",
                               on_ready=lambda: side.send("ready"))


@pytest.mark.doca_versions("2.6", "3.2")
def test_the_dpu_copies_the_hosts_buffer_and_answers_its_crc(doca_pair):
    data = os.urandom(100_000)
    crc, copied = doca_pair.run(host, dpu, timeout=60, args=data)
    assert copied == data
    assert crc == zlib.crc32(data)


@pytest.mark.doca_faults("dma_memcpy=1")
def test_a_failed_copy_reaches_the_host_as_an_error(doca_pair):
    expected = "host side raised RuntimeError: the DPU could not copy"
    with pytest.raises(Exception, match=expected) as failure:
        doca_pair.run(host, dpu, args=b"lost in transit")
    assert "the DPU could not copy the buffer: IO_FAILED" in str(failure.value)
