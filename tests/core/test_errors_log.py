from __future__ import annotations

import logging

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py import log

from .helpers import local_mmap, rig


def test_every_code_has_a_registered_class_with_doca_name() -> None:
    for code in e.ErrorCode:
        if code == e.ErrorCode.SUCCESS:
            continue
        cls = e.lookup(code)
        exc = cls("detail")
        assert exc.code == code
        assert exc.name == f"DOCA_ERROR_{code.name}" or exc.name == code.c_name
        assert "detail" in str(exc)


def test_one_root_catches_every_doca_py_error() -> None:
    from doca_py.native.loader import DocaLibraryNotFound

    raised: list[BaseException] = [e.lookup(code)("x") for code in e.ErrorCode if code != e.ErrorCode.SUCCESS]
    raised += [e.DocaUsageError("closed"), e.DocaTypeError("f: x must be a Buf, not None"),
               e.DocaImplError("DOCA_PY_IMPL='x'"), DocaLibraryNotFound("common", [("/x", "no such directory")])]
    for exc in raised:
        with pytest.raises(e.DocaPyError):
            raise exc
    # usage errors carry no doca_error_t: they are not DocaErrors, whose .code stays a real code
    assert not issubclass(e.DocaUsageError, e.DocaError)
    assert {type(x).code for x in raised if isinstance(x, e.DocaError)} == set(e.ErrorCode) - {e.ErrorCode.SUCCESS}
    assert issubclass(e.DocaTypeError, TypeError) and issubclass(e.DocaImplError, ImportError)


@pytest.mark.parametrize(("code", "builtin"), [
    (e.ErrorCode.AGAIN, BlockingIOError), (e.ErrorCode.TIME_OUT, TimeoutError),
    (e.ErrorCode.INVALID_VALUE, ValueError), (e.ErrorCode.NO_MEMORY, MemoryError),
    (e.ErrorCode.NOT_FOUND, LookupError), (e.ErrorCode.NOT_SUPPORTED, NotImplementedError),
    (e.ErrorCode.NOT_PERMITTED, PermissionError), (e.ErrorCode.TOO_BIG, OverflowError),
])
def test_codes_are_builtin_exceptions(code: e.ErrorCode, builtin: type[BaseException]) -> None:
    with pytest.raises(builtin):
        e.raise_for(code, "x")


def test_check_success_is_silent_and_unknown_codes_map_to_unknown() -> None:
    e.check(0)
    with pytest.raises(e.DocaError) as info:
        e.raise_for(9999)
    assert info.value.code == 9999


def test_numbers_match_doca_error_t() -> None:
    assert e.ErrorCode.IN_PROGRESS == 26 and e.ErrorCode.BAD_CONFIG == 29 and e.ErrorCode.SKIPPED == 30
    assert e.error_name(18) == "DOCA_ERROR_BAD_STATE"
    # doca_error.h after 3.0
    assert e.ErrorCode.DEVICE_FATAL_ERROR == 31 and e.error_name(31) == "DOCA_ERROR_DEVICE_FATAL_ERROR"
    assert e.error_descr(31) == "Device experienced a fatal error"
    assert e.lookup(31) is e.DocaDeviceFatalError and issubclass(e.DocaDeviceFatalError, e.DocaError)


def test_a_code_the_table_lacks_is_named_by_its_number() -> None:
    code = e.ErrorCode(32)  # a newer DOCA's: never a ValueError
    assert code == 32 and str(code) == "32" and code.c_name == "DOCA_ERROR_32" and f"{code:d}" == "32"
    assert e.ErrorCode(32) not in list(e.ErrorCode) and len(e.ErrorCode) == 32
    exc = e.DocaError("x", code=32)
    assert str(exc) == "DOCA_ERROR_32: Unrecognized error code: x" and exc.code == 32
    with pytest.raises(ValueError):
        e.ErrorCode("IO_FAILED")  # not a number: still refused


@pytest.mark.skipif(d.impl != "emulated", reason="the emulator's engine is made to report an unknown status")
def test_an_unknown_task_status_never_raises_inside_a_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A status the table lacks reaches the error callback as an ``ErrorCode`` naming the number, and the
    task's exception is a ``DocaError`` with that code (it used to raise ValueError inside the callback)."""
    from doca_py.emulated.dma import EmuDmaTaskMemcpy

    monkeypatch.setattr(EmuDmaTaskMemcpy, "_execute", lambda self: 32)
    seen: list[tuple[e.ErrorCode, e.DocaError | None]] = []
    with rig(start=False) as r:
        r.dma.task_memcpy_set_conf(lambda *a: None, lambda t, u, c: seen.append((t.get_status(), t.exception())), 1)
        r.dma.start()
        mm = local_mmap(r.dev)
        base = mm.get_memrange()[0]
        src, dst = r.inv.buf_get_by_data(mm, base, 8), r.inv.buf_get_by_addr(mm, base + 4096, 64)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        while not seen:
            r.pe.progress()
        status, exc = seen[0]
        assert status == 32 and status.c_name == "DOCA_ERROR_32"
        assert type(exc) is e.DocaError and exc.code == 32
        assert str(exc) == "DOCA_ERROR_32: Unrecognized error code: DmaTaskMemcpy failed"
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_log_levels_map_both_ways() -> None:
    assert log.to_python_level(log.LogLevel.ERROR) == logging.ERROR
    assert log.to_python_level(log.LogLevel.TRACE) == log.TRACE
    assert log.to_doca_level(logging.DEBUG) == log.LogLevel.DEBUG
    assert log.parse_level("debug") == log.LogLevel.DEBUG
    assert log.parse_level("60") == log.LogLevel.DEBUG
    with pytest.raises(ValueError):
        log.parse_level("loud")
    assert logging.getLogger("doca_py") is log.logger
