"""The leak check of the test kit: the DOCA objects a side's function or a test left open. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

__all__ = ["open_objects", "describe_leaks", "open_descendants", "collecting", "CollectedOpen"]

_LEAKS_SHOWN = 20


class CollectedOpen:
    """What the leak check knows of a DOCA object it found open among the garbage of a reference cycle: its
    type (the object is gone, released by its finalizer; its handle must not be touched)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}: open, reachable only through a reference cycle (garbage collected without close())>"


def _held(o: Any) -> bool:
    from ..errors import DocaError

    try:
        return not o._closed and not o._borrowed
    except DocaError:  # a freed Buf refuses every use: its descriptor went home, nothing leaks
        return False


def open_objects(exclude: tuple[Any, ...] = ()) -> list[Any]:
    """The DOCA objects of this process that are open (``close()`` not called), but those in *exclude* and
    borrowed wrappers (``from_handle``): those still reachable, and a ``CollectedOpen`` for each that only a
    reference cycle held (the garbage collection this makes finds them before they are freed)."""
    from .._lifetime import DocaObject

    # The collection keeps what it finds unreachable in gc.garbage instead of freeing it (each object's
    # finalizer has run by then: a DOCA object is released, its wrapper left to look at).
    flags, before = gc.get_debug(), len(gc.garbage)
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        gc.collect()
    finally:
        gc.set_debug(flags)
    garbage = gc.garbage[before:]
    del gc.garbage[before:]
    cyclic: list[Any] = [CollectedOpen(type(o).__name__) for o in garbage if isinstance(o, DocaObject) and _held(o)]
    del garbage
    gc.collect()  # frees what the first collection kept
    skip = {id(o) for o in exclude if o is not None}
    return [o for o in gc.get_objects() if isinstance(o, DocaObject) and id(o) not in skip and _held(o)] + cyclic


def open_descendants(roots: list[Any], exclude: list[Any]) -> list[str]:
    """``repr`` of every open DOCA object made on *roots* (devices, progress engines: their children,
    recursively) but *exclude*: what closing the roots would close silently."""
    out: list[str] = []
    seen = {id(o) for o in exclude}
    todo = list(roots)
    while todo:
        obj = todo.pop()
        for child in list(getattr(obj, "_children", ())):
            if id(child) in seen:
                continue
            seen.add(id(child))
            if _held(child):
                out.append(repr(child))
            todo.append(child)
    return out


def describe_leaks(objs: list[Any], unclosed: list[str]) -> list[str]:
    """One line per leaked object (``repr``), and the ``unclosed X`` warnings of objects collected open."""
    lines = [f"  {o!r}" for o in objs[:_LEAKS_SHOWN]]
    if len(objs) > _LEAKS_SHOWN:
        lines.append(f"  ... and {len(objs) - _LEAKS_SHOWN} more")
    return lines + [f"  {w} (garbage collected without close())" for w in unclosed]


@contextlib.contextmanager
def collecting() -> Iterator[list[str]]:
    """``unclosed <Class>`` for every DOCA object garbage collected without ``close()`` meanwhile, whatever its
    type (only top-level objects warn ``ResourceWarning``; the warning filters may hide those)."""
    from .. import _lifetime

    names: list[str] = []
    saved = _lifetime.collected_open
    _lifetime.collected_open = lambda name: names.append(f"unclosed {name}")
    try:
        yield names
    finally:
        _lifetime.collected_open = saved


def _leaks(role: str, exclude: tuple[Any, ...], collected: list[str]) -> str:
    unclosed = list(collected)  # before open_objects: its collection finalizes cycles, which it lists itself
    objs = open_objects(exclude)
    if not objs and not unclosed:
        return ""
    return "\n".join([f"DocaLeakError: the {role} function returned with DOCA objects still open (strict mode; "
                      f"--doca-no-leak-check turns this check off):", *describe_leaks(objs, unclosed)])
