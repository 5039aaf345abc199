"""The examples in the storage modules' docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["apps.storage.control", "apps.storage.channel", "apps.storage.addressing",
                                  "apps.storage.manpages"])
def test_module_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0
