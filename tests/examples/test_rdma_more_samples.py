"""The ports of doca-samples 3.3.0's ``rdma_multi_conn_send`` / ``_receive`` and ``rdma_write_immediate_requester``
/ ``_responder`` run as processes, the receiving side first (the other side starts once it printed its
readiness line), as ``test_examples.py`` runs the other RDMA samples, with its fixtures and helpers.

The assertions check what arrived: one message per connection, each on its own connection of the
receiver's ctx (the ids the receive tasks report, against those the receiver made), and the written text
with its immediate value in the responder's memory.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .test_examples import (EXAMPLES, ROOT, TIMEOUT, Sample, _cm_server, _peer_output_on_failure, _rdma_paths,
                            env, run, samples)  # noqa: F401 (env: the fixture the tests take)

pytestmark = pytest.mark.multiprocess

GOT = re.compile(r'Got from sender: "(.*)", rdma_connection id \[(\d+)\]')
MADE = re.compile(r"RDMA connection \[(\d+)\] is established \(rdma_connection id (\d+)\)")
SENT = re.compile(r'Submitting RDMA send task \[(\d+)\] that sends "(.*)" to receiver, '
                  r"sender's rdma_connection id \[(\d+)\]")


def _received(out: str) -> list[tuple[str, int]]:
    """(text, connection id) of every message the multi-connection receiver printed."""
    return [(m.group(1), int(m.group(2))) for m in GOT.finditer(out)]


# -- rdma_multi_conn_send / rdma_multi_conn_receive ---------------------------------------------------
def test_rdma_multi_conn_send_receive(env: dict[str, str], tmp_path: Path) -> None:
    recv_args, send_args = _rdma_paths(tmp_path, with_mmap=False)
    with samples() as started:
        receiver = run(started, env, "rdma_multi_conn_receive.py", "-nc", "3", *recv_args)
        receiver.wait_for_line("You can now copy")
        sender = run(started, env, "rdma_multi_conn_send.py", "-nc", "3", *send_args, "-s", "sent on every connection",
                     stdin=True)
        # The C sample's "press enter after all the receive tasks have been submitted in the receiver side"
        with _peer_output_on_failure(sender):
            receiver.wait_for_line("All RDMA receive tasks have been successfully submitted")
        sender.send_enter()
        with _peer_output_on_failure(receiver):
            out = sender.finish()
        recv_out = receiver.finish()
    sends = [(int(m.group(1)), m.group(2), int(m.group(3))) for m in SENT.finditer(out)]
    assert [(i, text) for i, text, _ in sends] == [(i, "sent on every connection") for i in range(3)], out
    assert len({conn for _, _, conn in sends}) == 3, out  # three connections of one ctx
    assert out.count("RDMA send task was done successfully") == 3, out
    # The receiver made three connections one by one through the per-connection files, and each of them
    # delivered one message (a receive is not bound to a connection: the completion says which it came on).
    made = {int(m.group(2)) for m in MADE.finditer(recv_out)}
    assert len(made) == 3, recv_out
    got = _received(recv_out)
    assert sorted(conn for _, conn in got) == sorted(made), recv_out
    assert {text for text, _ in got} == {"sent on every connection"}, recv_out
    assert not list(tmp_path.iterdir())  # both sides delete their descriptor files, the per-connection ones too


@pytest.mark.parametrize("script", ["rdma_multi_conn_send.py", "rdma_multi_conn_receive.py"])
def test_rdma_multi_conn_refuses_more_connections_than_the_c_sample(env: dict[str, str], script: str) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), "-nc", "9"], cwd=ROOT, env=env, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr  # the usage error, before any DOCA call
    assert "max number of connections must be <= [8]" in proc.stderr


def test_rdma_cm_multi_conn_receiver_serves_several_senders(env: dict[str, str]) -> None:
    """The receiver listens for two connections (``-nc 2``); each sender is a client with one (the C samples'
    RDMA-CM client supports one) and sends its own string: each arrives once, on its own connection. The
    receiver posts its receives once both connections are established; the senders send on enter after that
    (a send waiting for a receive would depend on the emulator's RNR window: docs/rdma.md)."""
    with samples() as started:
        receiver, client = _cm_server(started, env, "rdma_multi_conn_receive.py", "-nc", "2")
        senders = [run(started, env, "rdma_multi_conn_send.py", *client, "-s", f"from sender {i}", stdin=True)
                   for i in range(2)]
        with _peer_output_on_failure(senders[0]), _peer_output_on_failure(senders[1]):
            receiver.wait_for_line("All RDMA receive tasks have been successfully submitted")
        for s in senders:
            s.send_enter()
        with _peer_output_on_failure(receiver):
            for s in senders:
                assert "RDMA send task was done successfully" in s.finish()
        out = receiver.finish()
    got = _received(out)
    assert sorted(text for text, _ in got) == ["from sender 0", "from sender 1"], out
    assert len({conn for _, conn in got}) == 2, out


def test_rdma_cm_multi_conn_sender_serves_several_receivers(env: dict[str, str]) -> None:
    """The sender listens for two connections and, once both receivers have posted their receive (enter),
    sends on each: every receiver gets the string."""
    with samples() as started:
        sender, client = _cm_server(started, env, "rdma_multi_conn_send.py", "-nc", "2", "-s", "from the server",
                                    stdin=True)
        receivers = [run(started, env, "rdma_multi_conn_receive.py", *client) for _ in range(2)]
        with _peer_output_on_failure(sender):
            for r in receivers:
                r.wait_for_line("All RDMA receive tasks have been successfully submitted")
        sender.send_enter()
        with _peer_output_on_failure(receivers[0]), _peer_output_on_failure(receivers[1]):
            out = sender.finish()
        outs = [r.finish() for r in receivers]
    assert len({int(m.group(3)) for m in SENT.finditer(out)}) == 2, out
    assert out.count("RDMA send task was done successfully") == 2, out
    for r_out in outs:
        assert [text for text, _ in _received(r_out)] == ["from the server"], r_out


# -- rdma_write_immediate_requester / rdma_write_immediate_responder --------------------------------
def _check_write_immediate(requester: Sample, responder: Sample, text: str) -> None:
    with _peer_output_on_failure(responder):
        out = requester.finish()
    assert f'Written to responder "{text}" with immediate value 43981' in out  # 0xABCD
    # The responder's receive completed with the immediate; the text is what the write left in its memory.
    assert f'Requester has written: "{text}" with immediate data: 43981' in responder.finish()


def test_rdma_write_immediate(env: dict[str, str], tmp_path: Path) -> None:
    resp_args, req_args = _rdma_paths(tmp_path, with_mmap=True)
    with samples() as started:
        responder = run(started, env, "rdma_write_immediate_responder.py", *resp_args)
        responder.wait_for_line("You can now copy")
        requester = run(started, env, "rdma_write_immediate_requester.py", *req_args, "-w", "written with immediate")
        _check_write_immediate(requester, responder, "written with immediate")
    assert not list(tmp_path.iterdir())  # both sides delete the descriptor files


@pytest.mark.parametrize("server", ["responder", "requester"])
def test_rdma_cm_write_immediate(env: dict[str, str], server: str) -> None:
    """Over RDMA-CM the responder sends its mmap's export over the connection; either side may listen."""
    with samples() as started:
        if server == "responder":
            responder, client = _cm_server(started, env, "rdma_write_immediate_responder.py")
            requester = run(started, env, "rdma_write_immediate_requester.py", *client, "-w", "written over RDMA-CM")
        else:
            requester, client = _cm_server(started, env, "rdma_write_immediate_requester.py", "-w",
                                           "written over RDMA-CM")
            responder = run(started, env, "rdma_write_immediate_responder.py", *client)
        _check_write_immediate(requester, responder, "written over RDMA-CM")
