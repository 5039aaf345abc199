"""The same-host shared-memory ring (doca_py.emulated.transport.shmring) on its own: order, wrap-around,
status read-back, hostile content, hand-over between processes and the doorbell of a sleeping peer."""

from __future__ import annotations

import fcntl
import os
import select
import socket
import struct
import subprocess
import sys
import textwrap

import pytest

from doca_py.emulated.transport import shmring as sr

K_MSG = 1
OK = frozenset({0, 7})


def _pair(size: int = 4096) -> tuple[sr.Ring, sr.Producer, sr.Consumer]:
    ring = sr.Ring.create(size)
    return ring, sr.Producer(ring), sr.Consumer(ring, frozenset({K_MSG}))


def _drain(c: sr.Consumer, status: int = 0) -> list[tuple[int, int, bytes]]:
    got = []
    while (rec := c.peek()) is not None:
        kind, flags, length, a, b, payload = rec
        got.append((a, b, bytes(payload)))
        c.done(status)
    c.publish()
    return got


def test_records_arrive_in_order_and_statuses_come_back_in_order() -> None:
    ring, p, c = _pair()
    for i in range(20):
        p.put(K_MSG, 0, i, i * 2, [bytes([i]) * (i % 7)], i % 7, tag=f"t{i}")
    assert c.peek() is None  # nothing published yet
    p.publish()
    got = _drain(c, 7)
    assert got == [(i, i * 2, bytes([i]) * (i % 7)) for i in range(20)]
    assert p.reap(OK) == [(f"t{i}", 7) for i in range(20)]
    assert p.free() == ring.size
    ring.close()


def test_wrap_around_pads_and_never_splits_a_record() -> None:
    ring, p, c = _pair(4096)
    sent = received = 0
    reaped: list[object] = []
    payload = (bytes(range(256)) * 4)[:1000]  # 1008-byte records with the header: they straddle the end
    for _round in range(40):  # many times round the ring
        while p.room(len(payload)):
            p.put(K_MSG, 0, sent, 0, [memoryview(payload)], len(payload), tag=sent)
            sent += 1
        p.publish()
        for a, _b, data in _drain(c):
            assert a == received and data == payload
            received += 1
        reaped += [t for t, _ in p.reap(OK)]
    assert received == sent and sent > 40 * 3 and reaped == list(range(sent))
    ring.close()


def test_the_producer_reuses_space_only_after_reading_the_statuses() -> None:
    ring, p, c = _pair(4096)
    n = 0
    while p.room(100):
        p.put(K_MSG, 0, n, 0, [bytes(100)], 100, tag=n)
        n += 1
    p.publish()
    assert not p.room(100)
    _drain(c)  # consumed and published, but the producer has not looked yet
    assert not p.room(100)
    assert len(p.reap(OK)) == n
    assert p.room(100)
    ring.close()


def test_put_one_writes_what_put_writes_and_refuses_what_does_not_fit() -> None:
    ring, p, c = _pair(4096)
    sent = 0
    for _round in range(12):  # many times round the ring: pads, and records that just fit
        while True:
            n = (sent * 37) % 700
            data = bytes([sent & 0xFF]) * n
            pos = p.pos
            if sent % 3:
                if not p.put_one(K_MSG, 2, sent, n, memoryview(data), n, tag=sent):
                    assert p.pos == pos and not p.room(n)  # nothing written
                    break
            elif p.room(n):
                p.put(K_MSG, 2, sent, n, [data], n, tag=sent)
            else:
                break
            sent += 1
        p.publish()
        got = _drain(c, 7)
        assert all(b == len(d) and d == bytes([a & 0xFF]) * b for a, b, d in got)
        assert [t for t, st in p.reap(OK) if st == 7] == [a for a, _b, _d in got]
    assert sent > 12 * 5 and p.free() == ring.size
    assert p.put_one(K_MSG, 0, 1, 0, b"", 0, tag="empty")
    p.publish()
    assert _drain(c) == [(1, 0, b"")] and p.reap(OK) == [("empty", 0)]
    ring.close()


def test_read_stops_at_the_head_it_was_given() -> None:
    """One index read per batch: what is published after :meth:`Consumer.head` waits for the next."""
    ring, p, c = _pair()
    for i in range(2):
        p.put(K_MSG, 3, i, 0, [b"ab"], 2, tag=i)
    p.publish()
    head = c.head()
    p.put(K_MSG, 3, 2, 0, [b"cd"], 2, tag=2)
    p.publish()
    for i in range(2):
        assert c.read(head) == (K_MSG, 3, 2, i, 0)
        c.done(0)
    assert c.read(head) is None
    assert c.read(c.head()) == (K_MSG, 3, 2, 2, 0)
    c.done(0)
    c.publish()
    assert p.reap(OK) == [(0, 0), (1, 0), (2, 0)]
    ring.close()


def _malform(ring: sr.Ring, off: int, fmt: str, *values: int) -> None:
    struct.pack_into(fmt, ring.mm, off, *values)


