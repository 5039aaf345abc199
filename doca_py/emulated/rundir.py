"""The emulator's private runtime directory (sockets other local processes meet at).

``$XDG_RUNTIME_DIR/doca_py`` when that exists, else ``/tmp/doca_py-<uid>``; each
transport keeps a subdirectory. Every level is created mode 0700 and checked: it must
be ours, a real directory (not a symlink) and closed to other users.
"""

from __future__ import annotations

import os
import stat

from ..errors import DocaNotPermitted, DocaOperatingSystem

__all__ = ["private_dir"]


def private_dir(sub: str, override: str | None = None) -> str:
    """The directory ``<root>/<sub>`` (or *override* as given), created 0700 and checked."""
    if override:
        paths = [override]
    else:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        root = os.path.join(xdg, "doca_py") if xdg and os.path.isdir(xdg) else f"/tmp/doca_py-{os.getuid()}"
        paths = [root, os.path.join(root, sub)]
    for p in paths:
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise DocaOperatingSystem(f"cannot create the runtime directory {p}: {exc.strerror}") from None
        st = os.lstat(p)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise DocaNotPermitted(f"runtime directory {p} must be a directory owned by uid {os.getuid()} "
                                   f"with mode 0700 (it is {stat.filemode(st.st_mode)}, uid {st.st_uid})")
    return paths[-1]
