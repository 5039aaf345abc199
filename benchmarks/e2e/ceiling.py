"""The anchor of the data-path benchmarks: a hand-written five-process pipeline, no doca_py.

    .venv/bin/python benchmarks/e2e/ceiling.py                                   # 4 KiB reads, all on cpu 0
    .venv/bin/python benchmarks/e2e/ceiling.py --block-size 65536 --layout bridge-own-core
    .venv/bin/python benchmarks/e2e/ceiling.py --operations 2000 --json          # one JSON object on stdout

It does, per IO, exactly what the storage topology does for a GGA-offload READ of one block
(storage-apps-spec §4, §5.2, §6.2, §8.2, §8.3), in plain Python over Unix-domain sockets:

1. the initiator sends one 64-byte io message (``read``, ``user_data`` = transaction index,
   ``io_size`` = B, ``requester_offset`` = a block of its IO region, ``storage_offset``) to the bridge;
2. the bridge keeps it in transaction slot *j* (``2·in-flight`` slots, one ``2.5·B`` chunk of its
   staging memory each) and sends one 64-byte ``read`` to data_1 and one to data_2 (``io_size`` = H =
   B/2, ``requester_offset`` = chunk + 0 / chunk + H, ``storage_offset`` = block × H);
3. each target copies its stored half of the compressed block from its own storage memory into the
   bridge's staging memory (the RDMA write: a memcpy into shared memory) and answers with the request
   turned into its response (``type`` 0, ``result`` 0), as the real target does;
4. when both halves are in, the bridge checks the compressed-block header (8 bytes, big endian:
   original size, compressed size C), LZ4-decodes the C-byte DOCA LZ4 stream (LZ4-frame data blocks
   without frame header and end mark) through liblz4's ``LZ4_decompress_safe`` (ctypes) straight into
   the initiator's shared IO region, and answers the initiator with its message (``type`` 0, ``result`` 0);
5. the initiator matches the response by ``user_data``, checks it, starts the next IO of that
   transaction (``--in-flight`` transactions, 64 by default) and, every ``--verify-every``-th IO,
   compares the decompressed block with the plain data (the block is zeroed before that IO).

data_p, the parity target, is started too and stays idle, as in a plain read of the topology.

The stored data is built as ``apps.sbc_generator`` builds it: ``apps.topology.make_sample`` text, one
compressed block per B bytes (liblz4 frame API, level 1, 64 KiB independent blocks, no checksums, frame
header and end mark dropped), data_1 holding the first halves and data_2 the second halves. So the LZ4
work per IO is the real run's.

Transport: one ``socketpair`` per link (initiator–bridge, bridge–data_1/data_2/data_p), made by the
parent and inherited across ``fork``; messages are 64-byte records on a stream socket, every wake-up
drains everything readable with one ``recv_into`` and answers with one ``send`` per peer. A process
with one peer sleeps in its blocking ``recv`` (the kernel's wait, as ``select`` would); the bridge sleeps
in ``select.poll`` on its four sockets. No process spins. Memory: the bridge's staging region and the
initiator's IO region are anonymous shared ``mmap``s made by the parent; each target's storage is a
private copy in the target.

CPU: utime + stime of every process from ``/proc/<pid>/stat``, sampled by the parent when every process
is in its loop (before the initiator's first request) and when the initiator reports (after its last
response), as ``run.py`` does for the topology.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import importlib.util
import json
import mmap
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import lz4.frame

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from apps.topology import make_sample  # noqa: E402  (plain Python, imports no doca_py)

# -- the io message (storage-apps-spec §4.1; the same struct format as apps/storage/wire/io_message.py) ----------
# type, pad, user_data, result, io_size, requester_offset, storage_offset, pad -- all big endian
MSG = struct.Struct(">I4xQIIQQ24x")
MSG_SIZE = 64
assert MSG.size == MSG_SIZE
RESPONSE_HEAD = struct.Struct(">I4xQI")   # type, user_data, result: what a response is read for
U32 = struct.Struct(">I")
TYPE_OFFSET = 0
RESULT_OFFSET = 16
RESULT, READ = 0, 1
SUCCESS, INVALID_VALUE, NOT_SUPPORTED, IO_FAILED = 0, 6, 7, 15   # doca_error_t values used here

# -- the compressed block (§6.2) and the DOCA LZ4 stream (§6.3) ----------------------------------------------
HEADER = struct.Struct(">II")   # original_size, compressed_size
HEADER_SIZE = 8
OVERHEAD = 12                   # header + zero trailer
LE32 = struct.Struct("<I")
STORED_FLAG = 0x80000000

PROCS = ("data_1", "data_2", "data_p", "bridge", "initiator")
TARGETS = ("data_1", "data_2", "data_p")
LAYOUTS: dict[str, dict[str, int]] = {
    "one-core": {p: 0 for p in PROCS},
    "bridge-own-core": {**{p: 0 for p in PROCS}, "bridge": 1},
}
_TICK = os.sysconf("SC_CLK_TCK")
GIB = 1 << 30
MAX_IN_FLIGHT = 4096


# ----------------------------------------------------------------------------------------------- data


def lz4_stream(plain: bytes) -> bytes:
    """The DOCA LZ4 stream of *plain*: liblz4 frame (level 1, 64 KiB independent blocks, no checksums,
    no content size) without its 7-byte header and 4-byte end mark (storage-apps-spec §6.3)."""
    frame = lz4.frame.compress(plain, compression_level=1, block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                               content_checksum=False, block_checksum=False, block_linked=False,
                               store_size=False)
    flg = frame[4]
    if flg & 0x0D or frame[-4:] != b"\0\0\0\0":   # content size, block/content checksum: none asked for
        raise RuntimeError(f"unexpected LZ4 frame descriptor {flg:#x}")
    return frame[7:-4]


def compressed_block(plain: bytes) -> bytes:
    """The B-byte compressed block of one plain block of B bytes (§6.2)."""
    b = len(plain)
    stream = lz4_stream(plain)
    c = len(stream)
    if c + OVERHEAD > b:
        raise ValueError(f"block not compressible enough: {c} + {OVERHEAD} > {b}")
    out = bytearray(b)
    HEADER.pack_into(out, 0, b, c)
    out[HEADER_SIZE:HEADER_SIZE + c] = stream
    return bytes(out)


@dataclass(frozen=True)
class Stored:
    """The plain sample and what each target stores."""

    plain: bytes
    storage: dict[str, bytes]    # data_1, data_2, data_p: H bytes per block


def build_storage(block_size: int, block_count: int) -> Stored:
    plain = make_sample(block_size * block_count)
    h = block_size // 2
    halves: dict[str, list[bytes]] = {t: [] for t in TARGETS}
    for k in range(block_count):
        cb = compressed_block(plain[k * block_size:(k + 1) * block_size])
        d1, d2 = cb[:h], cb[h:]
        halves["data_1"].append(d1)
        halves["data_2"].append(d2)
        # parity of a 2+1 Vandermonde code is the XOR of the halves (§6.4); data_p stays idle in a read
        halves["data_p"].append((int.from_bytes(d1, "little") ^ int.from_bytes(d2, "little")).to_bytes(h, "little"))
    return Stored(plain, {t: b"".join(v) for t, v in halves.items()})


# ------------------------------------------------------------------------------------------------ liblz4


def lz4_decompress_safe() -> Callable[[int, int, int, int], int]:
    """``LZ4_decompress_safe(src, dst, compressed_size, dst_capacity)`` through ctypes: from python-lz4's
    extension (it links liblz4 statically and exports it), else the system liblz4."""
    paths: list[str] = []
    spec = importlib.util.find_spec("lz4.block._block")
    if spec is not None and spec.origin:
        paths.append(spec.origin)
    system = ctypes.util.find_library("lz4")
    if system:
        paths.append(system)
    for path in paths:
        try:
            fn = ctypes.CDLL(path).LZ4_decompress_safe
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn
    raise RuntimeError("no LZ4_decompress_safe: neither python-lz4's extension nor a system liblz4 has it")


def address_of(buf: mmap.mmap) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


# ------------------------------------------------------------------------------------------------ processes


@dataclass(frozen=True)
class Config:
    block_size: int
    block_count: int
    in_flight: int
    operations: int
    verify_every: int

    @property
    def half(self) -> int:
        return self.block_size // 2

    @property
    def slots(self) -> int:
        """Bridge transactions: ``N = 2·T`` (§5.2)."""
        return 2 * self.in_flight

    @property
    def chunk(self) -> int:
        """Bridge staging bytes per transaction: ``2.5·B`` (write flow compiled, §5.2)."""
        return self.block_size * 5 // 2

    @property
    def recv_bytes(self) -> int:
        """Receive buffer: room for every message that can be outstanding on a link, twice."""
        return MSG_SIZE * max(256, 2 * self.slots)


def run_target(sock: socket.socket, storage: bytes, stage: mmap.mmap, cfg: Config, ready: int) -> None:
    """A storage target: a read is an RDMA write of ``io_size`` bytes from ``storage + storage_offset``
    to ``bridge staging + requester_offset``; the response is the request mutated in place (§4.3)."""
    own = bytearray(storage)             # the target's own storage memory
    src = memoryview(own)
    dst = memoryview(stage)
    buf = bytearray(cfg.recv_bytes)
    mv = memoryview(buf)
    unpack = MSG.unpack_from
    put32 = U32.pack_into
    recv_into = sock.recv_into
    send = sock.sendall
    have = 0
    os.write(ready, b"t")
    while True:
        n = recv_into(mv[have:])
        if n == 0:
            return
        have += n
        end = have - have % MSG_SIZE
        for off in range(0, end, MSG_SIZE):
            t, _ud, _res, size, req, sto = unpack(buf, off)
            if t == READ:
                dst[req:req + size] = src[sto:sto + size]
                result = SUCCESS
            else:
                result = INVALID_VALUE
            put32(buf, off + TYPE_OFFSET, RESULT)
            put32(buf, off + RESULT_OFFSET, result)
        send(mv[:end])
        if end < have:
            buf[:have - end] = buf[end:have]
        have -= end


class _Link:
    """One socket of the bridge: receive buffer and pending output (never blocks on send)."""

    __slots__ = ("sock", "fd", "buf", "mv", "have", "out")

    def __init__(self, sock: socket.socket, size: int) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.buf = bytearray(size)
        self.mv = memoryview(self.buf)
        self.have = 0
        self.out = bytearray()


def run_bridge(ini: socket.socket, tsocks: dict[str, socket.socket], stage: mmap.mmap, region: mmap.mmap,
               cfg: Config, ready: int) -> None:
    """The GGA offload service's plain read (§8.2): two half-block reads, LZ4 decode into the initiator."""
    b, h, chunk = cfg.block_size, cfg.half, cfg.chunk
    safe = lz4_decompress_safe()
    stage_addr, region_addr = address_of(stage), address_of(region)
    stage_mv, region_mv = memoryview(stage), memoryview(region)
    links = {name: _Link(s, cfg.recv_bytes) for name, s in (("initiator", ini), *tsocks.items())}
    li, l1, l2 = links["initiator"], links["data_1"], links["data_2"]
    by_fd = {lk.fd: lk for lk in links.values()}
    poller = select.poll()
    for lk in links.values():
        poller.register(lk.fd, select.POLLIN)
    slots = bytearray(cfg.slots * MSG_SIZE)   # the initiator's message of each transaction
    pending = [0] * cfg.slots
    dst_of = [0] * cfg.slots                  # requester_offset of each transaction's initiator message
    free = list(range(cfg.slots - 1, -1, -1))
    msg_unpack, msg_pack, head_unpack = MSG.unpack_from, MSG.pack, RESPONSE_HEAD.unpack_from
    put32, get32, hdr_unpack, le32 = U32.pack_into, U32.unpack_from, HEADER.unpack_from, LE32.unpack_from
    os.write(ready, b"b")
    while True:
        for fd, ev in poller.poll():
            lk = by_fd[fd]
            if ev & select.POLLOUT:
                _flush(lk, poller)
            if not ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                continue
            n = lk.sock.recv_into(lk.mv[lk.have:])
            if n == 0:
                return                      # a peer is gone: the run is over
            have = lk.have + n
            end = have - have % MSG_SIZE
            buf = lk.buf
            if lk is li:
                # initiator requests: start a transaction each (check, keep the message, two reads)
                out1, out2 = l1.out, l2.out
                for off in range(0, end, MSG_SIZE):
                    t, _ud, _res, size, req, sto = msg_unpack(buf, off)
                    j = free.pop()
                    s = j * MSG_SIZE
                    slots[s:s + MSG_SIZE] = buf[off:off + MSG_SIZE]
                    if t != READ or size != b:
                        put32(slots, s + TYPE_OFFSET, RESULT)
                        put32(slots, s + RESULT_OFFSET, NOT_SUPPORTED if t != READ else INVALID_VALUE)
                        li.out += slots[s:s + MSG_SIZE]
                        free.append(j)
                        continue
                    put32(slots, s + RESULT_OFFSET, SUCCESS)
                    base = j * chunk
                    sto_h = sto // b * h
                    out1 += msg_pack(READ, j, 0, h, base, sto_h)
                    out2 += msg_pack(READ, j, 0, h, base + h, sto_h)
                    pending[j] = 2
                    dst_of[j] = req
            else:
                # target responses: the transaction goes on when both halves are in
                for off in range(0, end, MSG_SIZE):
                    _t, j, res = head_unpack(buf, off)
                    s = j * MSG_SIZE
                    if res != SUCCESS:
                        put32(slots, s + RESULT_OFFSET, res)
                    pending[j] -= 1
                    if pending[j]:
                        continue
                    base = j * chunk
                    if get32(slots, s + RESULT_OFFSET)[0] == SUCCESS:
                        _orig, csize = hdr_unpack(stage, base)
                        req = dst_of[j]
                        if csize == 0 or csize + OVERHEAD > b:
                            put32(slots, s + RESULT_OFFSET, IO_FAILED)
                        else:
                            # the DOCA LZ4 stream: size word (LE, bit 31 = stored), block, ...
                            src, stop, out = base + HEADER_SIZE, base + HEADER_SIZE + csize, 0
                            while src < stop:
                                word = le32(stage, src)[0]
                                src += 4
                                size = word & 0x7FFFFFFF
                                if word & STORED_FLAG:
                                    if size > b - out:
                                        out = -1
                                        break
                                    region_mv[req + out:req + out + size] = stage_mv[src:src + size]
                                    got = size
                                else:
                                    got = safe(stage_addr + src, region_addr + req + out, size, b - out)
                                    if got < 0:
                                        out = -1
                                        break
                                out += got
                                src += size
                            if out != b:
                                put32(slots, s + RESULT_OFFSET, IO_FAILED)
                    put32(slots, s + TYPE_OFFSET, RESULT)
                    li.out += slots[s:s + MSG_SIZE]
                    free.append(j)
            if end < have:
                buf[:have - end] = buf[end:have]
            lk.have = have - end
        for lk in links.values():
            if lk.out:
                _flush(lk, poller)


