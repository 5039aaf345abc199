"""The fake libraries themselves: their error codes are DOCA's."""

from __future__ import annotations

import re

from doca_py.errors import ErrorCode

from .fakelib import SOURCE_DIR


def test_fake_error_codes_are_doca_error_t() -> None:
    header = (SOURCE_DIR / "fake.h").read_text()
    body = re.search(r"enum \{\s*(E_OK[^}]*)\}", header)
    assert body is not None
    codes = dict(re.findall(r"E_([A-Z_]+) = (\d+)", body.group(1)))
    names = {"OK": "SUCCESS", "INVALID": "INVALID_VALUE"}
    assert len(codes) > 10
    for name, value in codes.items():
        assert ErrorCode[names.get(name, name)] == int(value), name
