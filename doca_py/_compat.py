"""What Python 3.11 added that doca_py uses, for Python 3.10 (the DOCA 2.x BlueField images' Python).

On 3.11+ these are the standard library's own; on 3.10 they are small stand-ins that behave the
same for doca_py's uses.
"""

from __future__ import annotations

import enum
import sys

__all__ = ["StrEnum", "add_note"]

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:
    class StrEnum(str, enum.Enum):
        """``enum.StrEnum``: members are their str values, and ``str()``/``format()`` give the value."""

        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, format_spec: str) -> str:
            return str.__format__(self, format_spec)


def add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)``. On 3.10 the note is kept in ``exc.__notes__`` all the same (code and
    tests that read it see it), but 3.10's traceback printing does not show notes."""
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:
        notes = getattr(exc, "__notes__", None)
        if not isinstance(notes, list):
            notes = []
            exc.__notes__ = notes  # type: ignore[attr-defined]
        notes.append(note)