def _flush(lk: _Link, poller: select.poll) -> None:
    """Send what *lk* has pending without blocking; wait for POLLOUT if the peer's queue is full."""
    try:
        sent = lk.sock.send(lk.out, socket.MSG_DONTWAIT) if lk.out else 0
    except BlockingIOError:
        sent = 0
    del lk.out[:sent]
    poller.modify(lk.fd, select.POLLIN | select.POLLOUT if lk.out else select.POLLIN)


@dataclass
class InitiatorResult:
    operations: int
    duration_s: float
    latency_mean_us: float
    verified: int
    mismatches: int
    bad_responses: int
    first_problem: str


def run_initiator(sock: socket.socket, region: mmap.mmap, plain: bytes, cfg: Config, ready: int, go: int,
                  report: int) -> None:
    """The initiator's read throughput test: ``in_flight`` transactions, FIFO rings of local and storage
    block offsets (§5.1), one request per IO, matched by ``user_data``."""
    b, ops, t_count, every = cfg.block_size, cfg.operations, cfg.in_flight, cfg.verify_every
    local_ring = deque(range(0, cfg.block_count * b, b))
    storage_ring = deque(range(0, cfg.block_count * b, b))
    local = [0] * t_count
    storage = [0] * t_count
    verify = [False] * t_count
    active = [False] * t_count
    start_ns = [0] * t_count
    zero = bytes(b)
    buf = bytearray(cfg.recv_bytes)
    mv = memoryview(buf)
    head_unpack, msg_pack = RESPONSE_HEAD.unpack_from, MSG.pack
    take_local, take_storage = local_ring.popleft, storage_ring.popleft
    put_local, put_storage = local_ring.append, storage_ring.append
    clock = time.perf_counter_ns
    recv_into, send = sock.recv_into, sock.sendall
    started = completed = verified = mismatches = bad = 0
    fatal = False
    lat_sum = 0
    problem = ""
    os.write(ready, b"i")
    if os.read(go, 1) != b"g":
        return
    out = bytearray()
    t0 = time.perf_counter()
    for j in range(min(t_count, ops)):
        lo, so = take_local(), take_storage()
        local[j], storage[j], active[j] = lo, so, True
        if started % every == 0:
            verify[j] = True
            region[lo:lo + b] = zero
        started += 1
        start_ns[j] = clock()
        out += msg_pack(READ, j, 0, b, lo, so)
    send(out)
    have = 0
    while completed < ops:
        n = recv_into(mv[have:])
        if n == 0:
            problem = problem or "the bridge closed the connection"
            break
        have += n
        end = have - have % MSG_SIZE
        out = bytearray()
        now = clock()
        for off in range(0, end, MSG_SIZE):
            t, j, res = head_unpack(buf, off)
            if j >= t_count or not active[j] or t != RESULT:
                bad += 1
                problem = problem or f"unexpected response: type {t}, user_data {j}"
                fatal = True
                break
            if res != SUCCESS:
                bad += 1
                problem = problem or f"IO of transaction {j} failed: doca_error_t {res}"
            lat_sum += now - start_ns[j]
            lo, so = local[j], storage[j]
            if verify[j]:
                verify[j] = False
                verified += 1
                if region[lo:lo + b] != plain[so:so + b]:
                    mismatches += 1
                    problem = problem or f"block at storage offset {so} (local {lo}) differs from the plain data"
            put_local(lo)
            put_storage(so)
            completed += 1
            if started < ops:
                lo, so = take_local(), take_storage()
                local[j], storage[j] = lo, so
                if started % every == 0:
                    verify[j] = True
                    region[lo:lo + b] = zero
                started += 1
                start_ns[j] = clock()
                out += msg_pack(READ, j, 0, b, lo, so)
            else:
                active[j] = False
        if fatal:
            break
        if out:
            send(out)
        if end < have:
            buf[:have - end] = buf[end:have]
        have -= end
    duration = time.perf_counter() - t0
    res_obj = InitiatorResult(completed, duration, lat_sum / max(1, completed) / 1e3, verified, mismatches, bad,
                              problem)
    os.write(report, (json.dumps(asdict(res_obj)) + "\n").encode())
    os.read(go, 1)   # the parent has sampled the CPU times: leave (closing the socket ends the others)


