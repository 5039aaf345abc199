"""The backend contract: one ``typing.Protocol`` per DOCA object and per backend library module.

``core`` holds the DOCA core objects (devices, mmaps, buffers, progress
engine, ctx, task), ``rdma``, ``comch`` and
``engines`` the libraries. Nothing here is public API: the public
modules import these names privately.
"""
