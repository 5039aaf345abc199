"""doca_py._compat and the 3.10 path of _args.caller: the same answers as 3.11's own, on every Python."""

from __future__ import annotations

import sys
from typing import Any

from doca_py._args import _qualname_310, caller
from doca_py._compat import StrEnum, add_note
from doca_py.compress import CompressTaskType


class _Base:
    def method(self) -> str:
        return _qualname_310(sys._getframe().f_code, {"self": self})

    @property
    def prop(self) -> str:
        return _qualname_310(sys._getframe().f_code, {"self": self})

    @classmethod
    def klass(cls) -> str:
        return _qualname_310(sys._getframe().f_code, {"cls": cls})

    def via_caller(self) -> str:
        return caller(1)


class _Derived(_Base):
    pass


def test_qualname_found_on_the_defining_class_of_an_inherited_method() -> None:
    d = _Derived()
    assert d.method() == "_Base.method"
    assert d.prop == "_Base.prop"
    assert _Derived.klass() == "_Base.klass"
    # caller() names a method by the instance's class (the public one, not the mixin that defines it)
    assert d.via_caller() == "_Derived.via_caller"


class _Static:
    @staticmethod
    def query() -> str:
        return _qualname_310(sys._getframe().f_code, {}, globals())


def test_qualname_of_a_static_method_is_found_on_its_module_class() -> None:
    assert _Static.query() == "_Static.query"


def test_qualname_of_a_plain_function_is_its_name() -> None:
    def plain() -> str:
        return _qualname_310(sys._getframe().f_code, {})

    assert plain() == "plain"


def test_str_enum_members_are_their_values() -> None:
    class Colour(StrEnum):
        RED = "red"

    assert Colour.RED == "red" and str(Colour.RED) == "red" and f"{Colour.RED:>5}" == "  red"
    assert str(CompressTaskType.DECOMPRESS_DEFLATE) == "decompress_deflate"


def test_combined_flags_print_their_bit_names() -> None:
    from doca_py.types import AccessFlag

    assert str(AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_WRITE) == "LOCAL_READ_WRITE|PCI_READ_WRITE"


def test_add_note_keeps_every_note_in_order() -> None:
    exc: Any = ValueError("boom")
    add_note(exc, "first")
    add_note(exc, "second")
    assert exc.__notes__ == ["first", "second"]
