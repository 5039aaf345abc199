"""The emulated transports' shared core: the per-process I/O thread, byte streams and listeners,
liveness (retry windows) and the same-host shared-memory rings.

:mod:`..rdma` and :mod:`..comch` build their protocols on it; it knows nothing of DOCA objects.
"""
