"""The ``main`` skeleton the bridges share: banner, configuration block, Ctrl-C, exit status.

:func:`run_app` sets logging up, prints the version line, the app's extra banner lines and
its configuration block (:func:`print_config`), then runs the app's service with an abort
flag that SIGINT/SIGTERM set (:func:`~apps.common.runtime.signals.abort_on_signals`); failures end
as ``EXCEPTION: ...`` and status 1 (:func:`~apps.common.cli.argp.run_main`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from apps.common.cli.argp import run_main, setup_logging, version_text
from apps.common.cli.config import ServiceConfig
from apps.common.runtime.live_stats import live_stats
from apps.common.runtime.signals import abort_on_signals

__all__ = ["emit", "print_config", "run_app"]

C = TypeVar("C", bound=ServiceConfig)


def emit(text: str) -> None:
    """Print *text* at once (the output is read line by line by supervisors and tests)."""
    print(text, flush=True)


def print_config(title: str, fields: Sequence[tuple[str, str]]) -> None:
    """``title: {``, one ``\\tname : value`` line per field (commas between), ``}``."""
    emit(f"{title}: {{")
    for i, (name, value) in enumerate(fields):
        emit(f"\t{name} : {value}" + ("," if i < len(fields) - 1 else ""))
    emit("}")


def run_app(config: C, app_name: str, banner: Sequence[str], show_config: Callable[[C], None],
            run_service: Callable[[C, threading.Event, Callable[[str], None]], int]) -> int:
    """Run *run_service* for *config* under the shared main skeleton; its exit status."""
    setup_logging(config)
    abort = threading.Event()

    def run() -> int:
        emit(version_text(app_name))
        for line in banner:
            emit(line)
        show_config(config)
        with live_stats(app_name, config.stats_interval, config.stats_format):
            return run_service(config, abort, emit)

    with abort_on_signals(abort):
        return run_main(run)
