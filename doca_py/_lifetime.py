"""Lifetime rules shared by every DOCA object (ARCHITECTURE §2).

* every object is a context manager with an idempotent ``close()``;
* children hold their parent strongly, parents keep a weak set of children and
  close them first, so teardown order is always DOCA's (tasks before ctx, ctx
  before pe, bufs before mmap, mmap before dev);
* an object that is garbage collected without ``close()`` is released by a
  ``weakref.finalize`` recipe, which does nothing in a forked child or at
  interpreter shutdown; top-level objects also warn ``ResourceWarning``;
* ``obj.handle`` is the backend handle (the C address as an ``int`` on the native backend,
  the backend object on the emulated one) and ``Cls.from_handle(h, …)`` wraps an existing
  handle *without* ownership: closing such a "borrowed" wrapper closes its Python
  children but never destroys the DOCA object, whose creator still owns it;
* ``repr()`` names the class, says open or closed and, for an open object, the
  facts of `DocaObject._repr_facts` (a closed object's handle is never
  touched: on the native backend it is freed memory).
"""

from __future__ import annotations

import enum
import os
import re
import sys
import warnings
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any

from ._compat import add_note
from .errors import DocaUsageError

__all__ = ["DocaObject", "raw_handle"]


def raw_handle(h: object) -> object:
    """The public face of backend handle *h*: the C address (``ptr``) of a native handle, else *h* itself."""
    ptr = getattr(h, "ptr", None)
    return ptr if isinstance(ptr, int) else h


collected_open: Callable[[str], object] | None = None
"""If set, called with the class name of every DOCA object garbage collected without ``close()`` (the test
kit's leak check, whichever type it is: only top-level objects warn)."""


def _release(pid: int, name: str, warn: bool, release: Callable[[], object]) -> None:
    if os.getpid() != pid or sys.is_finalizing():
        return
    try:
        release()
    except Exception:  # noqa: BLE001 - nothing sensible to do in a finalizer
        pass
    hook = collected_open
    if hook is not None:
        hook(name)
    if warn:
        warnings.warn(f"unclosed {name}", ResourceWarning, stacklevel=1)


_ALSO = "also failed while closing: "


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    rule = getattr(exc, "doca_rule", None)
    return f"{type(exc).__name__}: strict mode: {rule}" if rule else text


def _rule_key(exc: BaseException) -> str | None:
    """The strict-mode rule *exc* reports, its counts left out (one buffer used by 1 task, another by 12)."""
    rule = getattr(exc, "doca_rule", None)
    return re.sub(r"\d+", "N", rule) if rule else None


def _summarize(errors: list[BaseException]) -> list[str]:
    """Notes for the first of *errors*: the others, one line per kind (a strict-mode rule broken by
    many children — buffers still used by tasks in flight — is one line with a count)."""
    first = errors[0]
    key0 = _rule_key(first)
    counts: dict[str, list[BaseException]] = {}
    for other in errors[1:]:
        counts.setdefault(_rule_key(other) or repr(other), []).append(other)
    notes = []
    for key, same in counts.items():
        if key0 is not None and key == key0:
            notes.append(_ALSO + f"{len(same)} more like it")
        elif len(same) == 1:
            notes.append(_ALSO + _first_line(same[0]))
        else:
            notes.append(_ALSO + f"{len(same)} x {_first_line(same[0])}")
    return notes


