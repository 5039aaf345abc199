"""The emulated comch wire format and rendezvous: frame header and types, server socket paths, name locks.

A comch server listens on a Unix-domain stream socket in a private runtime directory,
named from the host PCI function it serves and a hash of its name; a client with the
same PCI address and name connects to it. The byte stream carries length-prefixed
frames (:data:`HDR`), many per system call.

The shared I/O thread (:mod:`..transport.reactor`) owns one selector for every socket of the process:
it accepts, reads and parses frames, writes what a socket refused earlier, and posts
completions and events to the progress engine that owns them. It never runs user code.

Producer data is credit-based, as on hardware, where a producer send is refused at submit
(``DOCA_ERROR_AGAIN``) while the remote consumer has no receive posted: a consumer side
announces each receive it posts with a CREDIT frame, and the producer side spends one
credit per DATA frame (see :mod:`.connection`).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import struct

from ...errors import DocaAlreadyExist, DocaInvalidValue
from ..rundir import private_dir

__all__ = [
    "HDR", "HDR_SIZE", "MAGIC", "VERSION", "T_HELLO", "T_WELCOME", "T_MSG", "T_CONSUMER_NEW",
    "T_CONSUMER_GONE", "T_DATA", "T_ACK", "T_CREDIT", "runtime_dir", "socket_path", "NameLock", "is_refused",
]

#: ``type u8 | small u8 | aux u16 | length u32 | a u32 | b u32`` (little endian), then *length*
#: payload bytes. ``small`` is a status (WELCOME, ACK) or the immediate-data length (DATA).
HDR = struct.Struct("<BBHIII")
HDR_SIZE = HDR.size
MAGIC = 0x68636D63  # "cmch"
VERSION = 2  # 2: receives are announced with CREDIT frames

T_HELLO = 1  # client → server: a=MAGIC, aux=VERSION, b=client max_msg_size, payload=server name
T_WELCOME = 2  # server → client: a=MAGIC, small=status, b=server max_msg_size
T_MSG = 3  # control message: payload = message
T_CONSUMER_NEW = 4  # a=consumer id (of the sender's side)
T_CONSUMER_GONE = 5  # a=consumer id
T_DATA = 6  # producer → consumer: a=consumer id, b=producer id, small=imm len, payload=imm+data
T_ACK = 7  # consumer side → producer side: small=status, a=count of DATA frames acknowledged
T_CREDIT = 8  # consumer side → producer side: a=consumer id, b=receives newly posted (> 0)


# -- rendezvous -------------------------------------------------------------------------------------
def runtime_dir() -> str:
    """The private directory holding the server sockets (created mode 0700).

    ``$DOCA_PY_COMCH_DIR`` if set, else ``$XDG_RUNTIME_DIR/doca_py/comch``, else
    ``/tmp/doca_py-<uid>/comch``. An existing directory must be ours, not a symlink,
    and closed to other users.
    """
    return private_dir("comch", os.environ.get("DOCA_PY_COMCH_DIR"))


def socket_path(pci_addr: str, name: str) -> str:
    """Socket of the server *name* on the host function *pci_addr* (name hashed: any bytes are safe)."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:40]
    path = os.path.join(runtime_dir(), f"{pci_addr.lower()}-{digest}.sock")
    if len(path.encode()) >= 108:
        raise DocaInvalidValue(f"comch socket path {path!r} is too long for a Unix socket; "
                               "set DOCA_PY_COMCH_DIR to a shorter directory")
    return path


class NameLock:
    """An ``flock`` on ``<socket>.lock`` held for a server's lifetime.

    The kernel drops it when the process dies, so a socket file whose lock can be
    taken belongs to a dead server and may be replaced.
    """

    def __init__(self, sock_path: str, name: str) -> None:
        self.path = sock_path + ".lock"
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise DocaAlreadyExist(f"a comch server named {name!r} is already running on this device") from None
            except BaseException:
                os.close(fd)
                raise
            # Whoever held it may have unlinked the file after we opened it: lock the live file.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return
            os.close(fd)

    def release(self, sock_path: str) -> None:
        """Remove the socket and lock files, then drop the lock."""
        for p in (sock_path, self.path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        os.close(self.fd)
        self.fd = -1


def is_refused(exc: OSError) -> bool:
    """Whether a connect error means "nobody listens there (yet)"."""
    return exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.EAGAIN, errno.ENOTDIR)
