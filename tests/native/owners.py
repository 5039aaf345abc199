"""What the backend object layer's tests give a task pool in place of the public layer's objects: the
backends call a completion ``cb(owner, owner.user_data, ctx_owner.user_data)`` straight (the fast lane)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

#: A pool's ``ctx_owner`` (its ``user_data`` is the callbacks' third argument).
NO_CTX = SimpleNamespace(user_data=None)


class Owner(str):
    """A task's ``owner``: a label that compares equal to its string, with the ``user_data`` a public task has."""

    user_data: Any = None
