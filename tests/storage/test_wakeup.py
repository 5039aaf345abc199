"""``Wakeup``: a worker's sleep on its ``Pe`` ends on a completion, a wake-up or the timeout."""

from __future__ import annotations

import threading
import time

import doca_py as d

from apps.common.runtime.wakeup import Wakeup


def test_sleep_ends_on_set_from_another_thread_and_consumes_it() -> None:
    w = Wakeup()
    with d.Pe() as pe:
        try:
            start = time.monotonic()
            assert w.sleep(pe, 0.05) is False  # nothing: the whole timeout
            assert time.monotonic() - start >= 0.04
            threading.Timer(0.05, w.set).start()
            start = time.monotonic()
            assert w.sleep(pe, 10.0) is True
            assert time.monotonic() - start < 5.0
            assert w.sleep(pe, 0) is False  # consumed: the next sleep is not cut short
            w.set()
            w.set()
            assert w.sleep(None, 10.0) is True  # without a Pe (before a worker made one)
            assert w.sleep(None, 0) is False    # several sets are one wake-up
        finally:
            w.close()


def test_close_is_idempotent_and_set_after_close_is_harmless() -> None:
    w = Wakeup()
    fd = w.fileno()
    assert fd >= 0 and not w.closed
    w.close()
    w.close()
    assert w.closed and w.fileno() == -1
    w.set()  # a control thread racing the owner's close: no error
