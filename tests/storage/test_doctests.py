"""The examples in the storage modules' docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["apps.storage.wire.control", "apps.storage.channels.control_channel", "apps.storage.wire.addressing",
                                  "apps.common.cli.manpages", "apps.storage.wire.io_message",
                                  "apps.zero_copy.forwarding"])
def test_module_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0
