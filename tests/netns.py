"""A second "host" for tests: a network namespace joined to this one by a veth pair."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def unavailable() -> str | None:
    """Why network namespaces cannot be created here (a skip reason), or ``None``."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs the ip(8) tool"
    probe = f"dpp{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@contextmanager
def veth_namespace(tag: str) -> Iterator[tuple[str, str]]:
    """A namespace and a /30 network: yields ``(namespace, "10.x.y")``; this side is ``.1``, the namespace ``.2``.

    *tag* (a short letter) keeps the names of concurrent callers apart.
    """
    pid = os.getpid()
    ns, va, vb = f"dp{tag}{pid % 100000}", f"d{tag}a{pid % 100000}", f"d{tag}b{pid % 100000}"
    net = f"10.{100 + (ord(tag[0]) + pid) % 150}.{pid % 250}"
    setup = [["ip", "netns", "add", ns], ["ip", "link", "add", va, "type", "veth", "peer", "name", vb],
             ["ip", "link", "set", vb, "netns", ns], ["ip", "addr", "add", f"{net}.1/30", "dev", va],
             ["ip", "link", "set", va, "up"],
             ["ip", "netns", "exec", ns, "ip", "addr", "add", f"{net}.2/30", "dev", vb],
             ["ip", "netns", "exec", ns, "ip", "link", "set", vb, "up"],
             ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"]]
    try:
        for c in setup:
            subprocess.run(c, check=True, capture_output=True)
        yield ns, net
    finally:
        subprocess.run(["ip", "link", "del", va], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
