"""``doca_py.testing``: test your DOCA application against an emulated BlueField and host.

Installing doca_py installs a pytest plugin (entry point ``pytest11: doca_py``, see
``doca_py.testing.plugin``) with the fixtures ``doca_dev``, ``doca_pe``, their factories,
``doca_pair`` (a host function and a DPU function in two processes), the options
``--doca-seed``, ``--doca-version``, ``--doca-strict/--doca-no-strict``, ``--doca-faults``,
``--doca-trace``, ``--doca-trace-events``, ``--doca-leak-check/--doca-no-leak-check``, ``--doca-impl`` (each
with an ini setting), the markers ``doca_versions`` and ``doca_faults``. ``DocaPair`` (whose sides start from a warm
zygote, ``doca_py.testing.warm``) and ``Knobs`` also work without pytest; ``check_trace`` checks a trace file
the kit or ``DOCA_PY_TRACE`` wrote (``doca_py.testing.tracecheck``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .knobs import VERSIONS, Knobs
    from .pair import DocaPair, PairError, PeerGone, Side, SideReport
    from .tracecheck import assert_valid_trace, check_trace

__all__ = ["DocaPair", "Side", "SideReport", "PairError", "PeerGone", "Knobs", "VERSIONS", "check_trace",
           "assert_valid_trace"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the plugin loads with every pytest session, most of which use none of this.
    if name in ("Knobs", "VERSIONS"):
        from . import knobs

        return getattr(knobs, name)
    if name in ("check_trace", "assert_valid_trace"):
        from . import tracecheck

        return getattr(tracecheck, name)
    if name in __all__:
        from . import pair

        return getattr(pair, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
