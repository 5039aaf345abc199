"""The emulated backend: DOCA's semantics in software, for machines without DOCA.

One module per DOCA library, each implementing the handle protocols of
:mod:`doca_py.abc`. Real bytes move; differences from hardware are listed in
``docs/backends.md``.
"""