@pytest.mark.parametrize("damage", ["head_far_ahead", "head_behind", "length_too_big", "length_past_head",
                                    "unknown_kind", "pad_past_head"])
def test_malformed_content_from_the_producer_is_a_clear_error(damage: str) -> None:
    ring, p, c = _pair(4096)
    p.put(K_MSG, 0, 1, 2, [b"abcd"], 4, tag=None)
    p.publish()
    head = ring.head.value
    if damage == "head_far_ahead":
        ring.head.value = head + ring.size + 16
    elif damage == "head_behind":
        ring.head.value = (1 << 64) - 16
    elif damage == "length_too_big":
        _malform(ring, sr.DATA, "<I", 0xFFFFFFF0)
    elif damage == "length_past_head":
        _malform(ring, sr.DATA, "<I", 64)
    elif damage == "unknown_kind":
        _malform(ring, sr.DATA + 4, "<B", 99)
    else:
        _malform(ring, sr.DATA + 4, "<B", sr.K_PAD)  # a pad at 0 covers the whole ring, past the head
    with pytest.raises(sr.RingError):
        c.peek()
    ring.close()


@pytest.mark.parametrize("damage", ["tail_ahead", "tail_behind", "tail_inside_record", "bad_status"])
def test_malformed_content_from_the_consumer_is_a_clear_error(damage: str) -> None:
    ring, p, c = _pair(4096)
    for i in range(3):
        p.put(K_MSG, 0, i, 0, [bytes(32)], 32, tag=i)
    p.publish()
    if damage == "bad_status":
        _drain(c, 1234)
    else:
        _drain(c)
        ring.tail.value = {"tail_ahead": ring.head.value + 16, "tail_behind": 0xFFFF_FFFF_FFFF,
                           "tail_inside_record": 16}[damage]
    with pytest.raises(sr.RingError):
        p.reap(OK)
    ring.close()


def _sealed_memfd(name: str, size: int) -> int:
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def test_attach_refuses_what_is_not_a_ring() -> None:
    with pytest.raises(sr.RingError, match="malformed"):
        sr.Ring.attach(_sealed_memfd("not-a-ring", sr.DATA + 4096))  # zero magic
    with pytest.raises(sr.RingError, match="too small"):
        sr.Ring.attach(_sealed_memfd("tiny", 0))
    # A real ring whose size the peer could still change (shrunk under our mapping: SIGBUS).
    unsealed = sr.Ring.create(4096, sealed=False)
    try:
        with pytest.raises(sr.RingError, match="not sealed"):
            sr.Ring.attach(os.dup(unsealed.fd))
    finally:
        unsealed.close()


def test_a_handshake_must_carry_exactly_a_ring_and_a_doorbell() -> None:
    ring = sr.Ring.create(4096)
    bell = os.eventfd(0)  # blocking, as a careless (or hostile) peer may send it
    got, got_bell = sr.attach_with_bell([os.dup(ring.fd), bell])
    assert got.size == 4096 and got_bell == bell and not os.get_blocking(bell)
    got.close()
    os.close(bell)
    for fds in ([os.dup(ring.fd)], [os.dup(ring.fd), os.eventfd(0), os.eventfd(0)]):
        with pytest.raises(sr.RingError, match="descriptors, expected 2"):
            sr.attach_with_bell(fds)
        for fd in fds:  # taken over: closed on refusal
            with pytest.raises(OSError):
                os.fstat(fd)
    other = os.eventfd(0)
    with pytest.raises(sr.RingError):
        sr.attach_with_bell([os.eventfd(0), other])  # not a ring
    with pytest.raises(OSError):
        os.fstat(other)
    ring.close()


_CHILD = textwrap.dedent("""
    import os, select, socket, sys
    from doca_py.emulated.transport import shmring as sr
    sock = socket.socket(fileno=int(sys.argv[1]))
    _, fds = sr.recv_fds(sock, 16, 2)
    ring_fd, bell = fds  # the consumer's ring and its eventfd
    ring = sr.Ring.attach(ring_fd)
    p = sr.Producer(ring)
    sock.recv(1)  # the consumer says it sleeps
    for i in range(3):
        p.put(1, 0, i, 0, [b"x" * i], i, tag=i)
    p.publish()
    sr.fence()
    if ring.csleep.value:
        sr.ring_doorbell(bell)
    sock.recv(1)  # wait until the parent has read them, then die with messages queued
    for i in range(5):
        p.put(1, 0, 100 + i, 0, [b"q"], 1, tag=i)
    p.publish()
    os._exit(0)
""")


