"""What every application in ``apps`` shares, as NVIDIA keeps it in ``applications/common``.

* `.cli` — DOCA-argp-style flags and ``--json`` files (`.cli.argp`), the configuration bases and
  shared field types (`.cli.config`; each app's own model is in its ``config.py``), usage errors
  (`.cli.usage`) and man pages (`.cli.manpages`);
* `.runtime` — what the processes share at run time: the worker-thread base and its sleep on the
  ``Pe`` (`.runtime.worker_thread`, `.runtime.wakeup`), signal handling, device opening, statistics
  and live statistics, the retry log of a reconnecting channel;
* `.comch_channel` and `.comch_app` — the comch client/server channel and the ``main`` skeleton of the
  comch applications (File Compression, Secure Channel);
* `.errors` — the exceptions that carry a ``doca_error_t`` code.

The rule, checked by ``tests/storage/test_app_layers.py``: `apps.common` imports no app; an app imports
`apps.common` (and, for the storage apps, `apps.storage`), never another app.
"""
