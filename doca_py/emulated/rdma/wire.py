"""The emulated rdma wire format: frame header, connection blob and the handshake of a fresh stream."""

from __future__ import annotations

import ipaddress
import os
import itertools
import socket
import struct
import threading
import time
import zlib
from typing import Any

from ...errors import (
    DocaConnectionAborted,
    DocaError,
)
from ..rundir import private_dir
from ..transport.shmring import recv_fds
from ..transport.stream import Listener, Stream
from .config import cfg

#: ``type u8 | flags u8 | aux u16 | length u32 | a u64 | b u64`` (little endian); *length*
#: bytes of payload follow.
HDR = struct.Struct("<BBHIQQ")
HDR_SIZE = HDR.size
ZERO_HDR = bytes(HDR_SIZE)


def put_frame(out: bytearray, typ: int, flags: int, aux: int, length: int, a: int, b: int) -> None:
    """Append one header to *out* without allocating."""
    pos = len(out)
    out += ZERO_HDR
    HDR.pack_into(out, pos, typ, flags, aux, length, a, b)


# -- connection blob --------------------------------------------------------------------------
# magic | version u16 | transport u8 | family u8 | host 16B | pid u32 | ctx serial u32 | conn id u32
# | key 16B | perms u32 | rnr window ms u32 | ip 16B | port u16 | crc32 u32
_MAGIC = b"DOCAPYRC"
VERSION = 1
_CONN = struct.Struct("<8sHBB16sIII16sII16sH")
_CRC = struct.Struct("<I")
BLOB_SIZE = _CONN.size + _CRC.size


class ConnBlob:
    """The decoded contents of a connection blob."""

    __slots__ = ("transport", "host", "pid", "serial", "conn_id", "key", "perms", "rnr_ms", "ip", "port")

    def __init__(self, transport: int, host: bytes, pid: int, serial: int, conn_id: int, key: bytes, perms: int,
                 rnr_ms: int, ip: str, port: int) -> None:
        self.transport, self.host, self.pid, self.serial = transport, host, pid, serial
        self.conn_id, self.key, self.perms, self.rnr_ms, self.ip, self.port = conn_id, key, perms, rnr_ms, ip, port


def pack_ip(ip: str) -> tuple[int, bytes]:
    addr = ipaddress.ip_address(ip)
    return (6 if addr.version == 6 else 4), addr.packed.ljust(16, b"\0")


def unpack_ip(family: int, raw: bytes) -> str:
    if family == 4:
        return str(ipaddress.IPv4Address(raw[:4]))
    if family == 6:
        return str(ipaddress.IPv6Address(raw))
    raise ValueError(f"address family {family}")


def encode_blob(b: ConnBlob) -> bytes:
    family, ip = pack_ip(b.ip)
    body = _CONN.pack(_MAGIC, VERSION, b.transport, family, b.host, b.pid, b.serial, b.conn_id, b.key,
                      b.perms, b.rnr_ms, ip, b.port)
    return body + _CRC.pack(zlib.crc32(body))


def decode_blob(data: bytes) -> ConnBlob:
    """Parse a peer's connection blob; anything malformed is ``DocaConnectionAborted``."""
    if len(data) < 10 or data[:8] != _MAGIC:
        raise DocaConnectionAborted("not a doca_py rdma connection blob (bad magic or truncated)")
    (version,) = struct.unpack_from("<H", data, 8)
    if version != VERSION:
        raise DocaConnectionAborted(f"connection blob version {version}, this build reads version {VERSION}")
    if len(data) != BLOB_SIZE:
        raise DocaConnectionAborted(f"connection blob is {len(data)} bytes, expected {BLOB_SIZE}")
    body = data[:_CONN.size]
    if zlib.crc32(body) != _CRC.unpack_from(data, _CONN.size)[0]:
        raise DocaConnectionAborted("connection blob is corrupt (checksum mismatch)")
    _, _, transport, family, host, pid, serial, conn_id, key, perms, rnr_ms, ip, port = _CONN.unpack(body)
    try:
        ip_s = unpack_ip(family, ip)
    except ValueError:
        raise DocaConnectionAborted("connection blob names no valid address") from None
    if port == 0 or transport != 0:
        raise DocaConnectionAborted("connection blob names no port or an unsupported transport")
    return ConnBlob(transport, host, pid, serial, conn_id, key, perms, rnr_ms, ip_s, port)


