"""Byte formats of the storage apps: io and control messages, compressed blocks, ``.sbc`` files, addressing.

Pure data: nothing here imports ``doca_py`` objects or opens a connection (storage-apps-spec §3–§6).
"""