class DocaObject:
    """Base of every Python object that owns a DOCA handle."""

    # Top-level objects (Pe, Dev, Mmap, BufInventory) warn when leaked.
    _warn_unclosed: bool = False
    # Wrapping a handle someone else owns (from_handle): close() never destroys it.
    _borrowed: bool = False

    def __init__(self) -> None:
        self._closed = False
        self._children: weakref.WeakSet[DocaObject] = weakref.WeakSet()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def _arm_finalizer(self, release: Callable[[], object]) -> None:
        """Register what to do if the object is collected without ``close()``.

        *release* must not reference ``self`` (it would keep it alive).
        """
        self._finalizer = weakref.finalize(
            self, _release, os.getpid(), type(self).__name__, self._warn_unclosed, release
        )

    def _borrow(self) -> None:
        """Make this wrapper a borrower: no finalizer, and ``close`` leaves the DOCA object alone."""
        self._borrowed = True
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    @property
    def handle(self) -> object:
        """Python-only: the backend handle this object wraps: on the native backend the address of the C object
        (``struct doca_<x> *`` as an ``int``), on the emulated backend the backend object itself.

        Valid while this object is open; ownership stays with this object (use the class's
        ``from_handle`` to wrap it again without ownership). ``None`` for a pure-Python object
        (``RdmaAddr``).
        """
        h: object = getattr(self, "_h", None)  # subclasses set ``_h``, typed with its protocol
        return raw_handle(h)

    @property
    def borrowed(self) -> bool:
        """Python-only: whether this wrapper was made by ``from_handle`` (it never destroys the DOCA object)."""
        return self._borrowed

    def _adopt(self, child: DocaObject) -> None:
        self._check_open()
        self._children.add(child)

    def _check_open(self) -> None:
        if self._closed:
            raise DocaUsageError(f"{type(self).__name__} is closed")

    @property
    def closed(self) -> bool:
        """Python-only: whether `close` has run."""
        return self._closed

    def close(self) -> None:
        """``doca_<object>_destroy`` / ``doca_dev_close`` / ``doca_dev_rep_close``: release the DOCA object
        (devices and representors are closed), closing every child first. Idempotent."""
        if self._closed:
            return
        errors: list[BaseException] = []
        for child in list(self._children):
            try:
                child.close()
            except Exception as exc:  # keep closing the others
                errors.append(exc)
        try:
            if self._borrowed:
                self._close_borrowed()
            else:
                self._close()
        except Exception as exc:
            errors.append(exc)
        if errors:
            first = errors[0]
            for note in _summarize(errors):
                add_note(first, note)
            raise first
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()

    def _close(self) -> None:
        """Backend release; runs once, after the children are closed."""

    def _close_borrowed(self) -> None:
        """What ``close`` does instead of `_close` for a borrowed wrapper (Python-side state only)."""

    def _repr_facts(self) -> list[str]:
        """What ``repr()`` shows of an open object, as ``name=value`` strings.

        Subclasses extend it (calling ``super()``); the default shows the public
        scalar attributes (``name='…'``, ``k_in=4`` …). It may raise: ``repr()``
        then says so instead of failing.
        """
        facts = []
        for key, value in vars(self).items():
            if key.startswith("_") or key == "user_data" or not isinstance(value, (str, int, float)):
                continue
            facts.append(f"{key}={value.name if isinstance(value, enum.Enum) else repr(value)}")
        return facts

    def __repr__(self) -> str:
        parts = [type(self).__name__]
        if vars(self).get("_closed", False):
            parts.append("closed")
        else:
            parts.append("open")
            try:
                parts += self._repr_facts()
            except Exception as exc:  # noqa: BLE001 - repr() must not raise
                parts.append(f"({type(exc).__name__} while describing)")
        return f"<{' '.join(parts)}>"

    def __enter__(self) -> DocaObject:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        # The block failed: its exception is the news. What closing then finds (typically the block's
        # tasks still in flight) follows it as one line instead of replacing it.
        try:
            self.close()
        except Exception as close_exc:  # noqa: BLE001 - reported on the block's exception
            more = [n.removeprefix(_ALSO) for n in getattr(close_exc, "__notes__", ()) if n.startswith(_ALSO)]
            note = f"then closing {type(self).__name__} failed: " + "; ".join([_first_line(close_exc), *more])
            if note not in getattr(exc, "__notes__", ()):  # an outer block closing the same object again
                add_note(exc, note)
