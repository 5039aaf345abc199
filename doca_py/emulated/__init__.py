"""The emulated backend: DOCA's semantics in software, for machines without DOCA.

One module per DOCA library, each implementing the handle protocols of
``doca_py._backend.protocols``. Real bytes move; differences from hardware are listed in
``docs/backends.md``.
"""
