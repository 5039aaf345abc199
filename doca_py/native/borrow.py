"""Wrapping a C object the wrapper does not own ("borrowed" handles).

``NativeX.from_ptr(ptr)`` wraps a pointer created elsewhere (C code, another
library, a handle passed in by the application). The wrapper works like one made by
``*_create``, but its ``close``/``destroy`` never calls DOCA's destroy: it only
drops the wrapper's own state, and whoever created the object destroys it.
``from_ptr(ptr, borrowed=False)`` adopts the pointer instead (the wrapper destroys it).

A borrowed ctx (``NativeDma.from_ptr`` …) of a ctx made by C code takes over the ctx
user data, which the state and connection trampolines need to find it (``union
doca_data`` carries the registry key). A borrowed view of a ctx another wrapper owns
leaves the user data alone: the owner keeps receiving those events.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..errors import DocaInvalidValue

__all__ = ["Borrowable", "non_null"]

#: ``typing.Self`` is 3.11+: a bound TypeVar says the same on 3.10.
_B = TypeVar("_B", bound="Borrowable")


def non_null(what: str, ptr: object) -> int:
    """*ptr* if it is a non-NULL address, else ``DocaInvalidValue`` naming *what*."""
    if not isinstance(ptr, int) or not ptr:
        raise DocaInvalidValue(f"{what} needs a non-NULL address, got {ptr!r}")
    return ptr


class Borrowable:
    """Mixin: the ``from_ptr`` constructor and the ``borrowed`` flag."""

    #: True when the C object belongs to someone else (never destroyed by the wrapper).
    borrowed: bool = False

    @classmethod
    def from_ptr(cls: type[_B], ptr: int, *, borrowed: bool = True) -> _B:
        """Wrap an existing ``struct doca_x *`` (an address); borrowed unless told otherwise."""
        non_null(f"{cls.__name__}.from_ptr", ptr)
        obj = cls.__new__(cls)
        obj.borrowed = borrowed  # before __init__: ctx set-up reads it
        init: Any = cls.__init__  # the subclass constructor taking (ptr)
        init(obj, ptr)
        return obj
