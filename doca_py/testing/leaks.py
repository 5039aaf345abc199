"""The leak check of the test kit: the DOCA objects a side's function or a test left open. Part of
``doca_py.testing.pair``, which re-exports every name."""

from __future__ import annotations

import gc
import warnings
from typing import Any

__all__ = ["open_objects", "describe_leaks"]

_LEAKS_SHOWN = 20


def open_objects(exclude: tuple[Any, ...] = ()) -> list[Any]:
    """The DOCA objects of this process that are open (``close()`` not called), after a garbage
    collection, but those in *exclude* and borrowed wrappers (``from_handle``)."""
    from .._lifetime import DocaObject

    from ..errors import DocaError

    def held(o: DocaObject) -> bool:
        try:
            return not o._closed and not o.borrowed
        except DocaError:  # a freed Buf refuses every use: its descriptor went home, nothing leaks
            return False

    gc.collect()
    skip = {id(o) for o in exclude if o is not None}
    return [o for o in gc.get_objects() if isinstance(o, DocaObject) and id(o) not in skip and held(o)]


def describe_leaks(objs: list[Any], unclosed: list[str]) -> list[str]:
    """One line per leaked object (``repr``), and the ``unclosed X`` warnings of objects collected open."""
    lines = [f"  {o!r}" for o in objs[:_LEAKS_SHOWN]]
    if len(objs) > _LEAKS_SHOWN:
        lines.append(f"  ... and {len(objs) - _LEAKS_SHOWN} more")
    return lines + [f"  {w} (garbage collected without close())" for w in unclosed]


def _leaks(role: str, exclude: tuple[Any, ...], caught: list[warnings.WarningMessage]) -> str:
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
                and str(w.message).startswith("unclosed ")]
    objs = open_objects(exclude)
    if not objs and not unclosed:
        return ""
    return "\n".join([f"DocaLeakError: the {role} function returned with DOCA objects still open (strict mode; "
                      f"--doca-no-leak-check turns this check off):", *describe_leaks(objs, unclosed)])