# ------------------------------------------------------------------------------------------------ parent


@dataclass
class CeilingResult:
    """One measured run."""

    block_size: int
    in_flight: int
    layout: str
    pins: dict[str, int]
    operations: int
    duration_s: float
    window_s: float
    iops: float
    gibs: float
    latency_mean_us: float
    cpu_s: dict[str, float]       # user + system over the window
    sys_s: dict[str, float]
    cpu_us_per_io: dict[str, float]
    cpu_us_per_io_all: float
    machine_busy: float
    verified: int
    mismatches: int
    bad_responses: int
    problem: str

    @property
    def ok(self) -> bool:
        return (self.mismatches == 0 and self.bad_responses == 0 and not self.problem
                and self.operations > 0 and self.verified > 0)


def proc_cpu_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of every thread of *pid*, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) / _TICK, int(fields[12]) / _TICK


def machine_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


def _child(name: str, cpu: int, body: Callable[[], None]) -> int:
    """Fork a process that pins itself to *cpu* and runs *body*; its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.sched_setaffinity(0, {cpu})
        body()
    except BaseException:   # noqa: BLE001 - a child must never return into the parent's code
        sys.stderr.write(f"ceiling: {name} failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        code = 1
    os._exit(code)


def _read_line(fd: int, deadline: float) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("the initiator did not report in time")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuntimeError("the initiator exited without reporting")
        data += chunk
    return data


def run(cfg: Config, pins: dict[str, int], layout: str, timeout: float = 300.0) -> CeilingResult:
    """Start the five processes, run *cfg.operations* reads, measure; raise if a process failed."""
    stored = build_storage(cfg.block_size, cfg.block_count)
    stage = mmap.mmap(-1, cfg.slots * cfg.chunk)               # MAP_SHARED | MAP_ANONYMOUS
    region = mmap.mmap(-1, cfg.block_count * cfg.block_size)
    ini_b, ini_i = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    tpairs = {t: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for t in TARGETS}
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    rep_r, rep_w = os.pipe()
    every_sock = [ini_b, ini_i, *(s for pair in tpairs.values() for s in pair)]

    def only(*keep: socket.socket) -> None:
        """In a child: close every socket and pipe end it does not use (so EOF propagates)."""
        for s in every_sock:
            if all(s is not k for k in keep):
                s.close()
        for fd in (ready_r, go_w, rep_r):
            os.close(fd)

    pids: dict[str, int] = {}
    try:
        for t in TARGETS:
            def target_body(t: str = t) -> None:
                sock = tpairs[t][1]
                only(sock)
                os.close(go_r)
                os.close(rep_w)
                run_target(sock, stored.storage[t], stage, cfg, ready_w)
            pids[t] = _child(t, pins[t], target_body)

        def bridge_body() -> None:
            socks = {t: tpairs[t][0] for t in TARGETS}
            only(ini_b, *socks.values())
            os.close(go_r)
            os.close(rep_w)
            run_bridge(ini_b, socks, stage, region, cfg, ready_w)
        pids["bridge"] = _child("bridge", pins["bridge"], bridge_body)

        def initiator_body() -> None:
            only(ini_i)
            run_initiator(ini_i, region, stored.plain, cfg, ready_w, go_r, rep_w)
        pids["initiator"] = _child("initiator", pins["initiator"], initiator_body)
    finally:
        for s in every_sock:
            s.close()
        for fd in (ready_w, go_r, rep_w):
            os.close(fd)
    try:
        deadline = time.monotonic() + timeout
        got = b""
        while len(got) < len(PROCS):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([ready_r], [], [], left)[0]:
                raise TimeoutError("the processes did not start in time")
            chunk = os.read(ready_r, 16)
            if not chunk:
                raise RuntimeError("a process exited before it was ready")
            got += chunk
        cpu0 = {k: proc_cpu_seconds(p) for k, p in pids.items()}
        m0, w0 = machine_cpu(), time.monotonic()
        os.write(go_w, b"g")
        line = _read_line(rep_r, deadline)
        cpu1 = {k: proc_cpu_seconds(p) for k, p in pids.items()}
        m1, w1 = machine_cpu(), time.monotonic()
        os.write(go_w, b"q")
        ir = InitiatorResult(**json.loads(line))
        failed = []
        for name, pid in pids.items():
            left = max(0.1, deadline - time.monotonic())
            if _wait(pid, min(left, 30.0)) != 0:
                failed.append(name)
        pids.clear()
        if failed:
            raise RuntimeError(f"ceiling process(es) failed: {', '.join(failed)}")
    finally:
        for name, pid in pids.items():   # only on an error: end what we started
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        for fd in (ready_r, go_w, rep_r):
            os.close(fd)
    cpu = {k: sum(cpu1[k]) - sum(cpu0[k]) for k in PROCS}
    sys_s = {k: cpu1[k][1] - cpu0[k][1] for k in PROCS}
    n = max(1, ir.operations)
    per_io = {k: cpu[k] / n * 1e6 for k in PROCS}
    iops = ir.operations / ir.duration_s if ir.duration_s > 0 else 0.0
    return CeilingResult(
        cfg.block_size, cfg.in_flight, layout, dict(pins), ir.operations, ir.duration_s, w1 - w0, iops,
        iops * cfg.block_size / GIB, ir.latency_mean_us, cpu, sys_s, per_io, sum(per_io.values()),
        (m1[0] - m0[0]) / max(1, m1[1] - m0[1]), ir.verified, ir.mismatches, ir.bad_responses, ir.first_problem)


def _wait(pid: int, timeout: float) -> int:
    """Exit status of child *pid* (-1 if it did not exit within *timeout*)."""
    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= end:
            return -1
        time.sleep(0.005)


def _fmt_int(x: float) -> str:
    return f"{x:,.0f}".replace(",", " ")


def describe(r: CeilingResult) -> str:
    pins = ", ".join(f"{k}={v}" for k, v in r.pins.items())
    lines = [
        f"ceiling: hand-written 5-process pipeline (no doca_py), GGA read of {r.block_size}-byte blocks, "
        f"{r.in_flight} in flight, layout {r.layout} ({pins})",
        f"{r.operations} IOs in {r.duration_s:.3f} s: {_fmt_int(r.iops)} IO/s, {r.gibs:.3f} GiB/s, "
        f"mean latency {r.latency_mean_us:.0f} µs",
        f"verified {r.verified} IOs against the plain data: "
        + ("all equal" if r.mismatches == 0 else f"{r.mismatches} DIFFER"),
        "CPU s:         " + ", ".join(f"{k} {r.cpu_s[k]:.3f}" for k in PROCS),
        "µs CPU per IO: " + ", ".join(f"{k} {r.cpu_us_per_io[k]:.2f}" for k in PROCS)
        + f", all {r.cpu_us_per_io_all:.2f} "
        f"(in the kernel {sum(r.sys_s.values()) / max(1e-9, sum(r.cpu_s.values())):.0%}; "
        f"window {r.window_s:.3f} s, machine busy {r.machine_busy:.0%})",
    ]
    if r.bad_responses or r.problem:
        lines.append(f"PROBLEM: {r.bad_responses} bad responses; {r.problem}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchmarks/e2e/ceiling.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--block-size", type=int, default=4096, help="initiator block size B in bytes (default: 4096)")
    p.add_argument("--block-count", type=int, default=64, help="storage blocks (default: 64, as run.py)")
    p.add_argument("--in-flight", type=int, default=64, help="initiator transactions (default: 64)")
    p.add_argument("--operations", type=int, default=100_000, help="IOs to measure (default: 100000)")
    p.add_argument("--layout", choices=tuple(LAYOUTS), default="one-core",
                   help="one-core: every process on cpu 0; bridge-own-core: the bridge on cpu 1 (default: one-core)")
    p.add_argument("--pin", action="append", default=[], metavar="PROC=CPU",
                   help="pin PROC (data_1, data_2, data_p, targets, bridge, initiator) to CPU, over --layout")
    p.add_argument("--verify-every", type=int, default=256,
                   help="compare every Nth IO's block with the plain data (default: 256)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed (default: 300)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead of text")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    b = args.block_size
    if b <= 0 or b % 128:
        print("--block-size must be a positive multiple of 128 (storage-apps-spec §6.4)", file=sys.stderr)
        return 2
    if not 1 <= args.in_flight <= min(MAX_IN_FLIGHT, args.block_count):
        print(f"--in-flight must be 1..{min(MAX_IN_FLIGHT, args.block_count)} (at most --block-count, "
              f"as the initiator's transaction count)", file=sys.stderr)
        return 2
    if args.operations <= 0 or args.verify_every <= 0:
        print("--operations and --verify-every must be positive", file=sys.stderr)
        return 2
    pins = dict(LAYOUTS[args.layout])
    for spec in args.pin:
        name, _, cpu = spec.partition("=")
        for n in (TARGETS if name == "targets" else (name,)):
            if n not in PROCS:
                print(f"--pin: unknown process {n!r}", file=sys.stderr)
                return 2
            pins[n] = int(cpu)
    cpus = os.sched_getaffinity(0)
    if not set(pins.values()) <= cpus:
        print(f"--layout/--pin: CPU(s) {sorted(set(pins.values()) - cpus)} not available (have {sorted(cpus)})",
              file=sys.stderr)
        return 2
    cfg = Config(b, args.block_count, args.in_flight, args.operations, args.verify_every)
    r = run(cfg, pins, args.layout, args.timeout)
    if args.json:
        print(json.dumps(asdict(r)))
    else:
        print(describe(r))
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