# -- handshake on a fresh stream ---------------------------------------------------------------
# magic | version u16 | kind u8 | 0 | target key | sender key | sender host | pid | perms | rnr ms | conn id
# | ip 16B | port u16 | family u8 | 0
HELLO_MAGIC = b"DOCAPYRH"
HELLO = struct.Struct("<8sHBx16s16s16sIIII16sHBx")
REPLY_MAGIC = b"DOCAPYRR"
REPLY = struct.Struct("<8sHxxI16sIII")  # magic | version | status | host | pid | perms | rnr ms
K_CONNECT, K_CM_REQUEST = 0, 1


serials = itertools.count(1)
#: Peer keys this process has already connected to: a replayed blob is refused.
used_keys: set[bytes] = set()
used_lock = threading.Lock()


def advertised(listener: Listener) -> str:
    ip = listener.addr[0]
    if ip in ("0.0.0.0", "::"):
        return cfg.advertise_addr or ("127.0.0.1" if ip == "0.0.0.0" else "::1")
    return ip


def drop_data(st: Stream) -> None:
    st.rpos = st.rend


class Unreachable(Exception):
    """The peer's Unix listener cannot be reached (another user, gone): use TCP."""


def dial_peer(addr: tuple[str, int], hello: bytes, timeout: float,
              unix: str = "") -> tuple[socket.socket, tuple[Any, ...], list[int]]:
    """:func:`exchange` over the Unix socket *unix* when given and reachable, else over TCP to *addr*."""
    if unix:
        try:
            return exchange(addr, hello, timeout, unix)
        except Unreachable:
            pass
    return exchange(addr, hello, timeout)


def exchange(addr: tuple[str, int], hello: bytes, timeout: float,
              unix: str = "") -> tuple[socket.socket, tuple[Any, ...], list[int]]:
    """Dial *addr* (or the Unix socket *unix*: :class:`Unreachable` if it cannot be), send the
    handshake, read the reply (bounded by *timeout*) and the descriptors it carries."""
    deadline = time.monotonic() + timeout
    fds: list[int] = []
    if unix:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.settimeout(timeout)
            sock.connect(unix)
        except OSError as exc:
            sock.close()
            raise Unreachable(str(exc)) from None
    else:
        try:
            sock = socket.create_connection(addr, timeout=timeout)
        except OSError as exc:
            raise DocaConnectionAborted(f"cannot reach the peer at {addr[0]}:{addr[1]}: {exc}") from None
    try:
        sock.sendall(hello)
        buf = bytearray()
        while len(buf) < REPLY.size:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            if unix:
                chunk, got = recv_fds(sock, REPLY.size - len(buf), 2)
                fds += got
            else:
                chunk = sock.recv(REPLY.size - len(buf))
            if not chunk:
                raise DocaConnectionAborted("the peer closed the connection during the handshake")
            buf += chunk
    except OSError as exc:
        close_all(sock, fds)
        raise DocaConnectionAborted(f"handshake with {unix or addr[0]}:{addr[1]} failed: {exc}") from None
    except DocaError:
        close_all(sock, fds)
        raise
    fields = REPLY.unpack(bytes(buf))
    if fields[0] != REPLY_MAGIC or fields[1] != VERSION:
        close_all(sock, fds)
        raise DocaConnectionAborted("the peer is not a compatible doca_py rdma endpoint")
    return sock, fields, fds


def close_all(sock: socket.socket, fds: list[int]) -> None:
    sock.close()
    for fd in fds:
        os.close(fd)


def unix_path(pid: int, serial: int) -> str:
    """The Unix listener of rdma ctx *serial* of process *pid* (same-host peers dial it)."""
    return os.path.join(private_dir("rdma", os.environ.get("DOCA_PY_RDMA_DIR")), f"{pid}-{serial}.sock")