def test_a_ring_handed_to_another_process_wakes_a_sleeping_consumer_and_survives_its_death() -> None:
    ring, _p, c = _pair(1 << 16)
    bell = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    a, b = socket.socketpair()
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(b.fileno())], pass_fds=[b.fileno()])
    b.close()
    try:
        sr.send_fds(a, b"ring", [ring.fd, bell])
        # Sleep as a Pe does: announce it, check once more, then block on the doorbell alone.
        ring.csleep.value = 1
        sr.fence()
        assert not c.pending()
        a.send(b"s")
        r, _, _ = select.select([bell], [], [], 30)
        assert r == [bell], "the producer did not ring the doorbell of a sleeping consumer"
        os.eventfd_read(bell)
        ring.csleep.value = 0
        assert _drain(c) == [(0, 0, b""), (1, 0, b"x"), (2, 0, b"xx")]
        a.send(b"d")
        assert child.wait(30) == 0
        # The producer is gone; what it published stays readable in our mapping, in order.
        assert [x[0] for x in _drain(c)] == [100, 101, 102, 103, 104]
    finally:
        child.kill()
        child.wait()
        a.close()
        os.close(bell)
        ring.close()


# -- no export of the mapping; barriers on weakly ordered CPUs ---------------------------------------


def test_close_unmaps_while_a_field_object_is_still_referenced() -> None:
    # On a free-threaded build an object another thread made is freed late: a field still alive at
    # close() must not hold an export of the mapping (from_buffer did: BufferError).
    ring, p, c = _pair()
    kept = (ring.head, ring.tail, ring.csleep, ring.psleep, ring.beat)
    p.put_one(K_MSG, 0, 1, 2, b"abc", 3, "t")
    p.publish()
    assert _drain(c) == [(1, 2, b"abc")]
    ring.close()
    assert ring.mm.closed and kept
    with pytest.raises(ValueError):  # our own views are released: a late use raises, never reads unmapped memory
        ring.data[0]


def test_fields_are_the_mapping_bytes() -> None:
    ring, p, _c = _pair()
    p.put_one(K_MSG, 0, 1, 2, b"xyz", 3, "t")
    p.publish()
    ring.csleep.value = 1
    assert struct.unpack_from("<Q", ring.mm, 64) == (p.pos,)
    assert struct.unpack_from("<I", ring.mm, 192) == (1,)
    assert bytes(ring.mm[sr.DATA + sr.REC_HDR.size:sr.DATA + sr.REC_HDR.size + 3]) == b"xyz"
    ring.close()


@pytest.mark.parametrize("machine", ["x86_64", "AMD64", "i686"])
def test_x86_needs_no_barrier_but_the_fence(machine: str) -> None:
    def load(_name: str) -> object:
        raise AssertionError("x86 loads no library")
    weak, barrier, why = sr.memory_order(machine, load)  # type: ignore[arg-type]
    assert (weak, why) == (False, "") and barrier is not None
    barrier()


@pytest.mark.parametrize("machine", ["aarch64", "arm64", "ppc64le", "riscv64"])
def test_other_cpus_get_libatomic_s_full_barrier(machine: str) -> None:
    weak, barrier, why = sr.memory_order(machine)
    assert weak and why == "" and barrier is not None
    barrier()  # atomic_thread_fence(__ATOMIC_SEQ_CST) from libatomic.so.1 (mfence here)


def test_without_libatomic_rings_are_refused_with_a_reason() -> None:
    def load(name: str) -> object:
        raise OSError(f"{name}: cannot open shared object file")
    weak, barrier, why = sr.memory_order("aarch64", load)  # type: ignore[arg-type]
    assert weak and barrier is None
    assert "aarch64" in why and "libatomic.so.1" in why


def test_a_weakly_ordered_cpu_fences_every_publication_point(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(sr, "WEAK_ORDER", True)
    monkeypatch.setattr(sr, "_full", lambda: calls.append("fence"))
    ring, p, c = _pair()
    p.put_one(K_MSG, 0, 1, 2, b"abc", 3, "t")
    p.publish()
    assert calls == ["fence"]  # record bytes -> head
    head = c.head()
    assert len(calls) == 2  # head -> records
    assert c.read(head) is not None
    c.done(0)
    c.publish()
    assert len(calls) == 3  # statuses and payload reads -> tail
    assert p.reap(OK) == [("t", 0)]
    assert len(calls) == 4  # tail -> statuses
    sr.fence()
    assert len(calls) == 5  # the sleeping-flag handshakes
    ring.close()


def test_unusable_rings_keep_the_connections_on_their_sockets(monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from doca_py.emulated.comch import config as comch_config
    monkeypatch.setattr(sr, "UNAVAILABLE", "same-host rings need a full memory barrier on testcpu")
    monkeypatch.setattr(sr, "_warned", False)
    monkeypatch.setattr(comch_config, "_shm", True)
    with caplog.at_level("WARNING", logger="doca_py"):
        assert not sr.usable()
        assert not comch_config.shm_enabled()
    assert [r.getMessage() for r in caplog.records].count("same-host rings need a full memory barrier on testcpu") == 1
    monkeypatch.setattr(sr, "UNAVAILABLE", "")
    assert comch_config.shm_enabled()
