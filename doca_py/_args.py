"""Argument types at the public layer: the wrong type raises [`DocaTypeError`][doca_py.errors.DocaTypeError]
naming the method and the parameter, where it would otherwise surface as an ``AttributeError`` from
deep inside a backend.

Callers test with ``isinstance`` inline (the only cost on a per-IO path) and call these helpers
only to build the error::

    if not isinstance(src, Buf):
        raise wrong_type("Dma.task_memcpy_alloc_init", Buf, src=src)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import CodeType

from .errors import DocaTypeError

__all__ = ["wrong_type", "check_str", "expect", "caller"]

_NONE = type(None)


def _names(expected: type | tuple[type, ...]) -> str:
    types = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join("None" if t is _NONE else t.__name__ for t in types)


def wrong_type(where: str, expected: type | tuple[type, ...], **params: object) -> DocaTypeError:
    """The error for the first of *params* (name=value, in order) that is not an *expected* instance."""
    for name, value in params.items():
        if not isinstance(value, expected):
            return DocaTypeError(f"{where}: {name} must be {_names(expected)}, not {type(value).__name__}")
    # Every value has the type: the caller's test and ours disagree, which is a bug in the caller.
    raise AssertionError(f"{where}: no argument of the wrong type among {', '.join(params)}")


def check_str(where: str, name: str, value: object) -> str:
    """*value* if it is a ``str``, else the error naming *name*."""
    if not isinstance(value, str):
        raise wrong_type(where, str, **{name: value})
    return value


def expect(where: str, expected: type | tuple[type, ...], **params: object) -> None:
    """Raise the error of `wrong_type` unless every one of *params* is an *expected* instance (for calls off
    the per-IO path; those test inline)."""
    for value in params.values():
        if not isinstance(value, expected):
            raise wrong_type(where, expected, **params)


def caller(depth: int = 2) -> str:
    """The qualified name of the function *depth* frames up (1: the one calling `caller`), to name the
    public method in an error raised by a helper it shares with others (on the error path only)."""
    frame = sys._getframe(depth)
    code = frame.f_code
    owner = frame.f_locals.get("self")
    if owner is not None:  # a method: name it by the public class, not by the mixin that defines it
        return f"{type(owner).__name__}.{code.co_name}"
    if sys.version_info >= (3, 11):
        name = code.co_qualname
    else:
        name = _qualname_310(code, frame.f_locals, frame.f_globals)
    # A static method of a mixin: the public class it is part of (a mixin's ``_public_name``).
    cls_name, _, func = name.rpartition(".")
    public = getattr(frame.f_globals.get(cls_name), "_public_name", None)
    return f"{public}.{func}" if public else name


def _qualname_310(code: CodeType, local_vars: Mapping[str, object],
                  global_vars: Mapping[str, object] | None = None) -> str:
    """``code.co_qualname`` on 3.10 (which lacks it): the function of *code* found on the class of the
    frame's ``self`` or ``cls`` (its MRO: the method may be inherited), else on a class of the frame's
    module (static methods), else the bare name."""
    owner = local_vars.get("self", local_vars.get("cls"))
    classes: list[type] = []
    if owner is not None:
        classes += (owner if isinstance(owner, type) else type(owner)).__mro__
    if global_vars is not None:
        classes += [v for v in global_vars.values() if isinstance(v, type)]
    for klass in classes:
        for attr in vars(klass).values():
            func = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
            if getattr(func, "__code__", None) is code:
                return str(getattr(func, "__qualname__", code.co_name))
    return code.co_name
